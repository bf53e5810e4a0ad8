package main

import (
	"context"
	"errors"
	"time"

	"lin.dev/lin-operator/pkg/operator"
	"lin.dev/lin-operator/test/harness"
)

// steadyState is what a restarted contender asks of the API server when
// every Installation is in sync.
type steadyState struct {
	// Synced is the time from the start of its process until its caches
	// synced, over restartSamples starts.
	Synced spread `json:"synced"`
	// SyncRequests are the requests it made to fill its caches: a list (or
	// a watch that lists) per kind.
	SyncRequests map[string]int `json:"syncRequests"`
	// RestartWrites are its writes, events included, from its start until its
	// first resync: the first sync of every Installation falls in there.
	RestartWrites map[string]int `json:"restartWrites"`
	// ResyncWrites are its writes during the three resync periods after that.
	ResyncWrites map[string]int `json:"resyncWrites"`
	// Reads are its gets and lists after its caches synced, in both periods.
	Reads map[string]int `json:"reads"`
}

// restartSamples is how many starts time restart to synced: one start is
// timed by the machine's other work as much as by the contender.
const restartSamples = 3

// restart starts contender c anew with the benchmark's short resync period
// on ns, whose Installations are in sync, and counts its requests until its
// first resync, then for three resync periods more. Then it starts c again,
// restartSamples-1 times with the default resync period, to time the start
// alone, and stops it once its first syncs are done; the writes of those
// starts count as writes on restart too.
func (b *bench) restart(ctx context.Context, c contender, ns string) (st steadyState, err error) {
	st, synced, err := b.steady(ctx, c, ns)
	if err != nil {
		return st, err
	}
	times := []float64{synced.Seconds()}
	for range restartSamples - 1 {
		// With the default resync period: with the short one, a large N
		// keeps the contender busy from one resync to the next, and it would
		// never be idle.
		ch, synced, err := b.startChild(ctx, c, ns, childOptions{resync: operator.DefaultResyncPeriod})
		if err != nil {
			return st, err
		}
		times = append(times, synced.Seconds())
		// Stopped once its first syncs are done, as the steady one was.
		err = idle(ctx, ch)
		reqs, rerr := ch.requests(ctx)
		if err = errors.Join(err, rerr, ch.stop()); err != nil {
			return st, err
		}
		for k, v := range writes(reqs) {
			st.RestartWrites[k] += v
		}
	}
	st.Synced = spreadOf(times)
	return st, nil
}

// steady starts contender c on ns and counts its requests until its first
// resync, then for three resync periods more. It returns them, and the
// time its caches took to sync.
func (b *bench) steady(ctx context.Context, c contender, ns string) (st steadyState, synced time.Duration, err error) {
	ch, synced, err := b.startChild(ctx, c, ns, childOptions{resync: b.o.resync})
	if err != nil {
		return st, 0, err
	}
	defer func() { err = errors.Join(err, ch.stop()) }()
	atSync, err := ch.requests(ctx)
	if err != nil {
		return st, 0, err
	}
	if err := sleep(ctx, b.o.resync-synced); err != nil {
		return st, 0, err
	}
	atFirstResync, err := ch.requests(ctx)
	if err != nil {
		return st, 0, err
	}
	if err := sleep(ctx, 3*b.o.resync); err != nil {
		return st, 0, err
	}
	atEnd, err := ch.requests(ctx)
	if err != nil {
		return st, 0, err
	}
	st = steadyState{
		SyncRequests:  atSync,
		RestartWrites: writes(atFirstResync),
		ResyncWrites:  writes(harness.Diff(atEnd, atFirstResync)),
		Reads:         harness.Reads(harness.Diff(atEnd, atSync)),
	}
	return st, synced, nil
}

// sleep waits for d, or less if ctx ends first.
func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
