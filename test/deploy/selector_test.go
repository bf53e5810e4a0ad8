package deploy

import (
	"context"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/metrics"
	"lin.dev/lin-operator/test/harness"
)

func TestOperatorsWithDisjointSelectorsEachReconcileOnlyTheirOwn(t *testing.T) {
	install(t)
	ns := harness.Namespace(t, testEnv.Client)
	a := startLeader(t, "team-a", ns, "selector-a", "--installation-selector=team=a")
	b := startLeader(t, "team-b", ns, "selector-b", "--installation-selector=team=b")

	createInstallation(t, ns, "of-a", map[string]string{"team": "a"})
	createInstallation(t, ns, "of-b", map[string]string{"team": "b"})
	createInstallation(t, ns, "of-none", nil)
	waitPhase(t, ns, "of-a", linv1.PhaseReady)
	waitPhase(t, ns, "of-b", linv1.PhaseReady)
	for _, p := range []*operatorProcess{a, b} {
		m, err := p.metrics(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if n := m.sum(metrics.Prefix+"installations", nil); n != 1 {
			t.Errorf("operator %s sees %g Installations, want its 1", p.Name, n)
		}
	}
	none, err := linClient.LinV1().Installations(ns).Get(t.Context(), "of-none", metav1.GetOptions{})
	if err != nil || none.Status.Phase != "" {
		t.Errorf("an Installation that no selector matches was reconciled (%v): %+v", err, none.Status)
	}

	// With a gone, drift in a's Installation stays and drift in b's is
	// repaired: b never acts on what is not its own.
	a.Signal(t, syscall.SIGTERM)
	if code := a.Wait(t, 30*time.Second); code != 0 {
		t.Errorf("operator %s exited %d after SIGTERM, want 0", a.Name, code)
	}
	configMaps := testEnv.Client.CoreV1().ConfigMaps(ns)
	for _, name := range []string{"of-a-config", "of-b-config"} {
		if err := configMaps.Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	harness.Eventually(t, timeout, "of-b-config to come back", func(ctx context.Context) (bool, error) {
		_, err := configMaps.Get(ctx, "of-b-config", metav1.GetOptions{})
		return err == nil, err
	})
	// b's ConfigMap informer delivered of-a-config's deletion before
	// of-b-config's: had b queued of-a for it, the key came first. Once b's
	// queue is empty and no worker is busy, a wrong repair would be done.
	harness.Eventually(t, timeout, "the queue of operator team-b to drain", func(ctx context.Context) (bool, error) {
		m, err := b.metrics(ctx)
		queue := map[string]string{"name": "installations"}
		return err == nil && m.sum("workqueue_depth", queue) == 0 && m.sum("workqueue_unfinished_work_seconds", queue) == 0, err
	})
	if _, err := configMaps.Get(t.Context(), "of-a-config", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("of-a-config was repaired by the operator of team b: %v", err)
	}
}
