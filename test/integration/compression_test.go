package integration

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"lin.dev/lin-operator/pkg/operator"
	"lin.dev/lin-operator/test/harness"
)

// TestTheWatchesAreNotCompressed runs the operator as shipped and with
// Compression on, and records which answers of the API server came gzipped.
// The informers' watches begin as streamed lists, whose every event the API
// server compresses on its own when asked to: as shipped, the operator does
// not ask, and with Compression on it does, which shows the API server would.
func TestTheWatchesAreNotCompressed(t *testing.T) {
	for _, compression := range []bool{false, true} {
		ns := harness.Namespace(t, testEnv.Client)
		gzipped := startRecordingGzip(t, ns, compression)
		want := []string{}
		if compression {
			want = []string{"watch configmaps", "watch events", "watch installations", "watch poddisruptionbudgets", "watch pods", "watch services", "watch statefulsets"}
		}
		if got := gzipped(); !slices.Equal(got, want) {
			t.Errorf("with Compression %v, the API server gzipped %v, want %v", compression, got, want)
		}
	}
}

// startRecordingGzip runs the operator on ns until its caches have synced and
// returns what lists the requests whose answers came gzipped, by verb and
// resource, once each.
func startRecordingGzip(t *testing.T, ns string, compression bool) func() []string {
	var mu sync.Mutex
	seen := map[string]bool{}
	cfg := rest.CopyConfig(testEnv.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return harness.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			// Uncompressed: the transport asked for gzip, got it and undid it.
			if err == nil && resp.Uncompressed {
				mu.Lock()
				seen[harness.RequestKey(req)] = true
				mu.Unlock()
			}
			return resp, err
		})
	})
	run, err := harness.RunOperator(cfg, operator.Config{Namespaces: []string{ns}, Workers: 1, ClusterDomain: "cluster.local", Compression: compression})
	if err != nil {
		t.Fatalf("making the operator: %v", err)
	}
	t.Cleanup(func() { _ = run.Stop() })
	harness.Eventually(t, 30*time.Second, "the operator's caches to sync", func(context.Context) (bool, error) {
		return run.Controller.HasSynced(), nil
	})
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		keys := slices.Sorted(maps.Keys(seen))
		return slices.DeleteFunc(keys, func(k string) bool { return !strings.HasPrefix(k, "watch ") })
	}
}
