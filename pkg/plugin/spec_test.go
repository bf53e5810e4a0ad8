package plugin

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/client/clientset/versioned/fake"
	"lin.dev/lin-operator/pkg/resources"
)

// TestARestartComesAfterTheOnesAskedBefore: a restart asked by a client
// whose clock is behind the last one's is stamped just after it, so that the
// operator, which applies the later time, restarts the pods.
func TestARestartComesAfterTheOnesAskedBefore(t *testing.T) {
	ahead := now.Add(time.Hour).UTC().Format(restartFormat)
	inst := &linv1.Installation{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "shop", Annotations: map[string]string{resources.ShardRestartAnnotation(1): ahead}},
		Spec:       linv1.InstallationSpec{Image: "app:1", Shards: ptr.To[int32](3)},
	}
	cl := Clients{Lin: fake.NewSimpleClientset(inst)}
	for _, tc := range []struct {
		shard *int32
		key   string
		// after is the time the new restart must follow.
		after time.Time
	}{
		{ptr.To[int32](0), resources.ShardRestartAnnotation(0), now},
		{ptr.To[int32](1), resources.ShardRestartAnnotation(1), now.Add(time.Hour)},
		{nil, resources.AnnotationRestartedAt, now.Add(time.Hour)},
	} {
		msg, err := Restart(t.Context(), cl, "shop", "demo", tc.shard, now)
		if err != nil {
			t.Fatal(err)
		}
		got, err := cl.Lin.LinV1().Installations("shop").Get(t.Context(), "demo", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		at, err := time.Parse(time.RFC3339Nano, got.Annotations[tc.key])
		if err != nil || at.Before(tc.after) || !strings.Contains(msg, tc.key+"="+got.Annotations[tc.key]) {
			t.Errorf("restart of %s: %s = %q (%v), want a time from %s on; said %q", tc.key, tc.key, got.Annotations[tc.key], err, tc.after, msg)
		}
	}
	if _, err := Restart(t.Context(), cl, "shop", "demo", ptr.To[int32](3), now); err == nil || !strings.Contains(err.Error(), "--shard 3: ") {
		t.Errorf("a restart of shard 3 of 3: %v, want an error naming --shard", err)
	}
}
