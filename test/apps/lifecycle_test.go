package apps

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/test/harness"
)

// claims returns the UID of every claim in ns, by name.
func claims(t *testing.T, ns string) map[string]string {
	t.Helper()
	list, err := cluster.Client.CoreV1().PersistentVolumeClaims(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range list.Items {
		out[c.Name] = string(c.UID)
	}
	return out
}

// sameClaims fails the test unless ns holds exactly the claims of before.
func sameClaims(t *testing.T, ns string, before map[string]string, when string) {
	t.Helper()
	now := claims(t, ns)
	if len(now) != len(before) {
		t.Errorf("%s: %d claims, want the %d of before: %v", when, len(now), len(before), now)
	}
	for name, uid := range before {
		if now[name] != uid {
			t.Errorf("%s: claim %s is %q, want the one of before (%s)", when, name, now[name], uid)
		}
	}
}

// waitNoPods waits until the Installation has no pod left.
func waitNoPods(t *testing.T, ns, name string) {
	t.Helper()
	harness.Eventually(t, timeout, "no pod of "+name, func(context.Context) (bool, error) {
		if n := len(pods(t, ns, name)); n > 0 {
			return false, fmt.Errorf("%d pods", n)
		}
		return true, nil
	})
}

// TestShardAppStopStartDeleteReapply writes to the sharded application,
// then stops it (zero pods, every claim kept) and starts it again, then
// deletes the Installation, whose reclaimPolicy is Retain, and applies it
// again: each time the pods come back on their own claims and every
// acknowledged write is there.
func TestShardAppStopStartDeleteReapply(t *testing.T) {
	ns := operatorIn(t)
	startShardApp(t, ns, nil)
	l := startLoad(t, shardClient(t, ns), "stop")
	waitAcknowledged(t, l, 100)
	l.halt()
	before := claims(t, ns)

	began := time.Now()
	harness.EditInstallation(t, lin(), ns, shardAppName, func(i *linv1.Installation) { i.Spec.Stop = true })
	harness.WaitPhase(t, lin(), ns, shardAppName, linv1.PhaseStopped, timeout)
	waitNoPods(t, ns, shardAppName)
	stopped := time.Since(began)
	sameClaims(t, ns, before, "stopped")
	began = time.Now()
	harness.EditInstallation(t, lin(), ns, shardAppName, func(i *linv1.Installation) { i.Spec.Stop = false })
	waitRolledOut(t, ns, shardAppName)
	t.Logf("stop: no pod left %v after stop: true; Ready again %v after stop: false",
		stopped.Round(100*time.Millisecond), time.Since(began).Round(100*time.Millisecond))
	sameClaims(t, ns, before, "started again")
	l.finish(t, "shardapp data through stop and start")

	began = time.Now()
	if err := lin().LinV1().Installations(ns).Delete(context.Background(), shardAppName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitNoPods(t, ns, shardAppName)
	harness.Eventually(t, timeout, "the StatefulSets to be collected", func(ctx context.Context) (bool, error) {
		list, err := cluster.Client.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) > 0 {
			return false, fmt.Errorf("%d StatefulSets left (%v)", len(list.Items), err)
		}
		return true, nil
	})
	deleted := time.Since(began)
	sameClaims(t, ns, before, "deleted with reclaimPolicy Retain")
	began = time.Now()
	startShardApp(t, ns, nil)
	t.Logf("delete: children collected %v after the delete; applied again, Ready in %v",
		deleted.Round(100*time.Millisecond), time.Since(began).Round(100*time.Millisecond))
	sameClaims(t, ns, before, "applied again")
	// The client Service is a new one, with a new ClusterIP.
	l.kv = shardClient(t, ns)
	l.finish(t, "shardapp data through delete and apply again")
}
