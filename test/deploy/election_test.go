package deploy

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/metrics"
	"lin.dev/lin-operator/test/harness"
)

// leaseDuration is the Deployment's, client-go's usual one; a follower takes
// over from a leader that died this long after it last saw a renewal.
const leaseDuration = 15 * time.Second

// operatorArgs are the Deployment's arguments for an operator that watches
// only ns and elects through a Lease of its own, so that the tests' operators
// never meet, followed by extra.
func operatorArgs(t *testing.T, ns, lease string, extra ...string) []string {
	t.Helper()
	args := harness.DeploymentArgs(t, render(t, filepath.Join(repoRoot, "deploy")))
	args = append(args, "--namespace="+ns, "--leader-election-id="+lease)
	return append(args, extra...)
}

// startLeader starts an operator as the ServiceAccount of deploy/ with
// operatorArgs and waits until it leads.
func startLeader(t *testing.T, name, ns, lease string, extra ...string) *operatorProcess {
	t.Helper()
	kubeconfig := harness.ServiceAccountKubeconfig(t, testEnv.Client, testEnv.Config, systemNamespace, operatorName)
	op := startOperator(t, name, kubeconfig, operatorArgs(t, ns, lease, extra...)...)
	op.waitLeading(t, lease, timeout)
	return op
}

// assertFollower checks that p waits for the Lease with warm caches and has
// neither reconciled nor written anything.
func assertFollower(t *testing.T, p *operatorProcess, lease string) {
	t.Helper()
	m, err := p.metrics(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if m.sum("leader_election_master_status", map[string]string{"name": lease}) != 0 {
		t.Errorf("operator %s leads, want it to follow", p.Name)
	}
	if n := m.sum(metrics.Prefix+"reconcile_total", nil); n != 0 {
		t.Errorf("follower %s reconciled %g times, want none", p.Name, n)
	}
	if n := m.writes(); n != 0 {
		t.Errorf("follower %s sent %g requests that are not reads, want none", p.Name, n)
	}
	if n := m.sum(metrics.Prefix+"installations", nil); n == 0 {
		t.Errorf("follower %s has no Installation in its caches, want them warm", p.Name)
	}
}

func TestOnlyTheLeaderWritesAndAFollowerTakesOverAfterSIGKILLAndSIGTERM(t *testing.T) {
	install(t)
	ns := harness.Namespace(t, testEnv.Client)
	kubeconfig := harness.ServiceAccountKubeconfig(t, testEnv.Client, testEnv.Config, systemNamespace, operatorName)
	const lease = "election-test"
	args := operatorArgs(t, ns, lease)

	a := startLeader(t, "a", ns, lease)
	b := startOperator(t, "b", kubeconfig, args...)
	b.waitReady(t)
	createInstallation(t, ns, "first", nil)
	waitPhase(t, ns, "first", linv1.PhaseReady)
	assertFollower(t, b, lease)
	if m, err := a.metrics(t.Context()); err != nil || m.writes() == 0 {
		t.Errorf("leader a wrote nothing (%v)", err)
	}

	killed := time.Now()
	a.Signal(t, syscall.SIGKILL)
	b.waitLeading(t, lease, 2*leaseDuration)
	afterKill := time.Since(killed)
	createInstallation(t, ns, "second", nil)
	waitPhase(t, ns, "second", linv1.PhaseReady)

	c := startOperator(t, "c", kubeconfig, args...)
	c.waitReady(t)
	assertFollower(t, c, lease)
	terminated := time.Now()
	b.Signal(t, syscall.SIGTERM)
	c.waitLeading(t, lease, leaseDuration)
	afterTerm := time.Since(terminated)
	if code := b.Wait(t, 30*time.Second); code != 0 {
		t.Errorf("operator b exited %d after SIGTERM, want 0", code)
	}
	createInstallation(t, ns, "third", nil)
	waitPhase(t, ns, "third", linv1.PhaseReady)

	t.Logf("handover after SIGKILL of the leader: %s (lease duration %s)", afterKill.Round(time.Millisecond), leaseDuration)
	t.Logf("handover after SIGTERM of the leader: %s", afterTerm.Round(time.Millisecond))
}

func TestLeaderThatLosesItsLeaseExitsNonZero(t *testing.T) {
	install(t)
	ns := harness.Namespace(t, testEnv.Client)
	const lease = "lost-test"
	op := startLeader(t, "loser", ns, lease)

	// Another holder renews the Lease, as if this leader had been paused
	// past its lease duration and another replica had taken over.
	harness.Eventually(t, timeout, "another holder to take the Lease", func(ctx context.Context) (bool, error) {
		leases := testEnv.Client.CoordinationV1().Leases(systemNamespace)
		l, err := leases.Get(ctx, lease, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		now := metav1.NewMicroTime(time.Now())
		l.Spec.HolderIdentity = ptr.To("intruder")
		l.Spec.AcquireTime, l.Spec.RenewTime = &now, &now
		l.Spec.LeaseDurationSeconds = ptr.To[int32](3600)
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		return err == nil, err
	})
	if code := op.Wait(t, timeout); code == 0 {
		t.Errorf("the operator exited 0 after losing its Lease, want non-zero")
	}
	if log := op.Log(t); !strings.Contains(log, "lost the leader election Lease") {
		t.Errorf("the operator's log does not say it lost the Lease:\n%s", op.LogTail(20))
	}
}
