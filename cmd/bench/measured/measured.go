// Package measured is what a controller under measure by cmd/bench serves,
// the same for lin-operator and for its controller-runtime peer, each in a
// process of its own: on a Unix socket, the requests its clients made, by
// verb and resource, whether its caches have synced, and its memory.
package measured

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"time"

	"lin.dev/lin-operator/test/harness"
)

// Stats is what a measured process reports.
type Stats struct {
	// Synced says whether the caches of every kind it watches have synced.
	Synced bool `json:"synced"`
	// Requests are all the requests its clients made, and Conflicts those
	// of them refused with 409 Conflict.
	Requests  map[string]int `json:"requests"`
	Conflicts map[string]int `json:"conflicts"`
	// HeapInuseBytes is runtime.MemStats.HeapInuse and RSSBytes VmRSS, both
	// after a forced collection and the return of free memory to the OS
	// when the request asked for it (gc=1).
	HeapInuseBytes uint64 `json:"heapInuseBytes"`
	RSSBytes       uint64 `json:"rssBytes"`
	// HeapAllocBytes is runtime.MemStats.HeapAlloc: after a forced
	// collection, the bytes of the objects still reachable. HeapInuse holds
	// them and the free slots of the spans they are in.
	HeapAllocBytes uint64 `json:"heapAllocBytes"`
}

// Serve serves Stats on a Unix socket at path until ctx ends: from counter,
// which counts the requests of the process's clients, and synced.
func Serve(ctx context.Context, path string, counter *harness.RequestCounter, synced func() bool) error {
	l, err := net.Listen("unix", path)
	if err != nil {
		return err
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("gc") == "1" {
			debug.FreeOSMemory()
		}
		if path := q.Get("heapprofile"); path != "" {
			if err := writeHeapProfile(path); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		rss, err := RSS(os.Getpid())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_ = json.NewEncoder(w).Encode(Stats{Synced: synced(), Requests: counter.Snapshot(), Conflicts: counter.Conflicts(),
			HeapInuseBytes: ms.HeapInuse, RSSBytes: rss, HeapAllocBytes: ms.HeapAlloc})
	})}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// writeHeapProfile writes a heap profile of this process to path. The
// profile counts what the last collections freed only after two more.
func writeHeapProfile(path string) error {
	runtime.GC()
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	return errors.Join(pprof.WriteHeapProfile(f), f.Close())
}

// Client reads the Stats of a process from its socket.
type Client struct {
	http *http.Client
}

// NewClient returns a client of the socket at path.
func NewClient(path string) *Client {
	dialer := &net.Dialer{}
	return &Client{http: &http.Client{Timeout: time.Minute, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return dialer.DialContext(ctx, "unix", path) },
	}}}
}

// Get reads the Stats, after a forced collection with gc, and after
// writing a heap profile to heapProfile if it is set.
func (c *Client) Get(ctx context.Context, gc bool, heapProfile string) (Stats, error) {
	url := "http://measured/stats?heapprofile=" + heapProfile
	if gc {
		url += "&gc=1"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Stats{}, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return Stats{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Stats{}, fmt.Errorf("stats: %s", resp.Status)
	}
	var s Stats
	return s, json.NewDecoder(resp.Body).Decode(&s)
}
