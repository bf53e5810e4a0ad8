package main

import (
	"strings"
	"testing"
	"time"
)

func TestPercentileIsTheNearestRank(t *testing.T) {
	samples := make([]time.Duration, 100)
	for i := range samples {
		samples[i] = time.Duration(i+1) * time.Millisecond
	}
	for q, want := range map[float64]time.Duration{0.5: 50 * time.Millisecond, 0.99: 99 * time.Millisecond, 1: 100 * time.Millisecond} {
		if got := percentile(samples, q); got != want {
			t.Errorf("percentile %g = %s, want %s", q, got, want)
		}
	}
	if got := percentile(samples[:1], 0.99); got != time.Millisecond {
		t.Errorf("percentile of one sample = %s", got)
	}
}

func TestRunListReplacesTheDefault(t *testing.T) {
	l := runList{{100, 1}}
	if err := l.Set("50:1, 7:4"); err != nil || l.String() != "50:1,7:4" {
		t.Errorf("Set: %v, %v", l, err)
	}
	for _, bad := range []string{"0:1", "5", "5:0", "5:65", "a:1"} {
		if err := l.Set(bad); err == nil {
			t.Errorf("Set(%q) succeeded, want an error", bad)
		}
	}
}

func TestTargetsAreJudgedOnTheFigures(t *testing.T) {
	mem := func(n int, heap uint64, keep, all bool) memory {
		return memory{Installations: n, HeapInuseBytes: heap, KeepManagedFields: keep, WatchAllChildren: all}
	}
	r := &report{Runs: []run{
		{N: 100, Shards: 1, Ratio: 2, Memory: []memory{mem(0, 1<<20, false, false), mem(100, 3<<20, false, false)}},
		{N: 1000, Shards: 1, Ratio: 1.2, CPURatio: 1.5, Convergence: convergence{WritesPerInstallation: 6, ExpectedWrites: 6,
			DryRunsPerInstallation: 3, EventsPerInstallation: 3}, Memory: []memory{mem(0, 1<<20, false, false), mem(1000, 21<<20, false, false),
			mem(1000, 25<<20, true, false)}},
		{N: 1000, Shards: 4, Ratio: 1.4, Steady: steadyState{ResyncWrites: map[string]int{"update configmaps": 1}}},
	}}
	var b strings.Builder
	r.targets(&b)
	for _, want := range []string{
		"at N=1000, in time and in control-plane CPU: **not met**. 1.20x at shards=1 (1.50x in control-plane CPU), where the API server had 13.0 " +
			"requests per Installation to serve against the floor's 7 (3.0 dry runs and 3.0 events); 1.40x at shards=4",
		"Requests per converged Installation: its writes, at most 1 event and 0 dry runs: **not met**. N=100 shards=1",
		"Heap at most 16 KiB per Installation at N=1000: **not met**. 20.5 KiB.",
		"Restart to synced under 3 s at N=1000: **met**",
		"Zero reads after the caches synced: **met**",
		"Zero writes in steady state and on restart: **not met**. 1 writes during resyncs",
		"Memory linear in N: **met**. Heap per Installation as shipped: 20.5 KiB at N=100, 20.5 KiB at N=1000.",
		"Memory smaller with managedFields dropped and the filter: **met**",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("targets lack %q:\n%s", want, b.String())
		}
	}
}
