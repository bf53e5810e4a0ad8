package main

import (
	"os"
	"path/filepath"
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

func TestSpreadIsTheMedianWithTheExtremes(t *testing.T) {
	if got := spreadOf([]float64{1.3, 1.1, 1.2}); got != (spread{Median: 1.2, Min: 1.1, Max: 1.3}) {
		t.Errorf("three rounds: %+v", got)
	}
	if got := spreadOf([]float64{2, 1}); got != (spread{Median: 1.5, Min: 1, Max: 2}) {
		t.Errorf("two rounds: %+v", got)
	}
}

func TestTargetsAreJudgedOnTheFigures(t *testing.T) {
	mem := func(n int, heap uint64, keep, all bool) memory {
		return memory{Installations: n, HeapInuseBytes: heap, KeepManagedFields: keep, WatchAllChildren: all}
	}
	ratios := func(time, cpu float64) result {
		return result{Ratio: spread{time, time - 0.1, time + 0.1}, CPURatio: spread{cpu, cpu, cpu}}
	}
	op1000 := ratios(1.2, 1.5)
	op1000.Convergence = convergence{WritesPerInstallation: 6, ExpectedWrites: 6, DryRunsPerInstallation: 3, EventsPerInstallation: 3}
	op1000.Memory = []memory{mem(0, 1<<20, false, false), mem(1000, 21<<20, false, false), mem(1000, 25<<20, true, false)}
	peer1000 := ratios(1.3, 1.4)
	peer1000.Memory = []memory{mem(0, 1<<20, false, false), mem(1000, 31<<20, false, false)}
	op4 := ratios(1.4, 1.1)
	op4.Steady = steadyState{ResyncWrites: map[string]int{"update configmaps": 1}}
	op100 := ratios(2, 1)
	op100.Memory = []memory{mem(0, 1<<20, false, false), mem(100, 3<<20, false, false)}
	r := &report{Runs: []run{
		{N: 100, Shards: 1, Operator: op100},
		{N: 1000, Shards: 1, Rounds: make([]round, 3), Operator: op1000, Peer: &peer1000},
		{N: 1000, Shards: 4, Operator: op4},
	}}
	var b strings.Builder
	r.targets(&b)
	for _, want := range []string{
		"at N=1000, in time and in control-plane CPU: **not met**. 1.20x at shards=1 (1.50x in control-plane CPU), medians of 3 rounds " +
			"(time 1.10-1.30, CPU 1.50-1.50), where the API server had 13.0 requests per Installation to serve against the floor's 7 " +
			"(3.0 dry runs and 3.0 events); 1.40x at shards=4",
		"The operator ahead of its controller-runtime peer in every figure at N=1000, on the medians of the rounds: **not met**. Behind in 2 of ",
		"/ floor, control-plane CPU at N=1000 shards=1 (1.50 against 1.40)",
		"requests per Installation while converging at N=1000 shards=1 (12.00 against 0.00).",
		"Requests per converged Installation: its writes, at most 1 event and 0 dry runs: **not met**. N=100 shards=1",
		"Heap at most 16 KiB per Installation at N=1000: **not met**. 20.5 KiB.",
		"Restart to synced under 6 s at N=1000: **met**",
		"Zero writes in resyncs at N=1000: **met**",
		"Zero reads after the caches synced: **met**",
		"Zero writes in steady state and on restart: **not met**. 1 writes during resyncs",
		"Memory linear in N: **met**. Heap per Installation as shipped: 20.5 KiB at N=100, 20.5 KiB at N=1000.",
		"Memory smaller with managedFields dropped and the filter: **met**",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("targets lack %q:\n%s", want, b.String())
		}
	}
	var side strings.Builder
	r.sideBySide(&side)
	for _, want := range []string{
		"### N=1000, 1 shard (floor 0.0 s)",
		"| / floor, time | 1.20 (1.10-1.30) | 1.30 (1.20-1.40) | 1.08 |",
		"| heap per Installation (KiB) | 20.5 | 30.7 | 1.50 |",
	} {
		if !strings.Contains(side.String(), want) {
			t.Errorf("the side-by-side tables lack %q:\n%s", want, side.String())
		}
	}
	if strings.Contains(side.String(), "N=100,") {
		t.Errorf("a run without the peer has a side-by-side table:\n%s", side.String())
	}
}

func TestTheOtherRunsAreComparedWithThePeerButNotJudged(t *testing.T) {
	op, peer := result{Seconds: spread{Median: 10}}, result{Seconds: spread{Median: 20}}
	slow := result{Seconds: spread{Median: 30}}
	r := &report{Runs: []run{{N: 1000, Shards: 1, Operator: op, Peer: &peer}, {N: 10000, Shards: 1, Operator: slow, Peer: &peer}}}
	got := r.aheadTarget()
	if !got.met {
		t.Errorf("behind at N=10000 only, judged not met: %s", got.figures)
	}
	for _, want := range []string{"Ahead or level in all 11 figures compared.",
		"At the other N, not judged: behind in 1 of 11 figures: convergence (s) at N=10000 shards=1 (30.0 against 20.0)."} {
		if !strings.Contains(got.figures, want) {
			t.Errorf("the target's figures lack %q: %s", want, got.figures)
		}
	}
	r.Runs[0].Operator = result{Seconds: spread{Median: 20.04}}
	if got := r.aheadTarget(); !got.met {
		t.Errorf("level with the peer as printed, judged not met: %s", got.figures)
	}
	r.Runs[0].Operator = slow
	if r.aheadTarget().met {
		t.Error("behind at N=1000, judged met")
	}
}

func TestTheRoundsEditsAreSummarizedAsMedians(t *testing.T) {
	rounds := make([]round, 3)
	for i, p50 := range []float64{30, 10, 20} {
		rounds[i] = round{FloorSeconds: 10, FloorCPUSeconds: 10,
			Operator: contenderRound{convergence: convergence{Seconds: 11, ControlPlaneCPUSeconds: 10}, Edits: editLatency{P50Ms: p50, P99Ms: 2 * p50}}}
	}
	r := run{N: 1000, Shards: 1, Rounds: rounds}
	r.summarize()
	if got := r.Operator.EditP50Ms; got != (spread{Median: 20, Min: 10, Max: 30}) {
		t.Errorf("p50: %+v", got)
	}
	if got := r.Operator.EditP99Ms; got != (spread{Median: 40, Min: 20, Max: 60}) {
		t.Errorf("p99: %+v", got)
	}
	var b strings.Builder
	(&report{Runs: []run{r}}).latencyTable(&b)
	if want := "| 20.0 (10.0-30.0) | 40.0 (20.0-60.0) |"; !strings.Contains(b.String(), want) {
		t.Errorf("the latency table lacks %q:\n%s", want, b.String())
	}
}

func TestGrowthIsMeasuredAgainstTheGrowthOfN(t *testing.T) {
	op := func(seconds float64) result { return result{Seconds: spread{Median: seconds}} }
	peer := op(30)
	r := &report{Runs: []run{
		{N: 1000, Shards: 1, FloorSeconds: 18, Operator: op(20), Peer: &peer},
		{N: 1000, Shards: 4, Operator: op(99)},
		{N: 10000, Shards: 1, FloorSeconds: 200, Operator: op(220)},
	}}
	var b strings.Builder
	r.growthTable(&b)
	for _, want := range []string{
		"## Growth from N=1000 to N=10000 (one shard)",
		"| floor (s) |  | 18.00 | 200.00 | 11.11 | 1.11 |",
		"| convergence (s) | operator | 20.00 | 220.00 | 11.00 | 1.10 |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the growth table lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "| peer |") {
		t.Errorf("a contender not measured at the larger N has a row:\n%s", b.String())
	}
}

func TestTheMarkdownIsRenderedAgainFromTheJSONWithTheNotes(t *testing.T) {
	dir := t.TempDir()
	md, js, notes := filepath.Join(dir, "b.md"), filepath.Join(dir, "b.json"), filepath.Join(dir, "notes.md")
	r := &report{Date: "2026-12-05T12:00:00Z", Runs: []run{{N: 10, Shards: 1, Rounds: []round{{FloorSeconds: 1}},
		Operator: result{Seconds: spread{Median: 1.5}}}}}
	if err := r.write(md, js, notes); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(notes, []byte("## Why\n\nBecause.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := readReport(js)
	if err != nil {
		t.Fatal(err)
	}
	if err := again.render(md, notes); err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "on 2026-12-05T12:00:00Z") || !strings.Contains(string(out), "## Why\n\nBecause.") {
		t.Errorf("rendered again from the JSON with notes:\n%s", out)
	}
}

func TestTheTablesShowEachPhasesSteal(t *testing.T) {
	rd := round{Floor: []floorResult{{Seconds: 10, StealPercent: 1}, {Seconds: 10, StealPercent: 31.4}}, FloorSeconds: 10, FloorCPUSeconds: 20,
		Operator: contenderRound{convergence: convergence{Seconds: 11, ControlPlaneCPUSeconds: 22, StealPercent: 8.4}},
		Peer:     &contenderRound{convergence: convergence{Seconds: 12, ControlPlaneCPUSeconds: 24, StealPercent: 2}, Edits: editLatency{P50Ms: 20, P99Ms: 40}}}
	r := &report{Runs: []run{{N: 1000, Shards: 1, Rounds: []round{rd, rd},
		Operator: result{Convergence: rd.Operator.convergence}, Peer: &result{Convergence: rd.Peer.convergence}}}}
	var b strings.Builder
	r.convergenceTable(&b)
	r.roundsTable(&b)
	for _, want := range []string{"| 1.0 / 31.4, 8.4 |", "| 1.0 / 31.4, 2.0 |", "| 1.20 | 20.0 / 40.0 | 31.4 |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the tables lack %q:\n%s", want, b.String())
		}
	}
}
