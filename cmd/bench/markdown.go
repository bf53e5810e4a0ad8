package main

import (
	"fmt"
	"slices"
	"strings"

	"lin.dev/lin-operator/pkg/operator"
)

// method says how every figure is made; it opens the report. Its verbs
// are the rounds at N up to ratioN and the resync period of the restarts.
const method = `How each figure is made:

- **Contenders**: lin-operator, and its peer written with controller-runtime
  the kubebuilder way (cmd/bench/peer; its README says where each of its
  choices comes from): the same children from pkg/resources, the same
  status, one event per sync that changes something, as many workers. Each
  runs in a process of its own, as in a cluster, started by the benchmark;
  its own CPU time comes from /proc, and it serves its request counts and
  memory to the benchmark on a Unix socket.
- **Convergence**: in a fresh namespace the benchmark creates N Installations
  (the tests' small one: one replica, one port, one config file; S shards) on
  as many goroutines as the contender has workers, and times from the first
  create until its own watch has seen every status.observedGeneration
  current. Both write status after the children, so they exist by then;
  the benchmark lists them afterwards to make sure.
- **Floor**: a plain client-go writer in the benchmark's process writes, on as many
  goroutines and with no client-side limit, what the converging run writes:
  each Installation, its children exactly as resources.NewChildren renders
  them, and the very status the operator's first sync writes, and is timed
  the same way, until the benchmark's watch has seen every status. In each
  round it runs just before and just after the contenders; the floor is
  their mean and contender / floor the headline figure. Each run has a new
  control plane of its own, warmed up alike, as a control plane that holds
  more objects serves each request more slowly (the ClusterIP allocator
  counts every address it gave on each Service it makes). Time on a shared machine is noisy:
  the CPU time that etcd and kube-apiserver spent in each run (from
  /proc) says, with far less noise, what each run cost the control plane.
  At N up to %d there are %d rounds; the ratios are their medians, with
  the least and the greatest.
- **Requests**: counted at the contender's client transport by verb and
  resource, from the moment its caches synced (the namespace was empty)
  until it had been quiet for a second. The least writes an Installation
  needs are its children and one status update; events and server-side
  dry runs (which change nothing) are counted apart.
- **Latency**: after convergence, one Installation at a time, spread over
  all N, gets a new image; the time runs from the edit until the
  benchmark's watch sees the new image on the StatefulSet of shard 0. Each
  round times its own edits; the p50 and p99 are the medians of the
  rounds'. The contender so far has the operator's default resync period
  (10 minutes): no resync falls in these runs.
- **Restart and steady state**: then a new process of the contender replaces it, with a
  resync period of %s. Its writes (events included) are counted from its
  start until its first resync (the first sync of every Installation falls
  in there), then during three resync periods; then it is started twice
  more. Restart to synced runs from the start of its process until the
  caches of every kind it watches synced: the median of the three starts.
- **Memory**: for each setting (the operator's four at N=1000, as shipped
  otherwise), a new process of the contender runs on the namespace until
  its caches synced and its first syncs are done (its CPU time grew by less
  than 20 ms in a second), then reports runtime.MemStats.HeapInuse after a
  forced GC (the heap figures), HeapAlloc then (the live heap: HeapInuse
  less the free slots of the spans in use) and VmRSS after memory went
  back to the OS. The namespace also holds unrelated ConfigMaps and
  Services; it is measured before the Installations exist (0) and after,
  in the runs of one shard. Per Installation is the growth from 0 divided
  by N. The unrelated objects are there from the start, so in those runs
  the contenders also converge next to them (their label selectors keep
  them out of the caches), and so does the floor of that round: its
  namespace gets as many before it is timed.
- **Steal**: the share of the machine's CPU time that the hypervisor gave
  to other guests of its host (from /proc/stat) while each floor and each
  contender converged. A phase with much of it ran slower than the machine
  would have made it: its ratios say less.
- **Profile**: with -cpuprofile, the CPU profile of the operator's process
  while it converges and takes the edits, in the run of -profile-n
  Installations of one shard.
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
		"The operator runs with %d workers, QPS %g and burst %d (%s), and asks for no gzip, "+
		"as the command does by default; so do the floor and the benchmark's watch. The peer runs with as many "+
		"workers and controller-runtime's client defaults: no client-side rate limit, protobuf for Kubernetes' kinds.\n\n%s\n",
		s.ControlPlane, s.Workers, s.QPS, s.Burst, defaults,
		fmt.Sprintf(method, ratioN, s.Rounds, fmt.Sprint(s.ResyncSeconds)+"s"))
}

// entry is one contender's result in a run.
type entry struct {
	name contender
	res  *result
}

// entries returns the contenders' results in run, the operator first.
func (run *run) entries() []entry {
	es := []entry{{theOperator, &run.Operator}}
	if run.Peer != nil {
		es = append(es, entry{thePeer, run.Peer})
	}
	return es
}

// perInstallation returns the heap and the RSS that each Installation adds
// to res, in bytes, from its measure with no Installation to its measure
// with N, as shipped; ok is false when not measured.
func (res *result) perInstallation() (heap, rss float64, ok bool) {
	var base, shipped *memory
	for i, m := range res.Memory {
		if m.KeepManagedFields || m.WatchAllChildren {
			continue
		}
		if m.Installations == 0 {
			base = &res.Memory[i]
		} else {
			shipped = &res.Memory[i]
		}
	}
	if base == nil || shipped == nil {
		return 0, 0, false
	}
	n := float64(shipped.Installations)
	return float64(shipped.HeapInuseBytes-min(base.HeapInuseBytes, shipped.HeapInuseBytes)) / n,
		float64(shipped.RSSBytes-min(base.RSSBytes, shipped.RSSBytes)) / n, true
}

// scale returns the runs of one shard, by N, for the scale table and plots.
func (r *report) scale() []run {
	var rows []run
	for _, run := range r.Runs {
		if run.Shards == 1 {
			rows = append(rows, run)
		}
	}
	slices.SortStableFunc(rows, func(a, b run) int { return a.N - b.N })
	return rows
}

// figure is one row of a side-by-side table: how to read a figure from a
// result, whether less is better, and how to print it.
type figure struct {
	name   string
	value  func(res *result) (float64, bool)
	format func(float64) string
	// spread, if set, prints the least and greatest of the rounds too.
	spread func(res *result) spread
}

// figures are the figures compared side by side, less being better in each.
var figures = []figure{
	{name: "convergence (s)", value: func(res *result) (float64, bool) { return res.Seconds.Median, true }, format: f1,
		spread: func(res *result) spread { return res.Seconds }},
	{name: "/ floor, time", value: func(res *result) (float64, bool) { return res.Ratio.Median, true }, format: f2,
		spread: func(res *result) spread { return res.Ratio }},
	{name: "/ floor, control-plane CPU", value: func(res *result) (float64, bool) { return res.CPURatio.Median, true }, format: f2,
		spread: func(res *result) spread { return res.CPURatio }},
	{name: "own CPU while converging (s)", value: func(res *result) (float64, bool) { return res.Convergence.ProcessCPUSeconds, true }, format: f1},
	{name: "requests per Installation while converging", value: func(res *result) (float64, bool) {
		return requestsPerInstallation(res.Convergence) - 1, true
	}, format: f2},
	{name: "reads after sync", value: func(res *result) (float64, bool) {
		return float64(res.Convergence.Reads + res.Latency.Reads + total(res.Steady.Reads)), true
	}, format: f0},
	{name: "writes on restart", value: func(res *result) (float64, bool) { return float64(total(res.Steady.RestartWrites)), true }, format: f0},
	{name: "writes in 3 resyncs", value: func(res *result) (float64, bool) { return float64(total(res.Steady.ResyncWrites)), true }, format: f0},
	{name: "heap per Installation (KiB)", value: func(res *result) (float64, bool) {
		h, _, ok := res.perInstallation()
		return h / 1024, ok
	}, format: f1},
	{name: "RSS per Installation (KiB)", value: func(res *result) (float64, bool) {
		_, r, ok := res.perInstallation()
		return r / 1024, ok
	}, format: f1},
	{name: "restart to synced (s)", value: func(res *result) (float64, bool) { return res.Steady.Synced.Median, true }, format: f2},
	{name: "edit to StatefulSet p50 (ms)", value: func(res *result) (float64, bool) { return res.EditP50Ms.Median, true }, format: f1,
		spread: func(res *result) spread { return res.EditP50Ms }},
	{name: "edit to StatefulSet p99 (ms)", value: func(res *result) (float64, bool) { return res.EditP99Ms.Median, true }, format: f1,
		spread: func(res *result) spread { return res.EditP99Ms }},
}

// sideBySide writes, for each run, every figure of the operator and of the
// peer and their ratio.
func (r *report) sideBySide(b *strings.Builder) {
	b.WriteString("## The operator and its controller-runtime peer, side by side\n\n")
	b.WriteString("Less is better in every row. Where several rounds ran, the figure is their median, " +
		"with the least and the greatest in brackets.\n\n")
	for i := range r.Runs {
		run := &r.Runs[i]
		if run.Peer == nil {
			continue
		}
		fmt.Fprintf(b, "### N=%d, %d shard%s (floor %.1f s)\n\n", run.N, run.Shards, plural(run.Shards), run.FloorSeconds)
		var rows [][]string
		for _, c := range run.compared() {
			rows = append(rows, []string{c.name, c.cell(&run.Operator, c.op), c.cell(run.Peer, c.peer), ratio(c.peer, c.op)})
		}
		table(b, []string{"figure", "operator", "peer", "peer / operator"}, rows)
	}
}

// comparison is one figure of a run, the operator's and the peer's.
type comparison struct {
	figure
	op, peer float64
}

// behind tells whether the operator's figure is worse than the peer's as
// the report prints them. A difference finer than the printed precision (a
// hundredth of a ratio, a tenth of a millisecond) is finer than anything a
// run measures, and the two are level.
func (c comparison) behind() bool {
	return c.op > c.peer && c.format(c.op) != c.format(c.peer)
}

// compared returns the figures that both contenders of run have, with
// their values; none when the peer was not measured.
func (run *run) compared() []comparison {
	if run.Peer == nil {
		return nil
	}
	var out []comparison
	for _, f := range figures {
		op, okOp := f.value(&run.Operator)
		peer, okPeer := f.value(run.Peer)
		if okOp && okPeer {
			out = append(out, comparison{f, op, peer})
		}
	}
	return out
}

// cell prints v, with the spread of the rounds when there were several.
func (f figure) cell(res *result, v float64) string {
	if f.spread == nil {
		return f.format(v)
	}
	return withSpread(f.spread(res), f.format)
}

// withSpread prints the median of s, with the least and the greatest when
// they differ.
func withSpread(s spread, format func(float64) string) string {
	if s.Min == s.Max {
		return format(s.Median)
	}
	return fmt.Sprintf("%s (%s-%s)", format(s.Median), format(s.Min), format(s.Max))
}

// ratio prints a / b, "-" when both are zero and "inf" when only b is.
func ratio(a, b float64) string {
	switch {
	case a == 0 && b == 0:
		return "-"
	case b == 0:
		return "inf"
	}
	return f2(a / b)
}

// plural is "s" unless n is 1.
func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
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
	for i := range rows {
		run := &rows[i]
		for _, e := range run.entries() {
			heap, rss := "", ""
			if h, r, ok := e.res.perInstallation(); ok {
				heap, rss = kib(h), kib(r)
			}
			cells = append(cells, []string{d(run.N), string(e.name), f1(run.FloorSeconds), f1(e.res.Seconds.Median),
				"**" + f2(e.res.Ratio.Median) + "**", f2(e.res.CPURatio.Median), heap, rss, f2(e.res.Steady.Synced.Median),
				f1(e.res.EditP50Ms.Median) + " / " + f1(e.res.EditP99Ms.Median), d(total(e.res.Steady.ResyncWrites))})
		}
	}
	table(b, []string{"N", "contender", "floor (s)", "contender (s)", "contender / floor", "contender / floor, CPU",
		"heap per Installation (KiB)", "RSS per Installation (KiB)", "restart to synced (s)",
		"edit to StatefulSet p50 / p99 (ms)", "writes in 3 resyncs"}, cells)
}

// roundsTable writes each round of the runs that had several.
func (r *report) roundsTable(b *strings.Builder) {
	var rows [][]string
	for _, run := range r.Runs {
		if len(run.Rounds) < 2 {
			continue
		}
		for i, rd := range run.Rounds {
			row := append([]string{d(run.N), d(run.Shards), d(i + 1), f1(rd.FloorSeconds), f1(rd.FloorCPUSeconds)}, rd.Operator.cells(rd)...)
			if rd.Peer != nil {
				row = append(row, rd.Peer.cells(rd)...)
			} else {
				row = append(row, "", "", "", "")
			}
			rows = append(rows, append(row, f1(rd.mostSteal())))
		}
	}
	if len(rows) == 0 {
		return
	}
	b.WriteString("## Rounds\n\nEach round has floors of its own, before and after the contenders; the recorded ratios and " +
		"percentiles of edits are the medians. Steal is the share of the machine's CPU time that went to other guests of its host, " +
		"in the phase of the round that lost the most.\n\n")
	table(b, []string{"N", "shards", "round", "floor (s)", "floor control-plane CPU (s)", "operator (s)", "operator / floor",
		"operator / floor, CPU", "operator's edits p50 / p99 (ms)", "peer (s)", "peer / floor", "peer / floor, CPU",
		"peer's edits p50 / p99 (ms)", "most steal (%)"}, rows)
}

// cells are a contender's columns of the rounds table: its convergence
// and ratios to the round's floor, and its edits.
func (c contenderRound) cells(rd round) []string {
	return []string{f1(c.Seconds), f2(c.Seconds / rd.FloorSeconds), f2(c.ControlPlaneCPUSeconds / rd.FloorCPUSeconds),
		f1(c.Edits.P50Ms) + " / " + f1(c.Edits.P99Ms)}
}

// profileSection writes the top of the operator's CPU profile, if a run took it.
func (r *report) profileSection(b *strings.Builder) {
	for _, run := range r.Runs {
		if run.Profile == nil {
			continue
		}
		fmt.Fprintf(b, "## Where the operator's time goes (N=%d, shards=%d)\n\n", run.N, run.Shards)
		fmt.Fprintf(b, "The CPU profile of the operator's process (`go tool pprof -top`) from its start while it converged "+
			"the N Installations and then took the edits. Written to %s.\n\n```\n%s\n```\n\n", run.Profile.Path, strings.Join(run.Profile.Top, "\n"))
	}
}

// perRun writes a section with a table of one row per run and contender,
// which starts with the run's N, shards and the contender.
func (r *report) perRun(b *strings.Builder, title string, header []string, row func(*run, *result) []string) {
	fmt.Fprintf(b, "## %s\n\n", title)
	var rows [][]string
	for i := range r.Runs {
		run := &r.Runs[i]
		for _, e := range run.entries() {
			rows = append(rows, append([]string{d(run.N), d(run.Shards), string(e.name)}, row(run, e.res)...))
		}
	}
	table(b, append([]string{"N", "shards", "contender"}, header...), rows)
}

// convergenceTable writes the convergence times of the first round and the
// ratios to its floor.
func (r *report) convergenceTable(b *strings.Builder) {
	r.perRun(b, "Convergence (first round)", []string{"children", "floor (s), before / after", "contender (s)", "contender / floor",
		"floor children/s", "contender children/s", "control plane CPU (s): floor before / after, contender",
		"contender / floor, CPU", "contender's own CPU (s)", "steal (%): floor before / after, contender"}, func(run *run, res *result) []string {
		rd := run.Rounds[0]
		var floors, cpus, steals []string
		for _, f := range rd.Floor {
			floors = append(floors, f1(f.Seconds))
			cpus = append(cpus, f1(f.ControlPlaneCPUSeconds))
			steals = append(steals, f1(f.StealPercent))
		}
		c := res.Convergence
		children := run.N * childrenPer(run.Shards)
		return []string{d(children), strings.Join(floors, " / "), f1(c.Seconds), "**" + f2(c.Seconds/rd.FloorSeconds) + "**",
			fmt.Sprintf("%.0f", float64(children)/rd.FloorSeconds), fmt.Sprintf("%.0f", c.ChildrenPerSecond),
			strings.Join(cpus, " / ") + ", " + f1(c.ControlPlaneCPUSeconds), f2(c.ControlPlaneCPUSeconds / rd.FloorCPUSeconds),
			f1(c.ProcessCPUSeconds), strings.Join(steals, " / ") + ", " + f1(c.StealPercent)}
	})
}

// requestsTable writes what each contender asked of the API server to converge.
func (r *report) requestsTable(b *strings.Builder) {
	r.perRun(b, "Requests while converging", []string{"writes per Installation (least)", "refused with 409",
		"events per Installation", "dry runs per Installation", "gets and lists after sync", "every request after sync"},
		func(_ *run, res *result) []string {
			c := res.Convergence
			return []string{fmt.Sprintf("%.2f (%d)", c.WritesPerInstallation, c.ExpectedWrites), counts(c.Conflicts),
				f2(c.EventsPerInstallation), f2(c.DryRunsPerInstallation), d(c.Reads), counts(c.Requests)}
		})
}

// latencyTable writes the edit latencies: the percentiles as medians of
// the rounds, the rest as the first round measured them.
func (r *report) latencyTable(b *strings.Builder) {
	r.perRun(b, "Edit to StatefulSet update, under N in-sync Installations", []string{"edits per round", "p50 (ms), rounds' median",
		"p99 (ms), rounds' median", "max (ms), first round", "writes per edit (least), first round", "dry runs per edit, first round"},
		func(_ *run, res *result) []string {
			l := res.Latency
			return []string{d(l.Samples), withSpread(res.EditP50Ms, f1), withSpread(res.EditP99Ms, f1), f1(l.MaxMs),
				fmt.Sprintf("%.2f (%d)", l.WritesPerEdit, l.ExpectedWrites), f2(l.DryRunsPerEdit)}
		})
}

// steadyTable writes the requests of a restart and of steady state.
func (r *report) steadyTable(b *strings.Builder) {
	r.perRun(b, "Restart and steady state", []string{"restart to synced (s)", "requests to sync", "writes on restart",
		"writes in 3 resyncs", "reads after sync"}, func(_ *run, res *result) []string {
		s := res.Steady
		return []string{f2(s.Synced.Median), counts(s.SyncRequests), counts(s.RestartWrites), counts(s.ResyncWrites),
			counts(s.Reads)}
	})
}

// memoryTable writes the memory of each setting at each size.
func (r *report) memoryTable(b *strings.Builder) {
	fmt.Fprintf(b, "## Memory, with %d unrelated ConfigMaps and %d unrelated Services in the namespace\n\n",
		r.Settings.Unrelated, r.Settings.Unrelated)
	var rows [][]string
	for i := range r.Runs {
		run := &r.Runs[i]
		for _, e := range run.entries() {
			for _, m := range e.res.Memory {
				heap, rss := "", ""
				if base, ok := e.res.baseline(m); ok && m.Installations > 0 {
					heap = kib(float64(m.HeapInuseBytes-min(base.HeapInuseBytes, m.HeapInuseBytes)) / float64(m.Installations))
					rss = kib(float64(m.RSSBytes-min(base.RSSBytes, m.RSSBytes)) / float64(m.Installations))
				}
				rows = append(rows, []string{d(m.Installations), d(run.Shards), string(e.name), setting(!m.KeepManagedFields, "stripped", "kept"),
					setting(!m.WatchAllChildren, "managed only", "all"), mib(m.HeapInuseBytes), mib(m.HeapAllocBytes), mib(m.RSSBytes), heap, rss, d(m.Writes)})
			}
		}
	}
	table(b, []string{"Installations", "shards", "contender", "managedFields", "children watched", "heap in use (MiB)", "live heap (MiB)", "RSS (MiB)",
		"heap per Installation (KiB)", "RSS per Installation (KiB)", "writes"}, rows)
}

// baseline returns the measurement of res with no Installation and the
// same setting as m.
func (res *result) baseline(m memory) (memory, bool) {
	for _, base := range res.Memory {
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

// growth is a figure whose growth from one N to another the growth table
// shows.
type growth struct {
	name  string
	value func(run *run, res *result) (float64, bool)
}

// growths are the figures of the growth table.
var growths = []growth{
	{"convergence (s)", func(_ *run, res *result) (float64, bool) { return res.Seconds.Median, true }},
	{"control-plane CPU while converging (s)", func(_ *run, res *result) (float64, bool) {
		return res.Convergence.ControlPlaneCPUSeconds, true
	}},
	{"own CPU while converging (s)", func(_ *run, res *result) (float64, bool) { return res.Convergence.ProcessCPUSeconds, true }},
	{"heap in use (MiB)", func(run *run, res *result) (float64, bool) {
		for _, m := range res.Memory {
			if m.Installations == run.N && !m.KeepManagedFields && !m.WatchAllChildren {
				return float64(m.HeapInuseBytes) / (1 << 20), true
			}
		}
		return 0, false
	}},
	{"restart to synced (s)", func(_ *run, res *result) (float64, bool) { return res.Steady.Synced.Median, true }},
	{"edit to StatefulSet p99 (ms)", func(_ *run, res *result) (float64, bool) { return res.EditP99Ms.Median, true }},
}

// growthTable writes how each figure grew from the run of ratioN
// Installations of one shard to the largest, if that is larger: by what
// factor, and that factor over the factor of N (1 is linear).
func (r *report) growthTable(b *strings.Builder) {
	rows := r.scale()
	i := slices.IndexFunc(rows, func(run run) bool { return run.N == ratioN })
	if i < 0 || rows[len(rows)-1].N <= ratioN {
		return
	}
	from, to := &rows[i], &rows[len(rows)-1]
	scale := float64(to.N) / float64(from.N)
	fmt.Fprintf(b, "## Growth from N=%d to N=%d (one shard)\n\n", from.N, to.N)
	fmt.Fprintf(b, "N grew %.0f times. The last column is the growth over that: 1 is linear, more is worse than linear.\n\n", scale)
	var cells [][]string
	cells = append(cells, growthRow("floor (s)", "", from.FloorSeconds, to.FloorSeconds, scale))
	for _, g := range growths {
		for _, e := range from.entries() {
			res2 := &to.Operator
			if e.name == thePeer {
				if res2 = to.Peer; res2 == nil {
					continue
				}
			}
			v1, ok1 := g.value(from, e.res)
			v2, ok2 := g.value(to, res2)
			if ok1 && ok2 {
				cells = append(cells, growthRow(g.name, string(e.name), v1, v2, scale))
			}
		}
	}
	table(b, []string{"figure", "contender", fmt.Sprintf("N=%d", from.N), fmt.Sprintf("N=%d", to.N), "grew", "grew / N grew"}, cells)
}

// growthRow is one row of the growth table.
func growthRow(name, who string, v1, v2, scale float64) []string {
	grew := ratio(v2, v1)
	per := "-"
	if v1 > 0 {
		per = f2(v2 / v1 / scale)
	}
	return []string{name, who, f2(v1), f2(v2), grew, per}
}
