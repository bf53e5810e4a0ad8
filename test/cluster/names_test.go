package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/resources"
	"lin.dev/lin-operator/test/harness"
)

// longestName is as long as the schema allows an Installation's name to be.
var longestName = "l" + strings.Repeat("o", 38) + "g"

// TestTheLongestNameRunsEndToEnd runs an Installation with the longest name
// the schema allows, with storage and eleven shards (so that the shard index
// has two digits), until it is Ready, and checks the name of every object
// made for it against the limit Kubernetes sets for that name, and the
// label values the StatefulSet controller derives from them. The names of
// all 64 shards, at 1000 replicas, are checked from the rendering.
func TestTheLongestNameRunsEndToEnd(t *testing.T) {
	if len(longestName) != 40 {
		t.Fatalf("the name has %d characters", len(longestName))
	}
	ns, _ := setup(t, harness.Options{})
	const shards = 11
	harness.CreateVolumes(t, testEnv.Client, harness.Volumes{Prefix: ns, Count: shards})
	createReady(t, newInstallation(ns, longestName, shards, 1, linv1.ReclaimRetain))

	ctx := context.Background()
	var problems []string
	check := func(kind, name string, errs []string) {
		for _, e := range errs {
			problems = append(problems, fmt.Sprintf("%s %s: %s", kind, name, e))
		}
	}
	sets, err := testEnv.Client.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(sets.Items) != shards {
		t.Fatalf("StatefulSets: %d, %v; want %d", len(sets.Items), err, shards)
	}
	for _, s := range sets.Items {
		check("StatefulSet", s.Name, validation.IsDNS1123Label(s.Name))
		check("StatefulSet", s.Name, validation.IsValidLabelValue(s.Status.UpdateRevision))
	}
	pods, err := testEnv.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != shards {
		t.Fatalf("pods: %d, %v; want %d", len(pods.Items), err, shards)
	}
	for _, p := range pods.Items {
		check("Pod", p.Name, validation.IsDNS1123Label(p.Name))
		check("Pod", p.Name, validation.IsValidLabelValue(p.Labels[appsv1.ControllerRevisionHashLabelKey]))
		check("Pod", p.Name, validation.IsValidLabelValue(p.Labels[appsv1.StatefulSetPodNameLabel]))
	}
	claims, err := testEnv.Client.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(claims.Items) != shards {
		t.Fatalf("claims: %d, %v; want %d", len(claims.Items), err, shards)
	}
	for _, c := range claims.Items {
		check("PersistentVolumeClaim", c.Name, validation.IsDNS1123Subdomain(c.Name))
		if c.Status.Phase != "Bound" {
			problems = append(problems, fmt.Sprintf("claim %s is %s", c.Name, c.Status.Phase))
		}
	}
	services, err := testEnv.Client.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range services.Items {
		check("Service", s.Name, validation.IsDNS1035Label(s.Name))
	}

	inst := newInstallation(ns, longestName, 64, 1000, linv1.ReclaimRetain)
	for shard := range int32(64) {
		name := resources.StatefulSetName(inst, shard)
		check("StatefulSet", name, validation.IsDNS1123Label(name))
		// The StatefulSet controller labels each pod with the name of its
		// revision, the StatefulSet's name and a hash of up to 10 characters.
		check("StatefulSet", name, validation.IsValidLabelValue(name+"-"+strings.Repeat("h", 10)))
		last := fmt.Sprintf("%s-%d", name, *inst.Spec.Replicas-1)
		check("Pod", last, validation.IsDNS1123Label(last))
		check("PersistentVolumeClaim", "data-"+last, validation.IsDNS1123Subdomain("data-"+last))
	}
	if len(problems) > 0 {
		t.Errorf("%d names do not fit:\n%s", len(problems), strings.Join(problems, "\n"))
	}
	longest := ""
	for _, c := range claims.Items {
		if len(c.Name) > len(longest) {
			longest = c.Name
		}
	}
	t.Logf("%d StatefulSets, %d pods, %d claims, %d Services checked live; longest claim name %q (%d characters)",
		len(sets.Items), len(pods.Items), len(claims.Items), len(services.Items), longest, len(longest))
}
