package main

import (
	"context"
	"errors"
	"time"

	"lin.dev/lin-operator/test/harness"
)

// steadyState is what a restarted contender asks of the API server when
// every Installation is in sync.
type steadyState struct {
	// SyncedSeconds is the time from the start of its process until its
	// caches synced.
	SyncedSeconds float64 `json:"syncedSeconds"`
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

// restart starts contender c anew with the benchmark's short resync period
// on ns, whose Installations are in sync, and counts its requests until its
// first resync, then for three resync periods more.
func (b *bench) restart(ctx context.Context, c contender, ns string) (st steadyState, err error) {
	ch, synced, err := b.startChild(ctx, c, ns, childOptions{resync: b.o.resync})
	if err != nil {
		return st, err
	}
	defer func() { err = errors.Join(err, ch.stop()) }()
	atSync, err := ch.requests(ctx)
	if err != nil {
		return st, err
	}
	if err := sleep(ctx, b.o.resync-synced); err != nil {
		return st, err
	}
	atFirstResync, err := ch.requests(ctx)
	if err != nil {
		return st, err
	}
	if err := sleep(ctx, 3*b.o.resync); err != nil {
		return st, err
	}
	atEnd, err := ch.requests(ctx)
	if err != nil {
		return st, err
	}
	st = steadyState{
		SyncedSeconds: synced.Seconds(),
		SyncRequests:  atSync,
		RestartWrites: writes(atFirstResync),
		ResyncWrites:  writes(harness.Diff(atEnd, atFirstResync)),
		Reads:         harness.Reads(harness.Diff(atEnd, atSync)),
	}
	return st, nil
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
