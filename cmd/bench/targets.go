package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The targets of the benchmark, checked on the figures and never asserted
// by a test: the machine's noise would make such a test flaky.
const (
	// ratioTarget bounds operator / floor, in time and in control-plane
	// CPU, at N=ratioN and at the largest N.
	ratioTarget = 1.15
	ratioN      = 1000
	// heapTarget bounds the heap per Installation at the largest N, in bytes.
	heapTarget = 16 << 10
	// restartTarget bounds restart to synced at the largest N, in seconds.
	restartTarget = 3.0
	// p99Target bounds the p99 of edit to StatefulSet at the largest N, in ms.
	p99Target = 100.0
	// linearTolerance bounds how much more heap per Installation the largest
	// N may take than the smallest for memory to count as linear: more would
	// mean a cost per Installation that grows with N.
	linearTolerance = 0.25
)

// target is one target with the figures that decide it.
type target struct {
	name    string
	met     bool
	figures string
}

// targets writes whether each target was met, and on what figures.
func (r *report) targets(b *strings.Builder) {
	b.WriteString("## Targets\n\n")
	ts := []target{r.ratioTarget(ratioN), r.requestsTarget()}
	if rows := r.scale(); len(rows) > 0 {
		ts = append(ts, r.scaleTargets(rows[len(rows)-1])...)
	}
	ts = append(ts, r.readsTarget(), r.writesTarget(), r.linearTarget(), r.smallerTarget())
	for _, t := range ts {
		fmt.Fprintf(b, "- %s: **%s**. %s\n", t.name, setting(t.met, "met", "not met"), t.figures)
	}
}

// ratioTarget: convergence within ratioTarget of the floor at N=n, in time
// and in control-plane CPU, in every layout.
func (r *report) ratioTarget(n int) target {
	t := target{name: fmt.Sprintf("Convergence within %.2fx of the floor at N=%d, in time and in control-plane CPU", ratioTarget, n), met: true}
	var figs []string
	for _, run := range r.Runs {
		if run.N == n {
			t.met = t.met && run.Ratio <= ratioTarget && run.CPURatio <= ratioTarget
			c := run.Convergence
			figs = append(figs, fmt.Sprintf("%.2fx at shards=%d (%.2fx in control-plane CPU), where the API server had "+
				"%.1f requests per Installation to serve against the floor's %d (%.1f dry runs and %.1f events)",
				run.Ratio, run.Shards, run.CPURatio, requestsPerInstallation(c), c.ExpectedWrites+1,
				c.DryRunsPerInstallation, c.EventsPerInstallation))
		}
	}
	if len(figs) == 0 {
		return target{name: t.name, figures: "No run at that N."}
	}
	t.figures = strings.Join(figs, "; ") + "."
	return t
}

// requestsTarget: a converging Installation costs its writes, at most one
// event and no dry run.
func (r *report) requestsTarget() target {
	t := target{name: "Requests per converged Installation: its writes, at most 1 event and 0 dry runs", met: true}
	var figs []string
	for _, run := range r.Runs {
		c := run.Convergence
		t.met = t.met && c.WritesPerInstallation <= float64(c.ExpectedWrites) && c.EventsPerInstallation <= 1 && c.DryRunsPerInstallation == 0
		figs = append(figs, fmt.Sprintf("N=%d shards=%d: %.2f writes (least %d), %.2f events, %.2f dry runs",
			run.N, run.Shards, c.WritesPerInstallation, c.ExpectedWrites, c.EventsPerInstallation, c.DryRunsPerInstallation))
	}
	t.figures = strings.Join(figs, "; ") + "."
	return t
}

// scaleTargets: at the largest N of one shard, the ratio to the floor, the
// heap per Installation, restart to synced and the p99 of edits.
func (r *report) scaleTargets(s scaleRow) []target {
	run := s.run
	at := fmt.Sprintf(" at N=%d", run.N)
	ratio := r.ratioTarget(run.N)
	ts := []target{ratio}
	if run.N == ratioN {
		ts = nil // said already
	}
	heap := target{name: fmt.Sprintf("Heap at most %d KiB per Installation%s", heapTarget>>10, at), figures: "Not measured."}
	if h, _, ok := s.perInstallation(); ok {
		heap.met, heap.figures = h <= heapTarget, fmt.Sprintf("%.1f KiB.", h/1024)
	}
	return append(ts, heap,
		target{name: fmt.Sprintf("Restart to synced under %.0f s%s", restartTarget, at), met: run.Steady.SyncedSeconds < restartTarget,
			figures: fmt.Sprintf("%.2f s.", run.Steady.SyncedSeconds)},
		target{name: fmt.Sprintf("Edit to StatefulSet p99 under %.0f ms%s", p99Target, at), met: run.Latency.P99Ms < p99Target,
			figures: fmt.Sprintf("p99 %.1f ms (p50 %.1f ms) over %d edits.", run.Latency.P99Ms, run.Latency.P50Ms, run.Latency.Samples)})
}

// requestsPerInstallation is what a converging run asked of the API server
// per Installation: the Installation's create, which the benchmark makes,
// and the operator's writes, events and dry runs.
func requestsPerInstallation(c convergence) float64 {
	return 1 + c.WritesPerInstallation + c.EventsPerInstallation + c.DryRunsPerInstallation
}

// readsTarget: no get or list after the caches synced, in any phase.
func (r *report) readsTarget() target {
	reads := 0
	for _, run := range r.Runs {
		reads += run.Convergence.Reads + run.Latency.Reads + total(run.Steady.Reads)
	}
	return target{name: "Zero reads after the caches synced", met: reads == 0,
		figures: fmt.Sprintf("%d gets and lists in all runs: while converging, while editing, after restarts and in steady state.", reads)}
}

// writesTarget: no write in steady state nor on a restart.
func (r *report) writesTarget() target {
	steady, restart := 0, 0
	for _, run := range r.Runs {
		steady += total(run.Steady.ResyncWrites)
		restart += total(run.Steady.RestartWrites)
	}
	return target{name: "Zero writes in steady state and on restart", met: steady+restart == 0,
		figures: fmt.Sprintf("%d writes during resyncs and %d on restarts, in all runs.", steady, restart)}
}

// linearTarget: the heap per Installation of the shipped setting does not
// grow with N.
func (r *report) linearTarget() target {
	per := map[int]float64{}
	var figs []string
	for _, run := range r.Runs {
		for _, m := range run.Memory {
			base, ok := run.baseline(m)
			if !ok || m.Installations == 0 || m.KeepManagedFields || m.WatchAllChildren {
				continue
			}
			kb := float64(m.HeapInuseBytes-min(base.HeapInuseBytes, m.HeapInuseBytes)) / float64(m.Installations) / 1024
			per[m.Installations] = kb
			figs = append(figs, fmt.Sprintf("%.1f KiB at N=%d", kb, m.Installations))
		}
	}
	t := target{name: "Memory linear in N", figures: "Heap per Installation as shipped: " + strings.Join(figs, ", ") + "."}
	if len(per) >= 2 {
		sizes := slices.Sorted(maps.Keys(per))
		smallest, largest := per[sizes[0]], per[sizes[len(sizes)-1]]
		t.met = largest <= smallest*(1+linearTolerance)
		t.figures += fmt.Sprintf(" The largest N takes %+.0f%% per Installation of what the smallest takes (target: at most %+.0f%%).",
			(largest/smallest-1)*100, linearTolerance*100)
	} else {
		t.figures += " One size only: nothing to compare."
	}
	return t
}

// smallerTarget: at every N with Installations, dropping managedFields and
// the filter each make the heap smaller.
func (r *report) smallerTarget() target {
	t := target{name: "Memory smaller with managedFields dropped and the filter", met: true}
	var figs []string
	for _, run := range r.Runs {
		shipped := map[int]uint64{}
		for _, m := range run.Memory {
			if !m.KeepManagedFields && !m.WatchAllChildren {
				shipped[m.Installations] = m.HeapInuseBytes
			}
		}
		for _, m := range run.Memory {
			s, ok := shipped[m.Installations]
			if !ok || m.Installations == 0 || (!m.KeepManagedFields && !m.WatchAllChildren) {
				continue
			}
			t.met = t.met && s < m.HeapInuseBytes
			figs = append(figs, fmt.Sprintf("N=%d, %s: %s MiB more", m.Installations, without(m),
				fmt.Sprintf("%.1f", (float64(m.HeapInuseBytes)-float64(s))/(1<<20))))
		}
	}
	t.figures = "Heap in use over the shipped setting: " + strings.Join(figs, "; ") + "."
	return t
}

// without names what a memory setting turned off.
func without(m memory) string {
	switch {
	case m.KeepManagedFields && m.WatchAllChildren:
		return "keeping managedFields, without the filter"
	case m.KeepManagedFields:
		return "keeping managedFields"
	default:
		return "without the filter"
	}
}
