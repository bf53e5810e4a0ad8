package measured

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"lin.dev/lin-operator/test/harness"
)

func TestStatsReportTheRequestsTheSyncAndTheMemory(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			w.WriteHeader(http.StatusConflict)
		}
	}))
	defer api.Close()
	counter := harness.NewRequestCounter()
	client := &http.Client{Transport: counter.Wrap(http.DefaultTransport)}
	for _, method := range []string{http.MethodGet, http.MethodPut} {
		req, _ := http.NewRequest(method, api.URL+"/api/v1/namespaces/ns/configmaps/a", nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}

	var synced atomic.Bool
	socket := filepath.Join(t.TempDir(), "stats.sock")
	go func() {
		if err := Serve(t.Context(), socket, counter, synced.Load); err != nil {
			t.Error(err)
		}
	}()
	c := NewClient(socket)
	var s Stats
	harness.Eventually(t, 10*time.Second, "the stats to be served", func(ctx context.Context) (bool, error) {
		var err error
		s, err = c.Get(ctx, false, "")
		return err == nil, nil
	})
	if s.Synced || s.Requests["get configmaps"] != 1 || s.Requests["update configmaps"] != 1 || s.Conflicts["update configmaps"] != 1 {
		t.Errorf("stats %+v, want not synced, a get and an update of configmaps, the update refused", s)
	}
	synced.Store(true)
	profile := filepath.Join(t.TempDir(), "heap.pprof")
	if s, err := c.Get(t.Context(), true, profile); err != nil || !s.Synced || s.HeapInuseBytes == 0 || s.RSSBytes == 0 {
		t.Errorf("after a collection: %+v, %v; want synced, with heap and RSS", s, err)
	}
	if fi, err := os.Stat(profile); err != nil || fi.Size() == 0 {
		t.Errorf("heap profile: %v", err)
	}
}

func TestCPUTimeAndRSSOfThisProcessAndTheMachinesSteal(t *testing.T) {
	cpu, err := CPUTime(os.Getpid())
	if err != nil || cpu < 0 {
		t.Errorf("CPU time %v, %v", cpu, err)
	}
	if rss, err := RSS(os.Getpid()); err != nil || rss < 1<<20 {
		t.Errorf("RSS %d, %v; want at least 1 MiB", rss, err)
	}
	if _, err := RSS(-1); err == nil {
		t.Error("the RSS of no process: no error")
	}
	steal, total, err := Steal()
	if err != nil || steal < 0 || total <= 0 || steal > total {
		t.Errorf("steal %d of %d ticks, %v", steal, total, err)
	}
}
