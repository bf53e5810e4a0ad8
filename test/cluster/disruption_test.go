package cluster

import (
	"context"
	"fmt"
	"testing"

	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/test/harness"
)

// evict asks the Eviction API to evict a pod, as `kubectl drain` does.
func evict(ns, pod string) error {
	return testEnv.Client.CoreV1().Pods(ns).EvictV1(context.Background(),
		&policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: ns}})
}

// waitBudgets waits until the disruption controller allows allowed
// disruptions in the budget of each of the first shards shards.
func waitBudgets(t *testing.T, ns string, shards int, allowed int32) {
	t.Helper()
	harness.Eventually(t, timeout, fmt.Sprintf("%d budgets to allow %d disruptions", shards, allowed), func(ctx context.Context) (bool, error) {
		for s := range shards {
			pdb, err := testEnv.Client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, fmt.Sprintf("demo-%d", s), metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if st := pdb.Status; st.ObservedGeneration != pdb.Generation || st.DisruptionsAllowed != allowed {
				return false, fmt.Errorf("budget %s allows %d disruptions, %d of %d pods healthy",
					pdb.Name, st.DisruptionsAllowed, st.CurrentHealthy, st.ExpectedPods)
			}
		}
		return true, nil
	})
}

func TestShardBudgetsLetADrainTakeOnePodOfEachShardAndNoMore(t *testing.T) {
	ns := harness.Namespace(t, testEnv.Client)
	harness.StartOperator(t, testEnv.Config, harness.Options{Namespaces: []string{ns}})
	createReady(t, newInstallation(ns, "demo", 2, 3, ""))
	waitBudgets(t, ns, 2, 1)

	// As kubectl drain does, cordon the nodes first, so that an evicted pod
	// does not come back Ready at once (fake nodes start pods in
	// milliseconds) and the budget stays spent.
	cordon(t, true)
	t.Cleanup(func() { cordon(t, false) })
	// One pod of each shard, together: each shard's budget allows one.
	for _, pod := range []string{"demo-0-0", "demo-1-0"} {
		if err := evict(ns, pod); err != nil {
			t.Errorf("evicting %s, the first of its shard: %v", pod, err)
		}
	}
	// A second pod of shard 0 while the first is down: refused.
	err := evict(ns, "demo-0-1")
	if !apierrors.IsTooManyRequests(err) {
		t.Errorf("evicting demo-0-1 while demo-0-0 is down: %v, want 429 Too Many Requests", err)
	}
	t.Logf("the second eviction in shard 0: %v", err)

	// The evicted pods come back, and the budgets allow one again.
	cordon(t, false)
	waitPhase(t, ns, "demo", linv1.PhaseReady)
	waitBudgets(t, ns, 2, 1)

	// Fewer shards take their budget along; disabling removes the others.
	edit(t, ns, "demo", func(i *linv1.Installation) { i.Spec.Shards = ptr.To[int32](1) })
	waitBudgetNames(t, ns, "demo-0")
	edit(t, ns, "demo", func(i *linv1.Installation) { i.Spec.Disruption.Enabled = ptr.To(false) })
	waitBudgetNames(t, ns)
	if err := evict(ns, "demo-0-1"); err != nil {
		t.Errorf("evicting demo-0-1 with the budgets off: %v", err)
	}
}

// cordon marks every node unschedulable, or schedulable again.
func cordon(t *testing.T, unschedulable bool) {
	t.Helper()
	nodes, err := testEnv.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	patch := []byte(fmt.Sprintf(`{"spec":{"unschedulable":%v}}`, unschedulable))
	for _, n := range nodes.Items {
		if _, err := testEnv.Client.CoreV1().Nodes().Patch(context.Background(), n.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// waitBudgetNames waits until the budgets in ns are exactly names.
func waitBudgetNames(t *testing.T, ns string, names ...string) {
	t.Helper()
	harness.Eventually(t, timeout, fmt.Sprintf("the budgets to be %v", names), func(ctx context.Context) (bool, error) {
		list, err := testEnv.Client.PolicyV1().PodDisruptionBudgets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		var got []string
		for _, p := range list.Items {
			got = append(got, p.Name)
		}
		if fmt.Sprint(got) != fmt.Sprint(names) {
			return false, fmt.Errorf("budgets %v", got)
		}
		return true, nil
	})
}
