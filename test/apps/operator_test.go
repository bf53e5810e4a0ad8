package apps

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/test/harness"
)

// startOperatorProcess runs the operator binary at path on ns, as its
// Deployment does, with env on top of the test's environment.
func startOperatorProcess(t *testing.T, name, path, ns string, env []string) *harness.Process {
	t.Helper()
	return harness.StartProcessEnv(t, name, path, env,
		"--kubeconfig", cluster.KubeconfigPath, "--namespace", ns, "--metrics-bind-address=0", "--health-probe-bind-address=0")
}

// applyCRD applies the CRD in dir and waits until Installations in ns are
// served under it: the API server swaps its storage for a changed CRD a
// moment after the write, and an informer started before that could list
// under the old schema and watch under the new one.
func applyCRD(t *testing.T, dir, ns string, served func(*linv1.Installation) bool) {
	t.Helper()
	if out, err := cluster.Kubectl(context.Background(), "apply", "--server-side", "--force-conflicts", "-f", dir); err != nil {
		t.Fatalf("applying the CRD of %s: %v\n%s", dir, err, out)
	}
	harness.Eventually(t, timeout, "Installations served under the CRD of "+dir, func(ctx context.Context) (bool, error) {
		list, err := lin().LinV1().Installations(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, inst := range list.Items {
			if !served(&inst) {
				return false, fmt.Errorf("Installation %s is not served under it yet", inst.Name)
			}
		}
		return true, nil
	})
}

// underCurrentCRD says whether an Installation has a default that only the
// current CRD sets.
func underCurrentCRD(inst *linv1.Installation) bool { return inst.Spec.Rollout.Strategy != "" }

// TestOperatorUpgradeRestartsNothing runs etcd and the sharded application
// under the operator of the base release (hack/upgrade-base) and its CRD,
// then upgrades both as a rollout of the operator's Deployment would, with
// clients writing to both: no container restarts (same pod UID, container
// ID, restart count and start time) and the clients see no failure.
func TestOperatorUpgradeRestartsNothing(t *testing.T) {
	base := baseOperator(t)
	ns := harness.Namespace(t, cluster.Client)
	current := filepath.Join(repoRoot, "deploy", "crds")
	// The other tests need the current CRD, whatever happens here.
	t.Cleanup(func() { applyCRD(t, current, ns, underCurrentCRD) })
	applyCRD(t, filepath.Join(base.Tree, "deploy", "crds"), ns, func(*linv1.Installation) bool { return true })

	// The base release predates the transform that the watch-list
	// consistency detector needs (see test/upgrade).
	old := startOperatorProcess(t, "base-operator", base.Binary, ns,
		[]string{"KUBE_CACHE_MUTATION_DETECTOR=true", "KUBE_WATCHLIST_INCONSISTENCY_DETECTOR=false"})
	createExample(t, ns, "etcd.yaml", nil)
	createExample(t, ns, "shardapp.yaml", nil)
	waitRolledOut(t, ns, etcdName)
	waitRolledOut(t, ns, shardAppName)
	etcdLoad, shardLoad := startLoad(t, etcdClient(t, ns), "upgrade"), startLoad(t, shardClient(t, ns), "upgrade")
	waitAcknowledged(t, etcdLoad, 20)
	waitAcknowledged(t, shardLoad, 20)
	before := map[string]map[string]containerRun{etcdName: runs(t, ns, etcdName), shardAppName: runs(t, ns, shardAppName)}

	began := time.Now()
	old.Stop(t)
	applyCRD(t, current, ns, underCurrentCRD)
	startOperatorProcess(t, "operator", operatorBinary, ns, harness.Detectors)
	// The current operator gives every shard a PodDisruptionBudget, which
	// the base release did not: their presence says it has synced both.
	harness.Eventually(t, timeout, "the current operator's PodDisruptionBudgets", func(ctx context.Context) (bool, error) {
		list, err := cluster.Client.PolicyV1().PodDisruptionBudgets(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) < 4 {
			return false, fmt.Errorf("%d PodDisruptionBudgets (%v)", len(list.Items), err)
		}
		return true, nil
	})
	waitRolledOut(t, ns, etcdName)
	waitRolledOut(t, ns, shardAppName)
	t.Logf("upgrade: the current operator took over and synced both Installations %v after the base release was stopped",
		time.Since(began).Round(100*time.Millisecond))
	// Long enough for a rollout, if the upgrade had started one, to show.
	time.Sleep(5 * time.Second)
	for name, b := range before {
		if changed := changedRuns(b, runs(t, ns, name)); len(changed) > 0 {
			t.Errorf("the upgrade restarted containers of %s: %v", name, changed)
		} else {
			t.Logf("upgrade: all %d containers of %s kept their pod, container ID, restart count and start time", len(b), name)
		}
	}
	etcdLoad.finish(t, "etcd client through the upgrade")
	shardLoad.finish(t, "shardapp client through the upgrade")
}

// TestOperatorKilledDuringRollout kills the operator (SIGKILL) while a
// config change rolls through the sharded application, leaves the
// application without an operator for a while, and starts it again: the
// rollout finishes in order, one pod at a time, and the client sees no
// failure and loses nothing.
func TestOperatorKilledDuringRollout(t *testing.T) {
	ns := harness.Namespace(t, cluster.Client)
	op := startOperatorProcess(t, "operator", operatorBinary, ns, harness.Detectors)
	inst := startShardApp(t, ns, nil)
	l := startLoad(t, shardClient(t, ns), "kill")
	waitAcknowledged(t, l, 20)
	before := runs(t, ns, shardAppName)
	tl := startTimeline(t, inst)

	began := time.Now()
	harness.EditInstallation(t, lin(), ns, shardAppName, func(i *linv1.Installation) {
		i.Spec.Config = map[string]string{"rollout-note": "rolled while the operator dies"}
	})
	harness.Eventually(t, timeout, "the rollout to replace a pod", func(context.Context) (bool, error) {
		if len(changedRuns(before, runs(t, ns, shardAppName))) == 0 {
			return false, fmt.Errorf("no pod replaced yet")
		}
		return true, nil
	})
	op.Kill(t)
	killed := time.Since(began)
	time.Sleep(5 * time.Second)
	startOperatorProcess(t, "operator-again", operatorBinary, ns, harness.Detectors)
	waitReplaced(t, ns, shardAppName, before)
	t.Logf("kill: operator killed %v into the rollout, down 5s; the rollout finished %v after the edit",
		killed.Round(100*time.Millisecond), time.Since(began).Round(100*time.Millisecond))
	shardOrder(t, replacedOneAtATime(t, tl, "shardapp rollout with the operator killed"))
	l.finish(t, "shardapp client through the operator's death")
}
