package resources_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/resources"
)

// TestRestartAnnotationsChangeOnlyTheShardsTheyName: with no restart
// annotation the template has none (an upgrade restarts nothing); the
// Installation's restart reaches every shard's template, a shard's restart
// that shard's alone, and the later of the two wins.
func TestRestartAnnotationsChangeOnlyTheShardsTheyName(t *testing.T) {
	threeShards := func(i *linv1.Installation) { i.Spec.Shards = ptr.To[int32](3) }
	plain := render(t, newInstallation(threeShards))
	for _, sts := range plain.StatefulSets {
		if _, ok := sts.Spec.Template.Annotations[resources.AnnotationRestartedAt]; ok {
			t.Errorf("%s: a template without a restart asked has %s", sts.Name, resources.AnnotationRestartedAt)
		}
	}
	const earlier, later = "2026-12-05T10:00:00Z", "2026-12-05T11:00:00Z"
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		// want is each shard's restarted-at in its template.
		want [3]string
	}{
		{"every shard", map[string]string{resources.AnnotationRestartedAt: earlier}, [3]string{earlier, earlier, earlier}},
		{"shard 1", map[string]string{resources.ShardRestartAnnotation(1): later}, [3]string{"", later, ""}},
		{"shard 1 after every shard", map[string]string{resources.AnnotationRestartedAt: earlier, resources.ShardRestartAnnotation(1): later},
			[3]string{earlier, later, earlier}},
		{"every shard after shard 1", map[string]string{resources.AnnotationRestartedAt: later, resources.ShardRestartAnnotation(1): earlier},
			[3]string{later, later, later}},
		// Compared as times: half a second later wins, though as a string
		// it sorts first ("." before "Z"); so does a time in another zone.
		{"times, not strings", map[string]string{resources.AnnotationRestartedAt: "2026-12-05T10:00:01Z",
			resources.ShardRestartAnnotation(1): "2026-12-05T10:00:01.500Z", resources.ShardRestartAnnotation(2): "2026-12-05T11:00:02+01:00"},
			[3]string{"2026-12-05T10:00:01Z", "2026-12-05T10:00:01.500Z", "2026-12-05T11:00:02+01:00"}},
		{"a value that is no time applies alone", map[string]string{resources.ShardRestartAnnotation(2): "now"}, [3]string{"", "", "now"}},
		{"a value that is no time loses to a time", map[string]string{resources.AnnotationRestartedAt: earlier, resources.ShardRestartAnnotation(2): "now"},
			[3]string{earlier, earlier, earlier}},
	} {
		c := render(t, newInstallation(threeShards, func(i *linv1.Installation) { i.Annotations = tc.annotations }))
		for s, sts := range c.StatefulSets {
			got := sts.Spec.Template.Annotations[resources.AnnotationRestartedAt]
			if got != tc.want[s] {
				t.Errorf("%s: shard %d restarted-at %q, want %q", tc.name, s, got, tc.want[s])
			}
			if tc.want[s] == "" && !equality.Semantic.DeepEqual(sts.Spec.Template, plain.StatefulSets[s].Spec.Template) {
				t.Errorf("%s: shard %d's template changed, though no restart names it", tc.name, s)
			}
		}
	}
}
