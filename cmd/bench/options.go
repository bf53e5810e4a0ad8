package main

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"lin.dev/lin-operator/pkg/operator"
)

// options are the benchmark's flags.
type options struct {
	// sizes are the numbers of Installations, run one after the other.
	sizes intList
	// layouts are the shard counts of every Installation, run for each size.
	layouts intList
	// workers is the operator's --workers, and the concurrency of the floor
	// and of the client that creates Installations.
	workers int
	// qps and burst are the operator's client-side rate limit.
	qps   float64
	burst int
	// resync is the operator's resync period in the steady-state runs.
	resync time.Duration
	// latencySamples is the number of edits timed under load.
	latencySamples int
	// unrelated is the number of ConfigMaps, and of Services, that the
	// operator does not manage, put next to the Installations for the memory runs.
	unrelated int
	// markdown and jsonPath are where the report goes.
	markdown, jsonPath string
	// timeout bounds one convergence.
	timeout time.Duration
	// memory turns the memory runs on.
	memory bool
	// keepDir keeps the control plane's folder, logs included.
	keepDir bool
	// cpuProfile, if set, names a file for the CPU profile of the whole run.
	cpuProfile string

	// child is set in the process that bench starts to measure memory.
	child childOptions
}

// childOptions configure the memory child process.
type childOptions struct {
	// enabled makes this process a memory child.
	enabled bool
	// kubeconfig and namespace say what the operator watches.
	kubeconfig, namespace string
	// keepManagedFields and watchAllChildren turn off the transform and the filter.
	keepManagedFields, watchAllChildren bool
}

// bind registers the flags on fs with their defaults.
func (o *options) bind(fs *flag.FlagSet) {
	o.sizes = intList{100, 1000}
	o.layouts = intList{1, 4}
	fs.Var(&o.sizes, "n", "Numbers of Installations, comma-separated.")
	fs.Var(&o.layouts, "shards", "Shards of every Installation, comma-separated: one run per size and layout.")
	fs.IntVar(&o.workers, "workers", operator.DefaultWorkers, "The operator's --workers, and the floor's concurrency.")
	fs.Float64Var(&o.qps, "qps", operator.DefaultQPS, "The operator's --kube-api-qps.")
	fs.IntVar(&o.burst, "burst", operator.DefaultBurst, "The operator's --kube-api-burst.")
	fs.DurationVar(&o.resync, "resync", 5*time.Second, "The operator's resync period; steady state is watched for 3 of them.")
	fs.IntVar(&o.latencySamples, "latency-samples", 100, "Edits timed from Installation to StatefulSet, per run.")
	fs.IntVar(&o.unrelated, "unrelated", 1000, "Unrelated ConfigMaps, and as many Services, next to the Installations in the memory runs.")
	fs.StringVar(&o.markdown, "out", "docs/benchmarks.md", "Markdown report.")
	fs.StringVar(&o.jsonPath, "json", "docs/benchmarks.json", "The same figures as JSON.")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "Bound on one convergence.")
	fs.BoolVar(&o.memory, "memory", true, "Measure memory, in the first layout of each size.")
	fs.BoolVar(&o.keepDir, "keep-dir", false, "Keep the control plane's folder and logs.")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "Write a CPU profile of the run to this file.")

	fs.BoolVar(&o.child.enabled, "memory-child", false, "Internal: measure the memory of one operator and exit.")
	fs.StringVar(&o.child.kubeconfig, "kubeconfig", "", "Internal: the memory child's kubeconfig.")
	fs.StringVar(&o.child.namespace, "namespace", "", "Internal: the memory child's namespace.")
	fs.BoolVar(&o.child.keepManagedFields, "keep-managed-fields", false, "Internal: the memory child keeps managedFields.")
	fs.BoolVar(&o.child.watchAllChildren, "watch-all-children", false, "Internal: the memory child watches unlabelled objects too.")
}

// validate checks the flags, naming the one that is wrong.
func (o *options) validate() error {
	var errs []error
	if len(o.sizes) == 0 || len(o.layouts) == 0 {
		errs = append(errs, errors.New("-n and -shards need at least one value each"))
	}
	if o.workers < 1 || o.qps <= 0 || o.burst < 1 {
		errs = append(errs, fmt.Errorf("-workers, -qps and -burst must be positive, got %d, %g, %d", o.workers, o.qps, o.burst))
	}
	if o.resync <= 0 || o.latencySamples < 1 || o.unrelated < 0 {
		errs = append(errs, errors.New("-resync and -latency-samples must be positive, -unrelated not negative"))
	}
	return errors.Join(errs...)
}

// intList is a flag of comma-separated positive integers.
type intList []int

// String implements flag.Value.
func (l *intList) String() string {
	s := make([]string, len(*l))
	for i, v := range *l {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

// Set implements flag.Value; it replaces the default.
func (l *intList) Set(v string) error {
	*l = nil
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("%q is not a positive integer", f)
		}
		*l = append(*l, n)
	}
	return nil
}
