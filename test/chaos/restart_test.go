//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/resources"
	"lin.dev/lin-operator/test/env"
	"lin.dev/lin-operator/test/harness"
)

// TestAPIServerRestartsWhile200InstallationsReconcile restarts kube-apiserver
// twice while the operator binary reconciles 200 new Installations, half of
// them with storage: once killed outright when a quarter of the
// StatefulSets exist, once shut down gracefully when most do. The operator
// must stay up, resume, and converge with every child made exactly once,
// nothing deleted and no claim lost. The operator runs at 50 requests a
// second, so that the 200 take it about a minute on any machine and both
// restarts come while it works.
func TestAPIServerRestartsWhile200InstallationsReconcile(t *testing.T) {
	const total = 200
	ns := harness.Namespace(t, testEnv.Client)
	guardPVCs(t, testEnv.Client, linClient, ns)
	tracker := trackUIDs(t, testEnv.Client, ns)
	harness.CreateVolumes(t, testEnv.Client, harness.Volumes{Prefix: ns, Count: total / 2})
	op := startOperator(t, testEnv.KubeconfigPath, "--namespace", ns, "--kube-api-qps", "50", "--kube-api-burst", "100")

	ctx := context.Background()
	began := time.Now()
	for i := range total {
		inst := harness.NewInstallation(ns, fmt.Sprintf("r%03d", i))
		if i%2 == 0 {
			inst.Spec.Storage = &linv1.StorageSpec{Size: resource.MustParse("1Gi")}
		}
		if _, err := linClient.LinV1().Installations(ns).Create(ctx, inst, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("created %d Installations in %v", total, time.Since(began).Round(time.Millisecond))

	for _, r := range []struct {
		sets    int
		restart env.Restart
	}{
		{total / 4, env.Restart{Kill: true, Down: 5 * time.Second}},
		{total * 3 / 5, env.Restart{Down: 5 * time.Second}},
	} {
		sets := waitStatefulSets(t, ns, r.sets)
		if sets >= total {
			t.Errorf("the operator made all %d StatefulSets before the restart could interrupt it", sets)
		}
		at := time.Since(began)
		if err := testEnv.RestartAPIServer(ctx, r.restart); err != nil {
			t.Fatal(err)
		}
		t.Logf("restarted kube-apiserver (%+v) %v after the Installations were created, with %d of %d StatefulSets made; it answered again after %v",
			r.restart, at.Round(time.Millisecond), sets, total, (time.Since(began) - at).Round(time.Millisecond))
		op.checkAlive(t)
	}

	final := waitConverged(t, 6*time.Minute, testEnv.Client, linClient, ns)
	t.Logf("converged %v after the Installations were created", time.Since(began).Round(time.Second))
	op.checkAlive(t)
	checkControlPlaneAlive(t, testEnv)
	// Two ConfigMaps, two Services, a StatefulSet and a PodDisruptionBudget each.
	if got, want := len(final.managed()), total*6; got != want {
		t.Errorf("%d children, want %d", got, want)
	}
	if got, want := len(final.claims), total/2; got != want {
		t.Errorf("%d claims, want %d", got, want)
	}
	tracker.catchUp(t, final.uids())
	if r := tracker.recreated(); len(r) > 0 {
		t.Errorf("made more than once: %v", r)
	}
	if d := tracker.deletions(); len(d) > 0 {
		t.Errorf("deleted: %v", d)
	}
	t.Logf("%d children and claims tracked, each made once and never deleted", tracker.count())
}

// waitStatefulSets waits until the namespace holds at least n managed
// StatefulSets and returns how many it holds.
func waitStatefulSets(t *testing.T, ns string, n int) int {
	t.Helper()
	var count int
	waitFor(t, 3*time.Minute, fmt.Sprintf("%d StatefulSets", n), func(ctx context.Context) error {
		sets, err := testEnv.Client.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{LabelSelector: resources.ManagedBySelector})
		if err != nil {
			return err
		}
		if count = len(sets.Items); count < n {
			return fmt.Errorf("%d StatefulSets", count)
		}
		return nil
	})
	return count
}

// checkControlPlaneAlive fails the test if a program of e has exited: the
// controllers must ride out an apiserver restart too, or nothing converges.
func checkControlPlaneAlive(t *testing.T, e *env.Env) {
	t.Helper()
	for _, p := range e.Processes() {
		if !p.Alive() {
			t.Errorf("%s (pid %d) has exited; see %s", p.Name, p.Pid, p.LogPath)
		}
	}
}
