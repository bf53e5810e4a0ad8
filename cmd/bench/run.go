package main

import (
	"context"
	"errors"
	"slices"

	"lin.dev/lin-operator/pkg/operator"
	"lin.dev/lin-operator/test/harness"
)

// run is every figure measured for one number of Installations and one layout.
type run struct {
	// N is the number of Installations, Shards the shards of each.
	N      int `json:"n"`
	Shards int `json:"shards"`
	// Rounds are the measures of convergence and of edits, each of the
	// floor and of every contender on control planes of their own: the
	// first round measures every other figure too; more rounds (-rounds, at
	// N up to ratioN) measure convergence and edits alone.
	Rounds []round `json:"rounds"`
	// FloorSeconds is the median of the rounds' floors.
	FloorSeconds float64 `json:"floorSeconds"`
	// Operator is lin-operator; Peer the controller-runtime peer, if measured.
	Operator result  `json:"operator"`
	Peer     *result `json:"peer,omitempty"`
	// Profile is the top of the operator's CPU profile, if this run took it.
	Profile *cpuProfile `json:"profile,omitempty"`
}

// round is one measure of convergence: the floor just before and just
// after the contenders, and each contender, each on a new control plane,
// so that the machine's drift falls on both sides.
type round struct {
	Floor []floorResult `json:"floor"`
	// FloorSeconds and FloorCPUSeconds are the means of the two floors.
	FloorSeconds    float64 `json:"floorSeconds"`
	FloorCPUSeconds float64 `json:"floorCPUSeconds"`
	// Operator and Peer are what the contenders did in the round.
	Operator contenderRound  `json:"operator"`
	Peer     *contenderRound `json:"peer,omitempty"`
}

// contenderRound is what one contender did in a round: it converged, then
// took the edits. A single run of edits has a p99 that one slow request
// moves, so each round times its own and the recorded percentiles are
// their medians, as the ratios are.
type contenderRound struct {
	convergence
	Edits editLatency `json:"edits"`
}

// result is what one contender did in a run.
type result struct {
	// Seconds is the convergence time, Ratio its ratio to the floor and
	// CPURatio the control plane's CPU time while it converged over the
	// floor's: medians over the rounds, with their spread.
	Seconds  spread `json:"seconds"`
	Ratio    spread `json:"ratio"`
	CPURatio spread `json:"cpuRatio"`
	// EditP50Ms and EditP99Ms are the percentiles of edit to StatefulSet:
	// the medians over the rounds of each round's, with their spread.
	EditP50Ms spread `json:"editP50Ms"`
	EditP99Ms spread `json:"editP99Ms"`
	// Convergence, Steady and Latency are those of the first round.
	Convergence convergence `json:"convergence"`
	Steady      steadyState `json:"steady"`
	Latency     editLatency `json:"latency"`
	// Memory is measured in the runs of one shard only: first with no
	// Installation in the namespace (its unrelated objects only), then with N.
	Memory []memory `json:"memory,omitempty"`
}

// spread is the median of some figures, with the least and the greatest.
type spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// spreadOf returns the spread of values, which must not be empty.
func spreadOf(values []float64) spread {
	v := slices.Sorted(slices.Values(values))
	mid := v[len(v)/2]
	if len(v)%2 == 0 {
		mid = (v[len(v)/2-1] + mid) / 2
	}
	return spread{Median: mid, Min: v[0], Max: v[len(v)-1]}
}

// contenders returns the contenders the options measure.
func (o options) contenders() []contender {
	if o.peer {
		return []contender{theOperator, thePeer}
	}
	return []contender{theOperator}
}

// runOne measures contender c on a run of size.N Installations of
// size.Shards shards: convergence, edit latency, a restart and its steady
// state and, if withMemory, memory with unrelated objects next to the
// Installations. With withProfile it takes the CPU profile of the operator
// while it converges and is edited. measure runs the floors apart.
func (b *bench) runOne(ctx context.Context, c contender, size runSize, withMemory, withProfile bool) (r result, prof *cpuProfile, err error) {
	n, shards := size.N, size.Shards
	ns, err := b.namespace(ctx, string(c))
	if err != nil {
		return r, nil, err
	}
	if withMemory {
		if r.Memory, err = b.emptyMemory(ctx, c, ns, n); err != nil {
			return r, nil, err
		}
	}
	if prof, err = b.convergeAndEdit(ctx, c, &r, ns, size, withProfile); err != nil {
		return r, nil, err
	}
	if r.Steady, err = b.restart(ctx, c, ns); err != nil {
		return r, nil, err
	}
	logf("n=%d shards=%d: %s restart synced in %.2fs; writes on restart %v, in 3 resyncs %v, reads %v", n, shards, c,
		r.Steady.Synced.Median, r.Steady.RestartWrites, r.Steady.ResyncWrites, r.Steady.Reads)
	if withMemory {
		m, err := b.memory(ctx, c, ns, n, n)
		r.Memory = append(r.Memory, m...)
		return r, prof, err
	}
	return r, prof, nil
}

// convergeAndEditOnly measures the convergence of contender c and the
// latency of edits alone, for the rounds after the first.
func (b *bench) convergeAndEditOnly(ctx context.Context, c contender, size runSize) (contenderRound, error) {
	ns, err := b.namespace(ctx, string(c))
	if err != nil {
		return contenderRound{}, err
	}
	var r result
	_, err = b.convergeAndEdit(ctx, c, &r, ns, size, false)
	return contenderRound{r.Convergence, r.Latency}, err
}

// setFloor records the two floor runs of a round.
func (rd *round) setFloor(first, second floorResult) {
	rd.Floor = []floorResult{first, second}
	rd.FloorSeconds = (first.Seconds + second.Seconds) / 2
	rd.FloorCPUSeconds = (first.ControlPlaneCPUSeconds + second.ControlPlaneCPUSeconds) / 2
}

// summarize sets the medians of the rounds: the floor's, and each
// contender's time and ratios.
func (r *run) summarize() {
	var floors []float64
	for _, rd := range r.Rounds {
		floors = append(floors, rd.FloorSeconds)
	}
	r.FloorSeconds = spreadOf(floors).Median
	for _, e := range r.entries() {
		var seconds, ratios, cpus, p50s, p99s []float64
		for _, rd := range r.Rounds {
			c := rd.of(e.name)
			seconds = append(seconds, c.Seconds)
			ratios = append(ratios, c.Seconds/rd.FloorSeconds)
			cpus = append(cpus, c.ControlPlaneCPUSeconds/rd.FloorCPUSeconds)
			p50s = append(p50s, c.Edits.P50Ms)
			p99s = append(p99s, c.Edits.P99Ms)
		}
		e.res.Seconds, e.res.Ratio, e.res.CPURatio = spreadOf(seconds), spreadOf(ratios), spreadOf(cpus)
		e.res.EditP50Ms, e.res.EditP99Ms = spreadOf(p50s), spreadOf(p99s)
		logf("n=%d shards=%d: %s / floor %.2fx (%.2f-%.2f), control plane CPU %.2fx (%.2f-%.2f), edits p50 %.1fms (%.1f-%.1f) "+
			"p99 %.1fms (%.1f-%.1f) over %d rounds", r.N, r.Shards, e.name, e.res.Ratio.Median, e.res.Ratio.Min, e.res.Ratio.Max,
			e.res.CPURatio.Median, e.res.CPURatio.Min, e.res.CPURatio.Max, e.res.EditP50Ms.Median, e.res.EditP50Ms.Min,
			e.res.EditP50Ms.Max, e.res.EditP99Ms.Median, e.res.EditP99Ms.Min, e.res.EditP99Ms.Max, len(r.Rounds))
	}
}

// of returns what contender c did in the round; every round of a run
// measures the same contenders.
func (rd round) of(c contender) contenderRound {
	if c == thePeer {
		return *rd.Peer
	}
	return rd.Operator
}

// timedFloor runs the floor of size, next to unrelated objects, and logs
// how long it took.
func (b *bench) timedFloor(ctx context.Context, size runSize, unrelated int) (floorResult, error) {
	f, err := b.floor(ctx, size.N, size.Shards, unrelated)
	if err == nil {
		logf("n=%d shards=%d: floor took %.1fs (steal %.1f%%)", size.N, size.Shards, f.Seconds, f.StealPercent)
	}
	return f, err
}

// convergeAndEdit runs contender c with the command's resync period on the
// empty namespace ns, times its convergence, then the latency of edits,
// under a CPU profile of the operator with withProfile.
func (b *bench) convergeAndEdit(ctx context.Context, c contender, r *result, ns string, size runSize, withProfile bool) (prof *cpuProfile, err error) {
	co := childOptions{resync: operator.DefaultResyncPeriod}
	if withProfile {
		co.cpuProfile = b.o.cpuProfile
	}
	ch, _, err := b.startChild(ctx, c, ns, co)
	if err != nil {
		return nil, err
	}
	defer func() {
		err = errors.Join(err, ch.stop())
		if err == nil && withProfile {
			prof, err = topOfProfile(b.o.cpuProfile)
		}
	}()
	if r.Convergence, err = b.converge(ctx, ch, ns, size.N, size.Shards); err != nil {
		return nil, err
	}
	logf("n=%d shards=%d: %s took %.1fs (its own CPU %.1fs, steal %.1f%%); requests %s; conflicts %s", size.N, size.Shards, c,
		r.Convergence.Seconds, r.Convergence.ProcessCPUSeconds, r.Convergence.StealPercent, harness.Format(r.Convergence.Requests), harness.Format(r.Convergence.Conflicts))
	if r.Latency, err = b.latency(ctx, ch, ns, size.N, size.Shards); err != nil {
		return nil, err
	}
	logf("n=%d shards=%d: %s edit latency p50 %.0fms p99 %.0fms", size.N, size.Shards, c, r.Latency.P50Ms, r.Latency.P99Ms)
	return nil, nil
}

// emptyMemory fills ns with unrelated objects and measures the memory of
// contender c watching it before any of the run's runN Installations is there.
func (b *bench) emptyMemory(ctx context.Context, c contender, ns string, runN int) ([]memory, error) {
	if err := b.addUnrelated(ctx, ns, b.o.unrelated); err != nil {
		return nil, err
	}
	return b.memory(ctx, c, ns, 0, runN)
}

// mostSteal returns the highest steal of the round's phases, in percent.
func (rd round) mostSteal() float64 {
	most := rd.Operator.StealPercent
	if rd.Peer != nil {
		most = max(most, rd.Peer.StealPercent)
	}
	for _, f := range rd.Floor {
		most = max(most, f.StealPercent)
	}
	return most
}
