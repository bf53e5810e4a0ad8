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
	// runs are the numbers of Installations and their shards, run one after
	// the other.
	runs runList
	// large adds runs of largeRuns, too long for the default run.
	large bool
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
	// markdown and jsonPath are where the report goes; notes, if it
	// exists, goes into the Markdown after the targets.
	markdown, jsonPath, notes string
	// render writes the Markdown from the JSON of an earlier run, and
	// runs nothing.
	render bool
	// timeout bounds one convergence.
	timeout time.Duration
	// memory turns the memory runs on, for the runs of one shard.
	memory bool
	// keepDir keeps the control plane's folder, logs included.
	keepDir bool
	// cpuProfile, if set, names a file for a CPU profile of the operator
	// while it converges and is edited in the run of profileN Installations
	// of one shard.
	cpuProfile string
	profileN   int
	// heapProfiles, if set, names a folder for a heap profile of the
	// operator as shipped at each N, taken with its memory figures.
	heapProfiles string
	// peer measures the controller-runtime peer too, built from peerDir.
	peer    bool
	peerDir string
	// rounds is how many times the runs of up to ratioN Installations
	// measure the convergence of the floor and the contenders, and the
	// contenders' edits; their medians are the recorded ratios and
	// percentiles.
	rounds int

	// child is set in the process that bench starts to run the operator.
	child operatorChildOptions
}

// operatorChildOptions configure an operator child process (-operator-child).
type operatorChildOptions struct {
	// enabled makes this process an operator child.
	enabled bool
	// kubeconfig and namespace say what the operator watches.
	kubeconfig, namespace string
	// resync is its resync period.
	resync time.Duration
	// keepManagedFields and watchAllChildren keep managedFields in the cache and turn off the filter.
	keepManagedFields, watchAllChildren bool
	// statsSocket is where it serves its figures.
	statsSocket string
	// cpuProfile, if set, names a file for its CPU profile.
	cpuProfile string
	// heapProfile makes it record every allocation, for a heap profile.
	heapProfile bool
}

// bind registers the flags on fs with their defaults.
func (o *options) bind(fs *flag.FlagSet) {
	o.runs = runList{{100, 1}, {1000, 1}, {1000, 4}}
	fs.Var(&o.runs, "runs", "The runs, comma-separated, each as Installations:shards.")
	fs.BoolVar(&o.large, "large", false, "Add runs of 5000 and 10000 Installations of one shard (about 35 minutes more).")
	fs.IntVar(&o.workers, "workers", operator.DefaultWorkers, "The operator's --workers, and the floor's concurrency.")
	fs.Float64Var(&o.qps, "qps", operator.DefaultQPS, "The operator's --kube-api-qps.")
	fs.IntVar(&o.burst, "burst", operator.DefaultBurst, "The operator's --kube-api-burst.")
	fs.DurationVar(&o.resync, "resync", 5*time.Second, "The operator's resync period; steady state is watched for 3 of them.")
	fs.IntVar(&o.latencySamples, "latency-samples", 100, "Edits timed from Installation to StatefulSet, per run.")
	fs.IntVar(&o.unrelated, "unrelated", 1000, "Unrelated ConfigMaps, and as many Services, next to the Installations in the memory runs.")
	fs.StringVar(&o.markdown, "out", "docs/benchmarks.md", "Markdown report.")
	fs.StringVar(&o.jsonPath, "json", "docs/benchmarks.json", "The same figures as JSON.")
	fs.StringVar(&o.notes, "notes", "docs/benchmarks-notes.md", "Notes written on the figures, put into the Markdown after the targets when the file exists.")
	fs.BoolVar(&o.render, "render", false, "Write the Markdown report and plots from the JSON of -json, with -notes, and run nothing.")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "Bound on one convergence.")
	fs.BoolVar(&o.memory, "memory", true, "Measure memory, in the runs of one shard.")
	fs.BoolVar(&o.keepDir, "keep-dir", false, "Keep the control plane's folder and logs.")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "Write a CPU profile of the operator, while it converges and is edited in the run of -profile-n Installations of one shard, to this file.")
	fs.IntVar(&o.profileN, "profile-n", 1000, "The Installations of the run that -cpuprofile profiles.")
	fs.StringVar(&o.heapProfiles, "heapprofiles", "", "Write a heap profile of the operator as shipped at each N into this folder, as heap-<N>.pprof.")

	fs.BoolVar(&o.peer, "peer", true, "Measure the controller-runtime peer (cmd/bench/peer) too.")
	fs.StringVar(&o.peerDir, "peer-dir", "cmd/bench/peer", "The peer's Go module, built before the runs.")
	fs.IntVar(&o.rounds, "rounds", 3, fmt.Sprintf("Rounds of convergence and edits at N up to %d, whose medians are the recorded ratios and percentiles.", ratioN))

	fs.BoolVar(&o.child.enabled, "operator-child", false, "Internal: run the operator, serving its figures on -stats-socket.")
	fs.StringVar(&o.child.kubeconfig, "kubeconfig", "", "Internal: the operator child's kubeconfig.")
	fs.StringVar(&o.child.namespace, "namespace", "", "Internal: the operator child's namespace.")
	fs.DurationVar(&o.child.resync, "child-resync", operator.DefaultResyncPeriod, "Internal: the operator child's resync period.")
	fs.BoolVar(&o.child.keepManagedFields, "keep-managed-fields", false, "Internal: the operator child keeps managedFields.")
	fs.BoolVar(&o.child.watchAllChildren, "watch-all-children", false, "Internal: the operator child watches unlabelled objects too.")
	fs.StringVar(&o.child.statsSocket, "stats-socket", "", "Internal: where the operator child serves its figures.")
	fs.StringVar(&o.child.cpuProfile, "child-cpuprofile", "", "Internal: the operator child's CPU profile.")
	fs.BoolVar(&o.child.heapProfile, "child-heap-profile", false, "Internal: the operator child records every allocation for a heap profile.")
}

// validate checks the flags, naming the one that is wrong.
func (o *options) validate() error {
	var errs []error
	if len(o.runs) == 0 {
		errs = append(errs, errors.New("-runs needs at least one run"))
	}
	if o.workers < 1 || o.qps <= 0 || o.burst < 1 {
		errs = append(errs, fmt.Errorf("-workers, -qps and -burst must be positive, got %d, %g, %d", o.workers, o.qps, o.burst))
	}
	if o.resync <= 0 || o.latencySamples < 1 || o.unrelated < 0 || o.rounds < 1 {
		errs = append(errs, errors.New("-resync, -latency-samples and -rounds must be positive, -unrelated not negative"))
	}
	return errors.Join(errs...)
}

// largeRuns are the runs that -large adds: on a slow machine they take
// longer than the default runs together.
var largeRuns = []runSize{{5000, 1}, {10000, 1}}

// runSize is the size of one run: N Installations of Shards shards.
type runSize struct{ N, Shards int }

// runList is a flag of comma-separated runs, each as N:shards.
type runList []runSize

// String implements flag.Value.
func (l *runList) String() string {
	s := make([]string, len(*l))
	for i, r := range *l {
		s[i] = fmt.Sprintf("%d:%d", r.N, r.Shards)
	}
	return strings.Join(s, ",")
}

// Set implements flag.Value; it replaces the default.
func (l *runList) Set(v string) error {
	*l = nil
	for _, f := range strings.Split(v, ",") {
		n, shards, ok := strings.Cut(strings.TrimSpace(f), ":")
		r := runSize{N: positive(n), Shards: positive(shards)}
		if !ok || r.N < 1 || r.Shards < 1 || r.Shards > 64 {
			return fmt.Errorf("%q is not Installations:shards, two positive integers (at most 64 shards)", f)
		}
		*l = append(*l, r)
	}
	return nil
}

// positive parses a positive integer, and returns 0 for anything else.
func positive(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0
	}
	return n
}
