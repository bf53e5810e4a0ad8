package main

import (
	"fmt"
	"slices"
	"strings"

	"lin.dev/lin-operator/pkg/operator"
)

// method says how every figure is made; it opens the report. Its one verb
// is the resync period of the restarted operator.
const method = `How each figure is made:

- **Convergence**: in a fresh namespace the benchmark creates N Installations
  (the tests' small one: one replica, one port, one config file; S shards) on
  as many goroutines as the operator has workers, and times from the first
  create until its own watch has seen every status.observedGeneration
  current. The operator writes status after the children, so they exist
  by then; the benchmark lists them afterwards to make sure.
- **Floor**: a plain client-go writer in the same process writes, on as many
  goroutines and with no client-side limit, what the converging run writes:
  each Installation, its children exactly as resources.NewChildren renders
  them, and the very status the operator's first sync writes, and is timed
  the same way, until the benchmark's watch has seen every status. It runs
  just before and just after the operator; the floor is their mean and
  operator / floor the headline figure. Each of the three runs has a new
  control plane of its own, warmed up alike, as a control plane that holds
  more objects serves each request more slowly (the ClusterIP allocator
  counts every address it gave on each Service it makes). Time on a shared machine is noisy:
  the CPU time that etcd and kube-apiserver spent in each run (from
  /proc) says, with far less noise, what each run cost the control plane.
- **Requests**: counted at the operator's client transport by verb and
  resource, from the moment its caches synced (the namespace was empty)
  until it had been quiet for a second. The least writes an Installation
  needs are its children and one status update; events and server-side
  dry runs (which change nothing) are counted apart.
- **Latency**: after convergence, one Installation at a time, spread over
  all N, gets a new image; the time runs from the edit until the
  benchmark's watch sees the new image on the StatefulSet of shard 0. The
  operator so far has the command's resync period (10 minutes): no resync
  falls in these runs.
- **Restart and steady state**: then a new operator replaces it, with a
  resync period of %s. Its writes (events included) are counted from its
  start until its first resync (the first sync of every Installation falls
  in there), then during three resync periods.
- **Memory**: for each setting (all four at N=1000, as shipped at the
  other N), a new process of the benchmark runs the
  operator on the namespace until its caches synced and its first syncs
  are done, then reports runtime.MemStats.HeapInuse after a forced GC and
  VmRSS after memory went back to the OS. The namespace also holds
  unrelated ConfigMaps and Services; it is measured before the
  Installations exist (0) and after, in the runs of one shard. Per
  Installation is the growth from 0 divided by N. The unrelated objects are
  there from the start, so in those runs the operator also converges next
  to them (its filter keeps them out of its caches); the floor's
  namespaces hold none.
- **Profile**: with -cpuprofile, the CPU profile of the operator's
  goroutines (labelled apart from the benchmark's own) while it converges
  and takes the edits, in the run of -profile-n Installations of one shard.
`

// intro writes the title, where and how the run took place, and the method.
func (r *report) intro(b *strings.Builder) {
	s, m := r.Settings, r.Machine
	fmt.Fprintf(b, "# Benchmarks\n\nWritten by `make bench` (cmd/bench) on %s, in %.1f minutes, on %d CPUs (%s, %s); "+
		"load average %s before and %s after (other work on the machine makes the figures noisy).\n\n",
		r.Date, r.Seconds/60, m.CPUs, m.Arch, m.Go, m.LoadBefore, m.LoadAfter)
	defaults := "the command's defaults"
	if s.Workers != operator.DefaultWorkers || s.QPS != operator.DefaultQPS || s.Burst != operator.DefaultBurst {
		defaults = "not the command's defaults"
	}
	fmt.Fprintf(b, "Control plane: %s, started by test/env; nothing acts on StatefulSets, so status stays Pending. "+
		"The operator runs in the benchmark's process with %d workers, QPS %g and burst %d (%s), and asks for no gzip, "+
		"as the command does by default; so do the floor and the benchmark's watch.\n\n%s\n",
		s.ControlPlane, s.Workers, s.QPS, s.Burst, defaults, fmt.Sprintf(method, fmt.Sprint(s.ResyncSeconds)+"s"))
}

// scaleRow is a run of one shard, with what the operator as shipped held
// with no Installation (base) and with N (shipped); nil when not measured.
type scaleRow struct {
	run           run
	base, shipped *memory
}

// scale returns the runs of one shard, by N, for the scale table and plots.
func (r *report) scale() []scaleRow {
	var rows []scaleRow
	for _, run := range r.Runs {
		if run.Shards != 1 {
			continue
		}
		row := scaleRow{run: run}
		for i, m := range run.Memory {
			if m.KeepManagedFields || m.WatchAllChildren {
				continue
			}
			if m.Installations == 0 {
				row.base = &run.Memory[i]
			} else {
				row.shipped = &run.Memory[i]
			}
		}
		rows = append(rows, row)
	}
	slices.SortStableFunc(rows, func(a, b scaleRow) int { return a.run.N - b.run.N })
	return rows
}

// perInstallation returns the heap and the RSS that each Installation adds,
// in bytes, and whether they were measured.
func (s scaleRow) perInstallation() (heap, rss float64, ok bool) {
	if s.base == nil || s.shipped == nil || s.shipped.Installations == 0 {
		return 0, 0, false
	}
	n := float64(s.shipped.Installations)
	return float64(s.shipped.HeapInuseBytes-min(s.base.HeapInuseBytes, s.shipped.HeapInuseBytes)) / n,
		float64(s.shipped.RSSBytes-min(s.base.RSSBytes, s.shipped.RSSBytes)) / n, true
}

// scaleTable writes how the cost grows with N, one row per run of one shard.
func (r *report) scaleTable(b *strings.Builder) {
	rows := r.scale()
	if len(rows) == 0 {
		return
	}
	b.WriteString("## Cost against scale (one shard)\n\n")
	fmt.Fprintf(b, "![Convergence time against N](%s)\n![Memory against N](%s)\n\n", convergencePlot, memoryPlot)
	var cells [][]string
	for _, s := range rows {
		heap, rss := "", ""
		if h, r, ok := s.perInstallation(); ok {
			heap, rss = kib(h), kib(r)
		}
		run := s.run
		cells = append(cells, []string{d(run.N), f1(run.FloorSeconds), f1(run.Convergence.Seconds), "**" + f2(run.Ratio) + "**",
			f2(run.CPURatio), heap, rss, f2(run.Steady.SyncedSeconds),
			f1(run.Latency.P50Ms) + " / " + f1(run.Latency.P99Ms), d(total(run.Steady.ResyncWrites))})
	}
	table(b, []string{"N", "floor (s)", "operator (s)", "operator / floor", "operator / floor, CPU",
		"heap per Installation (KiB)", "RSS per Installation (KiB)", "restart to synced (s)",
		"edit to StatefulSet p50 / p99 (ms)", "writes in 3 resyncs"}, cells)
}

// profileSection writes the top of the operator's CPU profile, if a run took it.
func (r *report) profileSection(b *strings.Builder) {
	for _, run := range r.Runs {
		if run.Profile == nil {
			continue
		}
		fmt.Fprintf(b, "## Where the operator's time goes (N=%d, shards=%d)\n\n", run.N, run.Shards)
		fmt.Fprintf(b, "The CPU profile of the operator's goroutines (`go tool pprof -top -tagfocus=component=operator`) "+
			"while it converged the N Installations and then took the edits; the benchmark's own clients and watches, "+
			"in the same process, are left out. Written to %s.\n\n```\n%s\n```\n\n", run.Profile.Path, strings.Join(run.Profile.Top, "\n"))
	}
}

// perRun writes a section with a table of one row per run, which starts
// with the run's N and shards.
func (r *report) perRun(b *strings.Builder, title string, header []string, row func(run) []string) {
	fmt.Fprintf(b, "## %s\n\n", title)
	rows := make([][]string, len(r.Runs))
	for i, run := range r.Runs {
		rows[i] = append([]string{d(run.N), d(run.Shards)}, row(run)...)
	}
	table(b, append([]string{"N", "shards"}, header...), rows)
}

// convergenceTable writes the convergence times and the ratio to the floor.
func (r *report) convergenceTable(b *strings.Builder) {
	r.perRun(b, "Convergence", []string{"children", "floor (s), before / after", "operator (s)", "operator / floor",
		"floor children/s", "operator children/s", "control plane CPU (s): floor before / after, operator",
		"operator / floor, CPU"}, func(run run) []string {
		var floors, cpus []string
		for _, f := range run.Floor {
			floors = append(floors, f1(f.Seconds))
			cpus = append(cpus, f1(f.ControlPlaneCPUSeconds))
		}
		c := run.Convergence
		children := run.N * childrenPer(run.Shards)
		return []string{d(children), strings.Join(floors, " / "), f1(c.Seconds), "**" + f2(run.Ratio) + "**",
			fmt.Sprintf("%.0f", float64(children)/run.FloorSeconds), fmt.Sprintf("%.0f", c.ChildrenPerSecond),
			strings.Join(cpus, " / ") + ", " + f1(c.ControlPlaneCPUSeconds), f2(run.CPURatio)}
	})
}

// requestsTable writes what the operator asked of the API server to converge.
func (r *report) requestsTable(b *strings.Builder) {
	r.perRun(b, "Requests while converging", []string{"writes per Installation (least)", "refused with 409",
		"events per Installation", "dry runs per Installation", "gets and lists after sync", "every request after sync"},
		func(run run) []string {
			c := run.Convergence
			return []string{fmt.Sprintf("%.2f (%d)", c.WritesPerInstallation, c.ExpectedWrites), counts(c.Conflicts),
				f2(c.EventsPerInstallation), f2(c.DryRunsPerInstallation), d(c.Reads), counts(c.Requests)}
		})
}

// latencyTable writes the edit latencies.
func (r *report) latencyTable(b *strings.Builder) {
	r.perRun(b, "Edit to StatefulSet update, under N in-sync Installations", []string{"edits", "p50 (ms)", "p99 (ms)",
		"max (ms)", "writes per edit (least)", "dry runs per edit"}, func(run run) []string {
		l := run.Latency
		return []string{d(l.Samples), f1(l.P50Ms), f1(l.P99Ms), f1(l.MaxMs),
			fmt.Sprintf("%.2f (%d)", l.WritesPerEdit, l.ExpectedWrites), f2(l.DryRunsPerEdit)}
	})
}

// steadyTable writes the requests of a restart and of steady state.
func (r *report) steadyTable(b *strings.Builder) {
	r.perRun(b, "Restart and steady state", []string{"restart to synced (s)", "requests to sync", "writes on restart",
		"writes in 3 resyncs", "reads after sync"}, func(run run) []string {
		s := run.Steady
		return []string{f2(s.SyncedSeconds), counts(s.SyncRequests), counts(s.RestartWrites), counts(s.ResyncWrites),
			counts(s.Reads)}
	})
}

// memoryTable writes the memory of each setting at each size.
func (r *report) memoryTable(b *strings.Builder) {
	fmt.Fprintf(b, "## Memory, with %d unrelated ConfigMaps and %d unrelated Services in the namespace\n\n",
		r.Settings.Unrelated, r.Settings.Unrelated)
	var rows [][]string
	for _, run := range r.Runs {
		for _, m := range run.Memory {
			heap, rss := "", ""
			if base, ok := run.baseline(m); ok && m.Installations > 0 {
				heap = kib(float64(m.HeapInuseBytes-min(base.HeapInuseBytes, m.HeapInuseBytes)) / float64(m.Installations))
				rss = kib(float64(m.RSSBytes-min(base.RSSBytes, m.RSSBytes)) / float64(m.Installations))
			}
			rows = append(rows, []string{d(m.Installations), d(run.Shards), setting(!m.KeepManagedFields, "stripped", "kept"),
				setting(!m.WatchAllChildren, "managed only", "all"), mib(m.HeapInuseBytes), mib(m.RSSBytes), heap, rss, d(m.Writes)})
		}
	}
	table(b, []string{"Installations", "shards", "managedFields", "children watched", "heap in use (MiB)", "RSS (MiB)",
		"heap per Installation (KiB)", "RSS per Installation (KiB)", "writes"}, rows)
}

// baseline returns the measurement of run with no Installation and the
// same setting as m.
func (run run) baseline(m memory) (memory, bool) {
	for _, base := range run.Memory {
		if base.Installations == 0 && base.KeepManagedFields == m.KeepManagedFields && base.WatchAllChildren == m.WatchAllChildren {
			return base, true
		}
	}
	return memory{}, false
}

// setting names the state of an informer setting.
func setting(on bool, yes, no string) string {
	if on {
		return yes
	}
	return no
}

// mib and kib format sizes.
func mib(v uint64) string  { return fmt.Sprintf("%.1f", float64(v)/(1<<20)) }
func kib(v float64) string { return fmt.Sprintf("%.1f", v/(1<<10)) }
