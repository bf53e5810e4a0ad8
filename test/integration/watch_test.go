package integration

import (
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"lin.dev/lin-operator/test/harness"
)

// TestTheRequestTimeoutDoesNotCutTheWatches runs the operator with a client
// Timeout of one second, as cmd/operator sets one (of 30 seconds) for single
// requests: its informers still watch on one request each, instead of
// watching again after every Timeout.
func TestTheRequestTimeoutDoesNotCutTheWatches(t *testing.T) {
	ns := harness.Namespace(t, testEnv.Client)
	cfg := rest.CopyConfig(testEnv.Config)
	cfg.Timeout = time.Second
	op := harness.StartOperator(t, cfg, harness.Options{Namespaces: []string{ns}})
	// What is tested is that nothing happens: only time can show it.
	time.Sleep(4 * cfg.Timeout)
	for _, resource := range []string{"configmaps", "services", "statefulsets", "poddisruptionbudgets", "events", "installations"} {
		if n := op.Requests.Snapshot()["watch "+resource]; n != 1 {
			t.Errorf("%d watches of %s in %s, want 1", n, resource, 4*cfg.Timeout)
		}
	}
}
