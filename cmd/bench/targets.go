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
	// ratioTarget bounds operator / floor at the largest N.
	ratioTarget = 1.3
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
	for _, t := range []target{r.ratioTarget(), r.readsTarget(), r.writesTarget(), r.linearTarget(), r.smallerTarget()} {
		fmt.Fprintf(b, "- %s: **%s**. %s\n", t.name, setting(t.met, "met", "not met"), t.figures)
	}
}

// ratioTarget: convergence within ratioTarget of the floor at the largest N.
func (r *report) ratioTarget() target {
	largest := 0
	for _, run := range r.Runs {
		largest = max(largest, run.N)
	}
	t := target{name: fmt.Sprintf("Convergence within %.1fx of the floor at N=%d", ratioTarget, largest), met: true}
	var figs []string
	for _, run := range r.Runs {
		if run.N == largest {
			t.met = t.met && run.Ratio <= ratioTarget
			c := run.Convergence
			figs = append(figs, fmt.Sprintf("%.2fx at shards=%d (%.2fx in control-plane CPU), where the API server had "+
				"%.1f requests per Installation to serve against the floor's %d (%.1f dry runs and %.1f events)",
				run.Ratio, run.Shards, run.CPURatio, requestsPerInstallation(c), c.ExpectedWrites+1,
				c.DryRunsPerInstallation, c.EventsPerInstallation))
		}
	}
	t.figures = strings.Join(figs, "; ") + "."
	return t
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

// smallerTarget: at every N with Installations, the transform and the filter
// each make the heap smaller.
func (r *report) smallerTarget() target {
	t := target{name: "Memory smaller with the transform and the filter", met: true}
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
		return "without both"
	case m.KeepManagedFields:
		return "without the transform"
	default:
		return "without the filter"
	}
}
