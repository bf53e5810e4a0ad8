package main

import (
	"context"
	"errors"
	"fmt"

	"lin.dev/lin-operator/pkg/operator"
	"lin.dev/lin-operator/test/harness"
)

// run is every figure measured for one number of Installations and one layout.
type run struct {
	// N is the number of Installations, Shards the shards of each.
	N      int `json:"n"`
	Shards int `json:"shards"`
	// Floor are the two floor runs, made before and after the operator's,
	// each on a new control plane as the operator's is, so that the
	// machine's drift falls on both sides.
	Floor []floorResult `json:"floor"`
	// FloorSeconds is their mean, and Ratio the operator's time over it.
	FloorSeconds float64 `json:"floorSeconds"`
	Ratio        float64 `json:"ratio"`
	// CPURatio is the control plane's CPU time while the operator converged
	// over its mean CPU time in the floor runs.
	CPURatio    float64     `json:"cpuRatio"`
	Convergence convergence `json:"convergence"`
	Steady      steadyState `json:"steady"`
	Latency     editLatency `json:"latency"`
	// Memory is measured in the runs of one shard only: first with no
	// Installation in the namespace (its unrelated objects only), then with N.
	Memory []memory `json:"memory,omitempty"`
	// Profile is the top of the operator's CPU profile, if this run took it.
	Profile *cpuProfile `json:"profile,omitempty"`
}

// runOne measures the operator on a run of size.N Installations of
// size.Shards shards: convergence, edit latency, a restart and its steady
// state and, if withMemory, memory with unrelated objects next to the
// Installations. With withProfile it takes the CPU profile of the operator
// while it converges and is edited. measure runs the floors apart.
func (b *bench) runOne(ctx context.Context, size runSize, withMemory, withProfile bool) (r run, err error) {
	n, shards := size.N, size.Shards
	r = run{N: n, Shards: shards}
	ns, err := b.namespace(ctx, "operator")
	if err != nil {
		return r, err
	}
	if withMemory {
		if r.Memory, err = b.emptyMemory(ctx, ns, n); err != nil {
			return r, err
		}
	}
	if err := b.convergeAndEdit(ctx, &r, ns, withProfile); err != nil {
		return r, err
	}
	if r.Steady, err = b.restart(ctx, ns); err != nil {
		return r, err
	}
	logf("n=%d shards=%d: restart synced in %.2fs; writes on restart %v, in 3 resyncs %v, reads %v", n, shards,
		r.Steady.SyncedSeconds, r.Steady.RestartWrites, r.Steady.ResyncWrites, r.Steady.Reads)
	if withMemory {
		m, err := b.memory(ctx, ns, n, n)
		r.Memory = append(r.Memory, m...)
		return r, err
	}
	return r, nil
}

// setFloor records the two floor runs and the operator's ratios to their mean.
func (r *run) setFloor(first, second floorResult) {
	r.Floor = []floorResult{first, second}
	r.FloorSeconds = (first.Seconds + second.Seconds) / 2
	r.Ratio = r.Convergence.Seconds / r.FloorSeconds
	r.CPURatio = 2 * r.Convergence.ControlPlaneCPUSeconds / (first.ControlPlaneCPUSeconds + second.ControlPlaneCPUSeconds)
	logf("n=%d shards=%d: floor %.1fs and %.1fs, operator %.1fs: %.2fx; control plane CPU %.2fx", r.N, r.Shards,
		first.Seconds, second.Seconds, r.Convergence.Seconds, r.Ratio, r.CPURatio)
}

// timedFloor runs the floor and logs how long it took.
func (b *bench) timedFloor(ctx context.Context, n, shards int) (floorResult, error) {
	f, err := b.floor(ctx, n, shards)
	if err == nil {
		logf("n=%d shards=%d: floor took %.1fs", n, shards, f.Seconds)
	}
	return f, err
}

// convergeAndEdit runs an operator with the command's resync period on the
// empty namespace ns, times its convergence, then the latency of edits,
// under a CPU profile with withProfile.
func (b *bench) convergeAndEdit(ctx context.Context, r *run, ns string, withProfile bool) (err error) {
	op, _, err := b.startOperator(ctx, ns, operator.DefaultResyncPeriod)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, op.Stop()) }()
	if withProfile {
		stop, err := profile(b.o.cpuProfile)
		if err != nil {
			return err
		}
		defer func() {
			stop()
			if err == nil {
				r.Profile, err = topOfProfile(b.o.cpuProfile)
			}
		}()
	}
	if r.Convergence, err = b.converge(ctx, op, ns, r.N, r.Shards); err != nil {
		return err
	}
	logf("n=%d shards=%d: operator took %.1fs; requests %s; conflicts %s", r.N, r.Shards, r.Convergence.Seconds,
		harness.Format(r.Convergence.Requests), harness.Format(r.Convergence.Conflicts))
	if r.Latency, err = b.latency(ctx, op, ns, r.N, r.Shards); err != nil {
		return err
	}
	logf("n=%d shards=%d: edit latency p50 %.0fms p99 %.0fms", r.N, r.Shards, r.Latency.P50Ms, r.Latency.P99Ms)
	return nil
}

// emptyMemory fills ns with unrelated objects and measures the memory of an
// operator watching it before any of the run's runN Installations is there.
func (b *bench) emptyMemory(ctx context.Context, ns string, runN int) ([]memory, error) {
	if err := b.addUnrelated(ctx, ns, b.o.unrelated); err != nil {
		return nil, fmt.Errorf("creating unrelated objects: %w", err)
	}
	return b.memory(ctx, ns, 0, runN)
}
