package main

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"

	"lin.dev/lin-operator/cmd/bench/measured"
	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/client/clientset/versioned"
	"lin.dev/lin-operator/pkg/operator"
	"lin.dev/lin-operator/pkg/resources"
	"lin.dev/lin-operator/test/env"
	"lin.dev/lin-operator/test/harness"
)

// clusterDomain is the operator's --cluster-domain in every run.
const clusterDomain = "cluster.local"

// bench holds the control plane and the clients of the benchmark itself.
type bench struct {
	o   options
	env *env.Env
	// kube and lin have no client-side rate limit: they create the
	// Installations and play the floor, which the API server alone bounds.
	kube kubernetes.Interface
	lin  versioned.Interface
	// namespaces numbers the namespaces made so far, children the
	// contenders' processes started.
	namespaces, children int
	// peerBinary is the controller-runtime peer's program.
	peerBinary string
}

// newBench makes the unlimited clients of a started control plane.
func newBench(o options, e *env.Env) (*bench, error) {
	cfg := rest.CopyConfig(e.Config)
	// A negative QPS turns client-go's rate limiter off.
	cfg.QPS, cfg.Burst = -1, 0
	// Nor gzip, as the operator's clients: the benchmark's own watch, which
	// times both the floor and the operator, costs the API server little.
	cfg.DisableCompression = true
	// The floor talks to the API server as the operator does, protobuf for
	// Kubernetes' kinds, so that the ratio measures the operator, not an encoding.
	kube, err := kubernetes.NewForConfig(operator.ProtobufConfig(cfg))
	if err != nil {
		return nil, err
	}
	lin, err := versioned.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &bench{o: o, env: e, kube: kube, lin: lin}, nil
}

// namespace creates a fresh namespace, so that no run sees another's objects.
func (b *bench) namespace(ctx context.Context, what string) (string, error) {
	b.namespaces++
	name := fmt.Sprintf("%s-%d", what, b.namespaces)
	_, err := b.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	return name, err
}

// restConfig is the operator's client configuration, as cmd/operator makes it.
func restConfig(base *rest.Config, qps float64, burst int) *rest.Config {
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst = float32(qps), burst
	cfg.UserAgent = operator.Component
	cfg.Timeout = 30 * time.Second
	return cfg
}

// childInformers is a factory of informers on the operator's children in ns,
// for the benchmark's own watches.
func (b *bench) childInformers(ns string) kubeinformers.SharedInformerFactory {
	return kubeinformers.NewSharedInformerFactoryWithOptions(b.kube, 0, kubeinformers.WithNamespace(ns),
		kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = resources.ManagedBySelector }))
}

// installationName names the i-th Installation of a run.
func installationName(i int) string { return "inst-" + strconv.Itoa(i) }

// newInstallation is the i-th Installation of a run: the tests' small
// Installation with the run's number of shards. Nothing acts on StatefulSets
// here, so every rollout would stall at the default progress deadline (10
// minutes), which a long run passes: a status write and an event for each
// Installation that the steady state would count. Its deadline is a day.
func newInstallation(ns string, i, shards int) *linv1.Installation {
	inst := harness.NewInstallation(ns, installationName(i))
	inst.Spec.Shards = ptr.To(int32(shards))
	inst.Spec.Rollout.ProgressDeadlineSeconds = ptr.To[int32](24 * 60 * 60)
	return inst
}

// childrenPer is the number of children of an Installation of shards shards:
// two ConfigMaps, two Services, and a StatefulSet and a PodDisruptionBudget
// per shard.
func childrenPer(shards int) int { return 4 + 2*shards }

// parallel runs fn for 0..n-1 on workers goroutines, as the operator's
// workers would, and returns the first error; an error stops the rest.
func parallel(ctx context.Context, n, workers int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var once sync.Once
	var first error
	workqueue.ParallelizeUntil(ctx, workers, n, func(i int) {
		if err := fn(ctx, i); err != nil {
			once.Do(func() { first = err; cancel() })
		}
	})
	return first
}

// quiet waits until the child has made no request for a second, so that
// the retries and late writes of a run are counted with it.
func quiet(ctx context.Context, ch *child) error {
	last, err := ch.requests(ctx)
	if err != nil {
		return err
	}
	since := time.Now()
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, false, func(ctx context.Context) (bool, error) {
		now, err := ch.requests(ctx)
		if err != nil {
			return false, err
		}
		if !maps.Equal(now, last) {
			last, since = now, time.Now()
		}
		return time.Since(since) >= time.Second, nil
	})
}

// A child is idle when it used less than idleCPU of CPU time in the last
// idleWindow; it has then done what its start gave it to do. idleTimeout
// bounds the wait: the first syncs of 10,000 Installations take seconds.
const (
	idleWindow  = time.Second
	idleCPU     = 20 * time.Millisecond
	idleTimeout = 2 * time.Minute
)

// idle waits until the child is idle. In sync, a contender's first syncs
// make no request, so quiet cannot see their end; its CPU time can.
func idle(ctx context.Context, ch *child) error {
	last, err := ch.cpu()
	if err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, idleWindow, idleTimeout, false, func(context.Context) (bool, error) {
		now, err := ch.cpu()
		if err != nil {
			return false, err
		}
		used := now - last
		last = now
		return used < idleCPU, nil
	})
}

// controlPlaneCPU returns the CPU time that etcd and kube-apiserver have used
// so far. What a run adds to it is what the run cost the control plane, a
// figure that other work on the machine disturbs far less than time does.
func (b *bench) controlPlaneCPU() (time.Duration, error) {
	var sum time.Duration
	for _, p := range b.env.Processes() {
		d, err := measured.CPUTime(p.Pid)
		if err != nil {
			return 0, err
		}
		sum += d
	}
	return sum, nil
}

// phaseMark is what the machine had used when a timed phase began.
type phaseMark struct {
	// cpu is the control plane's CPU time (see controlPlaneCPU).
	cpu time.Duration
	// steal and total are the machine's steal, the CPU time the hypervisor
	// gave to other guests, and all its CPU time, in ticks: on a shared
	// host a phase that lost much of its time to them is slower than the
	// machine made it.
	steal, total int64
}

// markPhase reads what the machine has used so far, at the start of a phase.
func (b *bench) markPhase() (phaseMark, error) {
	cpu, err := b.controlPlaneCPU()
	if err != nil {
		return phaseMark{}, err
	}
	steal, total, err := measured.Steal()
	return phaseMark{cpu: cpu, steal: steal, total: total}, err
}

// since returns the control plane's CPU seconds since the phase began at
// m, and the share of the machine's CPU time that went to other guests
// meanwhile, in percent.
func (b *bench) since(m phaseMark) (cpuSeconds, stealPercent float64, err error) {
	now, err := b.markPhase()
	if err != nil {
		return 0, 0, err
	}
	if now.total > m.total {
		stealPercent = 100 * float64(now.steal-m.steal) / float64(now.total-m.total)
	}
	return (now.cpu - m.cpu).Seconds(), stealPercent, nil
}
