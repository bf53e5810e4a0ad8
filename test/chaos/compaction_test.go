//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/client/clientset/versioned"
	"lin.dev/lin-operator/test/env"
	"lin.dev/lin-operator/test/harness"
)

// watchedResources are what the operator's informers list and watch.
var watchedResources = append([]string{"installations"}, childResources...)

// TestEtcdCompactionMakesTheInformersRelist cuts the operator off the API
// server, changes and deletes things meanwhile, compacts etcd past every
// resourceVersion the operator's informers hold, and heals the cut, twice:
// each time each informer must relist, each whose objects changed after its
// watch was answered "too old", and the operator converge, in the same process. A first cut without compaction
// shows that the cut alone makes no informer relist. No Installation may
// report a ResourceConflict meanwhile: what it meets after a cut is its own.
// The API server runs without its watch cache, so that watches are served by
// etcd and its compaction is what makes a resourceVersion too old.
func TestEtcdCompactionMakesTheInformersRelist(t *testing.T) {
	e := env.StartForTest(t, env.Options{Mode: env.Cluster, ExtraArgs: map[string][]string{
		"kube-apiserver": {"--watch-cache=false"},
	}})
	lc := versioned.NewForConfigOrDie(e.Config)
	ns := harness.Namespace(t, e.Client)
	guardPVCs(t, e.Client, lc, ns)
	conflicts := watchConflicts(t, e.Client, lc, ns)
	harness.CreateVolumes(t, e.Client, harness.Volumes{Prefix: ns, Count: 20})
	px := startProxy(t, strings.TrimPrefix(e.Config.Host, "https://"))
	log := newWatchLog()
	cfg := rest.CopyConfig(e.Config)
	cfg.Host = "https://" + px.addr
	cfg.Wrap(log.wrap)
	harness.StartOperator(t, cfg, harness.Options{Namespaces: []string{ns}})

	for i := range 6 {
		policy := linv1.ReclaimRetain
		if i >= 4 {
			policy = linv1.ReclaimDelete
		}
		createWithStorage(t, lc, ns, fmt.Sprintf("c%d", i), policy)
	}
	waitConverged(t, 3*time.Minute, e.Client, lc, ns)

	for round := range 3 {
		compact := round > 0
		relists, tooOld := log.snapshot()
		px.cut()
		changeWhileCut(t, e, lc, ns, round)
		if compact {
			rev, err := e.CompactEtcd(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("round %d: compacted etcd at revision %d", round, rev)
		}
		px.heal(t)
		waitConverged(t, 3*time.Minute, e.Client, lc, ns)
		if compact {
			// An informer whose objects did not change (the budgets') may
			// still be backing off when the rest has converged.
			harness.Eventually(t, 2*time.Minute, "every informer to relist", func(context.Context) (bool, error) {
				now, _ := log.snapshot()
				for _, r := range watchedResources {
					if now[r] == relists[r] {
						return false, nil
					}
				}
				return true, nil
			})
		}
		relistsAfter, tooOldAfter := log.snapshot()
		for _, r := range watchedResources {
			relisted, old := relistsAfter[r]-relists[r], tooOldAfter[r]-tooOld[r]
			t.Logf("round %d, compacted %v: %s relisted %d times, answered too old %d times", round, compact, r, relisted, old)
			// The budgets do not change in the scenario: that informer's
			// watch may be ended by the cut before its "too old" answer is
			// read, and it relists all the same; a relist is what counts.
			wantOld := compact && r != "poddisruptionbudgets"
			if compact && (relisted == 0 || wantOld && old == 0) || !compact && (relisted != 0 || old != 0) {
				t.Errorf("round %d, compacted %v: the %s informer relisted %d times after %d answers of too old",
					round, compact, r, relisted, old)
			}
		}
	}
	if seen := conflicts(); len(seen) > 0 {
		t.Errorf("false conflicts reported: %v", seen)
	}
}

// createWithStorage creates a one-pod Installation whose pod claims 1Gi.
func createWithStorage(t *testing.T, lc versioned.Interface, ns, name string, policy linv1.ReclaimPolicy) {
	t.Helper()
	inst := harness.NewInstallation(ns, name)
	inst.Spec.Storage = &linv1.StorageSpec{Size: resource.MustParse("1Gi"), ReclaimPolicy: policy}
	if _, err := lc.LinV1().Installations(ns).Create(context.Background(), inst, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// changeWhileCut makes what the operator must catch up with after a cut:
// every Installation's config changes, one Installation loses a ConfigMap, a
// Service and its StatefulSet, a new Installation comes and the one that came
// in the round before goes, with its children and, under Retain, not its claims.
func changeWhileCut(t *testing.T, e *env.Env, lc versioned.Interface, ns string, round int) {
	t.Helper()
	ctx := context.Background()
	insts, err := lc.LinV1().Installations(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, inst := range insts.Items {
		inst.Spec.Config["round"] = fmt.Sprint(round)
		if _, err := lc.LinV1().Installations(ns).Update(ctx, &inst, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	victim := fmt.Sprintf("c%d", round)
	background := metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}
	errs := []error{
		e.Client.CoreV1().ConfigMaps(ns).Delete(ctx, victim+"-topology", background),
		e.Client.CoreV1().Services(ns).Delete(ctx, victim+"-headless", background),
		e.Client.AppsV1().StatefulSets(ns).Delete(ctx, victim+"-0", background),
	}
	if round > 0 {
		errs = append(errs, lc.LinV1().Installations(ns).Delete(ctx, fmt.Sprintf("n%d", round-1), background))
	}
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	createWithStorage(t, lc, ns, fmt.Sprintf("n%d", round), linv1.ReclaimRetain)
}
