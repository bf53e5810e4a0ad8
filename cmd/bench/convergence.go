package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"lin.dev/lin-operator/test/harness"
)

// convergence is how fast the operator made the children of n new
// Installations and observed them in status, and what it asked the API
// server for to do so.
type convergence struct {
	// Seconds is the time from the first create of an Installation until
	// every Installation had its children and an observed generation.
	Seconds float64 `json:"seconds"`
	// ChildrenPerSecond is the number of children made per second.
	ChildrenPerSecond float64 `json:"childrenPerSecond"`
	// ControlPlaneCPUSeconds is the CPU time etcd and kube-apiserver spent
	// meanwhile, and ProcessCPUSeconds the contender's own.
	ControlPlaneCPUSeconds float64 `json:"controlPlaneCPUSeconds"`
	ProcessCPUSeconds      float64 `json:"processCPUSeconds"`
	// StealPercent is the share of the machine's CPU time that went to other
	// guests of its host meanwhile.
	StealPercent float64 `json:"stealPercent"`
	// Requests are the contender's requests after its caches synced (the
	// namespace was empty then), until it had been quiet for a second.
	Requests map[string]int `json:"requests"`
	// Conflicts are the requests of Requests refused with 409 Conflict.
	Conflicts map[string]int `json:"conflicts"`
	// Reads are the get and list requests of Requests: zero when every read
	// comes from the caches.
	Reads int `json:"reads"`
	// WritesPerInstallation are the writes of Requests, events aside, per
	// Installation; ExpectedWrites is the least there can be: its children and
	// one status update.
	WritesPerInstallation float64 `json:"writesPerInstallation"`
	ExpectedWrites        int     `json:"expectedWrites"`
	// EventsPerInstallation are the event writes per Installation.
	EventsPerInstallation float64 `json:"eventsPerInstallation"`
	// DryRunsPerInstallation are the server-side dry runs per Installation,
	// sent before the writes to learn whether the API server takes them all.
	DryRunsPerInstallation float64 `json:"dryRunsPerInstallation"`
}

// converge creates n Installations of shards shards in ns, which the
// contender ch watches and which is empty, on as many goroutines as it has
// workers, and times it until they have converged.
func (b *bench) converge(ctx context.Context, ch *child, ns string, n, shards int) (convergence, error) {
	t := b.newTracker(ctx, ns, n)
	defer t.stop()
	before, err := ch.stats.Get(ctx, false, "")
	if err != nil {
		return convergence{}, err
	}
	phase, err := b.markPhase()
	if err != nil {
		return convergence{}, err
	}
	ownBefore, err := ch.cpu()
	if err != nil {
		return convergence{}, err
	}
	began := time.Now()
	err = parallel(ctx, n, b.o.workers, func(ctx context.Context, i int) error {
		_, err := b.lin.LinV1().Installations(ns).Create(ctx, newInstallation(ns, i, shards), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return convergence{}, fmt.Errorf("creating Installations: %w", err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, b.o.timeout)
	defer cancel()
	doneAt, err := t.observedAt(waitCtx)
	if err != nil {
		return convergence{}, err
	}
	cpu, stolen, err := b.since(phase)
	if err != nil {
		return convergence{}, err
	}
	own, err := ch.cpu()
	if err != nil {
		return convergence{}, err
	}
	if err := b.childrenComplete(ctx, ns, n, shards); err != nil {
		return convergence{}, err
	}
	if err := quiet(ctx, ch); err != nil {
		return convergence{}, err
	}
	after, err := ch.stats.Get(ctx, false, "")
	if err != nil {
		return convergence{}, err
	}
	elapsed := doneAt.Sub(began)
	requests := harness.Diff(after.Requests, before.Requests)
	return convergence{
		Seconds:                elapsed.Seconds(),
		ChildrenPerSecond:      float64(n*childrenPer(shards)) / elapsed.Seconds(),
		ControlPlaneCPUSeconds: cpu,
		ProcessCPUSeconds:      (own - ownBefore).Seconds(),
		StealPercent:           stolen,
		Requests:               requests,
		Conflicts:              harness.Diff(after.Conflicts, before.Conflicts),
		Reads:                  total(harness.Reads(requests)),
		WritesPerInstallation:  float64(total(harness.Writes(requests))) / float64(n),
		ExpectedWrites:         childrenPer(shards) + 1,
		EventsPerInstallation:  float64(events(requests)) / float64(n),
		DryRunsPerInstallation: float64(dryRuns(requests)) / float64(n),
	}, nil
}

// total sums counts.
func total(counts map[string]int) int {
	sum := 0
	for _, v := range counts {
		sum += v
	}
	return sum
}

// writes returns the writes of counts, events included (harness.Writes
// leaves them out).
func writes(counts map[string]int) map[string]int {
	out := harness.Writes(counts)
	for k, v := range counts {
		if verb, resource, _ := strings.Cut(k, " "); resource == "events" && verb != "get" && verb != "list" && verb != "watch" {
			out[k] = v
		}
	}
	return out
}

// events counts the writes of events among counts.
func events(counts map[string]int) int {
	return total(writes(counts)) - total(harness.Writes(counts))
}

// dryRuns counts the dry-run requests among counts.
func dryRuns(counts map[string]int) int {
	sum := 0
	for k, v := range counts {
		if strings.HasPrefix(k, harness.DryRunPrefix) {
			sum += v
		}
	}
	return sum
}
