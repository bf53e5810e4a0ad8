// Command bench measures lin-operator against a local control plane
// (kube-apiserver, and etcd syncing every write to disk, which is what bounds
// the rate of writes): how fast it converges N Installations next to a plain
// client writing the same objects, which requests it makes, what it writes in
// steady state and on a restart, how long an edit takes to reach a
// StatefulSet, and how much memory it holds with and without the dropping of
// managedFields and the label filter. It writes docs/benchmarks.md and docs/benchmarks.json.
//
// `make bench` runs it with the defaults and a CPU profile; `go run
// ./cmd/bench -runs 50:1` is a quick check.
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
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"lin.dev/lin-operator/test/env"
)

// started is when the benchmark began; progress lines carry the time since.
var started = time.Now()

func main() {
	klog.InitFlags(nil)
	var o options
	o.bind(flag.CommandLine)
	flag.Parse()
	if o.child.enabled {
		if o.child.heapProfile != "" {
			// Every allocation, so that the profile accounts for all that is held.
			runtime.MemProfileRate = 1
		}
		if err := runMemoryChild(o); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if err := o.validate(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := benchmark(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// benchmark runs every size and layout, each phase on a control plane of
// its own, and writes the report.
func benchmark(ctx context.Context, o options) error {
	rep := newReport(o)
	runs := o.runs
	if o.large {
		runs = append(runs, runSize{N: 10000, Shards: 1})
	}
	for _, size := range runs {
		r, err := measure(ctx, o, size)
		if err != nil {
			return fmt.Errorf("n=%d shards=%d: %w", size.N, size.Shards, err)
		}
		rep.Runs = append(rep.Runs, r)
	}
	rep.finish()
	logf("writing %s and %s", o.markdown, o.jsonPath)
	return rep.write(o.markdown, o.jsonPath)
}

// measure measures one size: the floor, the operator, and the floor again,
// each on a control plane of its own, so that the three start alike. An API
// server and etcd that hold more objects serve each request more slowly
// (the ClusterIP allocator, for one, counts every address it gave on each
// Service it makes): on one control plane the operator would start where
// the first floor left off, and the second floor where the operator did.
func measure(ctx context.Context, o options, size runSize) (r run, err error) {
	var first, second floorResult
	floor := func(f *floorResult) func(b *bench) error {
		return func(b *bench) (err error) {
			*f, err = b.timedFloor(ctx, size.N, size.Shards)
			return err
		}
	}
	if err := onNewControlPlane(ctx, o, floor(&first)); err != nil {
		return r, err
	}
	err = onNewControlPlane(ctx, o, func(b *bench) (err error) {
		r, err = b.runOne(ctx, size, o.memory && size.Shards == 1, o.cpuProfile != "" && size == runSize{o.profileN, 1})
		return err
	})
	if err != nil {
		return r, err
	}
	if err := onNewControlPlane(ctx, o, floor(&second)); err != nil {
		return r, err
	}
	r.setFloor(first, second)
	return r, nil
}

// onNewControlPlane starts a control plane, runs fn with a bench on it and
// stops it.
func onNewControlPlane(ctx context.Context, o options, fn func(b *bench) error) (err error) {
	e, err := env.Start(ctx, env.Options{
		Mode: env.APIServer, Fsync: true, ServiceClusterIPRange: "10.96.0.0/16", KeepDir: o.keepDir, Logf: logf,
	})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, e.Stop()) }()
	operatorLog, err := logOperatorTo(filepath.Join(e.Dir, "logs", "operator.log"))
	if err != nil {
		return err
	}
	defer func() { klog.Flush(); err = errors.Join(err, operatorLog.Close()) }()
	logf("control plane in %s (the operator's log is logs/operator.log there)", e.Dir)
	b, err := newBench(o, e)
	if err != nil {
		return err
	}
	// The first writes to a new API server are slow (connections, caches,
	// the CRD's storage); a floor run that is not reported absorbs that.
	if _, err := b.floor(ctx, 50, 1); err != nil {
		return fmt.Errorf("warming up: %w", err)
	}
	return fn(b)
}

// logOperatorTo sends the operator's klog output, errors included, to a
// new file, so that its lines do not bury the benchmark's progress; the
// caller closes it.
func logOperatorTo(path string) (*os.File, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := flag.Set("stderrthreshold", "FATAL"); err != nil {
		return nil, errors.Join(err, f.Close())
	}
	klog.LogToStderr(false)
	klog.SetOutput(f)
	return f, nil
}

// logf prints a progress line with the time since the start.
func logf(format string, args ...any) {
	fmt.Printf("[%6.1fs] %s\n", time.Since(started).Seconds(), fmt.Sprintf(format, args...))
}
