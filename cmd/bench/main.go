// Command bench measures lin-operator, and its peer written with
// controller-runtime (cmd/bench/peer), against a local control plane
// (kube-apiserver, and etcd syncing every write to disk, which is what bounds
// the rate of writes): how fast each converges N Installations next to a plain
// client writing the same objects, which requests it makes, what it writes in
// steady state and on a restart, how long an edit takes to reach a
// StatefulSet, and how much memory and CPU it takes, the operator's memory
// also without the dropping of managedFields and the label filter. Each
// contender runs in a process of its own. It writes docs/benchmarks.md and
// docs/benchmarks.json.
//
// `make bench` runs it with the defaults and a CPU profile; `go run
// ./cmd/bench -runs 50:1 -rounds 1` is a quick check.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"lin.dev/lin-operator/test/env"
	"lin.dev/lin-operator/test/harness"
)

// started is when the benchmark began; progress lines carry the time since.
var started = time.Now()

func main() {
	klog.InitFlags(nil)
	var o options
	o.bind(flag.CommandLine)
	flag.Parse()
	if o.child.enabled {
		if o.child.heapProfile {
			// Every allocation, so that the profile accounts for all that is held.
			runtime.MemProfileRate = 1
		}
		if err := runOperatorChild(o); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if err := o.validate(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if o.render {
		r, err := readReport(o.jsonPath)
		if err == nil {
			err = r.render(o.markdown, o.notes)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := benchmark(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// benchmark builds the peer, runs every size and layout, each phase on a
// control plane of its own, and writes the report.
func benchmark(ctx context.Context, o options) error {
	rep := newReport(o)
	runs := o.runs
	if o.large {
		runs = append(slices.Clip(runs), largeRuns...)
	}
	var peer string
	if o.peer {
		dir, err := os.MkdirTemp("", "lin-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if peer, err = buildPeer(o.peerDir, dir); err != nil {
			return err
		}
	}
	for _, size := range runs {
		r, err := measure(ctx, o, peer, size)
		if err != nil {
			return fmt.Errorf("n=%d shards=%d: %w", size.N, size.Shards, err)
		}
		rep.Runs = append(rep.Runs, r)
	}
	rep.finish()
	logf("writing %s and %s", o.markdown, o.jsonPath)
	return rep.write(o.markdown, o.jsonPath, o.notes)
}

// buildPeer builds the controller-runtime peer of the module in dir into
// out, and returns the binary's path.
func buildPeer(dir, out string) (string, error) {
	logf("building the controller-runtime peer in %s", dir)
	bin := filepath.Join(out, "peer")
	return bin, harness.GoBuild(dir, "./cmd", bin)
}

// measure measures one size in rounds: in each, the floor, every
// contender, and the floor again, each on a control plane of its own, so
// that they start alike. An API server and etcd that hold more objects
// serve each request more slowly (the ClusterIP allocator, for one, counts
// every address it gave on each Service it makes): on one control plane
// the operator would start where the first floor left off, and the second
// floor where the operator did. The first round measures every figure; the
// others, at N up to ratioN, convergence and edits alone.
func measure(ctx context.Context, o options, peer string, size runSize) (r run, err error) {
	r = run{N: size.N, Shards: size.Shards}
	rounds := 1
	if size.N <= ratioN {
		rounds = o.rounds
	}
	for i := range rounds {
		var rd round
		var first, second floorResult
		// The round that measures memory puts unrelated objects next to the
		// contenders' Installations before they converge; the floor gets
		// them too, so that both write next to as many objects.
		unrelated := 0
		if i == 0 && o.memory && size.Shards == 1 {
			unrelated = o.unrelated
		}
		floor := func(f *floorResult) func(b *bench) error {
			return func(b *bench) (err error) {
				*f, err = b.timedFloor(ctx, size, unrelated)
				return err
			}
		}
		if err := onNewControlPlane(ctx, o, peer, floor(&first)); err != nil {
			return r, err
		}
		for _, c := range o.contenders() {
			var cr contenderRound
			err := onNewControlPlane(ctx, o, peer, func(b *bench) (err error) {
				if i > 0 {
					cr, err = b.convergeAndEditOnly(ctx, c, size)
					return err
				}
				withMemory := o.memory && size.Shards == 1
				withProfile := c == theOperator && o.cpuProfile != "" && size == runSize{o.profileN, 1}
				res, prof, err := b.runOne(ctx, c, size, withMemory, withProfile)
				cr = contenderRound{res.Convergence, res.Latency}
				if c == thePeer {
					r.Peer = &res
				} else {
					r.Operator, r.Profile = res, prof
				}
				return err
			})
			if err != nil {
				return r, err
			}
			if c == thePeer {
				rd.Peer = &cr
			} else {
				rd.Operator = cr
			}
		}
		if err := onNewControlPlane(ctx, o, peer, floor(&second)); err != nil {
			return r, err
		}
		rd.setFloor(first, second)
		r.Rounds = append(r.Rounds, rd)
		logf("n=%d shards=%d: round %d of %d done", size.N, size.Shards, i+1, rounds)
	}
	r.summarize()
	return r, nil
}

// onNewControlPlane starts a control plane, runs fn with a bench on it and
// stops it.
func onNewControlPlane(ctx context.Context, o options, peer string, fn func(b *bench) error) (err error) {
	e, err := env.Start(ctx, env.Options{
		Mode: env.APIServer, Fsync: true, ServiceClusterIPRange: "10.96.0.0/16", KeepDir: o.keepDir, Logf: logf,
	})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, e.Stop()) }()
	logf("control plane in %s (the contenders' logs are in logs/ there)", e.Dir)
	b, err := newBench(o, e)
	if err != nil {
		return err
	}
	// The first writes to a new API server are slow (connections, caches,
	// the CRD's storage); a floor run that is not reported absorbs that.
	if _, err := b.floor(ctx, 50, 1, 0); err != nil {
		return fmt.Errorf("warming up: %w", err)
	}
	b.peerBinary = peer
	return fn(b)
}

// logf prints a progress line with the time since the start.
func logf(format string, args ...any) {
	fmt.Printf("[%6.1fs] %s\n", time.Since(started).Seconds(), fmt.Sprintf(format, args...))
}
