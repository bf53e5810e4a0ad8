// Package controller reconciles Installations into their ConfigMaps,
// Services, StatefulSets and PodDisruptionBudgets. controller.go is the shell
// (queue, workers); informers.go and handlers.go the informers and their
// event handlers, whose caches transform.go, packed.go, childclients.go,
// installationclient.go and pods.go fill; sync.go reconciles one
// Installation; apply.go, changes.go and claims.go write the children;
// status.go computes status and statuswrites.go writes it; rollout.go and
// rollback.go decide which shards take a new pod template and which pods a
// rollout leaves behind; echoes.go and deletions.go remember the writes the
// caches do not show yet; errors.go and refused.go say what failed. The
// children themselves come from pkg/resources.
package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"lin.dev/lin-operator/pkg/client/clientset/versioned"
)

// FieldManager names the operator in managedFields of what it writes.
const FieldManager = "lin-operator"

// Options configure a Controller.
type Options struct {
	// ClusterDomain is the cluster's DNS domain, used in pod and Service names.
	ClusterDomain string
	// Recorder records events on Installations.
	Recorder record.EventRecorder
	// ObserveReconcile, if set, is told of each reconcile: the Installation,
	// how long it took and the error it returned, for metrics and tests.
	ObserveReconcile func(key cache.ObjectName, d time.Duration, err error)
}

// Controller reconciles Installations. It reads only from its informers'
// caches and writes through the clientsets, only when something differs.
type Controller struct {
	// kubeClient writes ConfigMaps, Services, StatefulSets,
	// PodDisruptionBudgets, claims and events, and deletes the pods a rollout
	// leaves behind.
	kubeClient kubernetes.Interface
	// linClient writes Installation status.
	linClient versioned.Interface
	// listers are the cache readers of each watched namespace.
	listers map[string]*listers
	// synced report whether every informer has synced.
	synced []cache.InformerSynced
	// queue holds the keys of Installations to reconcile, rate-limited per key.
	queue workqueue.TypedRateLimitingInterface[cache.ObjectName]
	// recorder records events on Installations.
	recorder record.EventRecorder
	// clusterDomain is the cluster's DNS domain.
	clusterDomain string
	// deletions are the children deleted whose deletion the cache has not shown yet.
	deletions *deletions
	// statusWrites are the status writes the cache has not shown yet.
	statusWrites *statusWrites
	// echoes tell the events of the syncs' own writes from news.
	echoes *echoes
	// observe records each reconcile's duration and error.
	observe func(cache.ObjectName, time.Duration, error)
}

// New wires a Controller to the informers and registers its event handlers.
// Start the informers after New, then call Run.
func New(kubeClient kubernetes.Interface, linClient versioned.Interface, inf *Informers, opts Options) (*Controller, error) {
	c := &Controller{
		kubeClient: kubeClient,
		linClient:  linClient,
		listers:    map[string]*listers{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](),
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: "installations"}),
		recorder:      opts.Recorder,
		clusterDomain: opts.ClusterDomain,
		deletions:     newDeletions(),
		statusWrites:  newStatusWrites(),
		echoes:        newEchoes(),
		observe:       opts.ObserveReconcile,
	}
	if c.observe == nil {
		c.observe = func(cache.ObjectName, time.Duration, error) {}
	}
	for ns, linFactory := range inf.Lin {
		l, synced, err := c.watch(ns, linFactory, inf.Kube[ns])
		if err != nil {
			return nil, fmt.Errorf("watching namespace %q: %w", ns, err)
		}
		c.listers[ns] = l
		c.synced = append(c.synced, synced...)
	}
	return c, nil
}

// Run waits for the caches, then runs workers until ctx is done. On return the
// queue is drained: the items in flight finished, no new one was started.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrash()
	logger := klog.FromContext(ctx)

	logger.Info("Waiting for informer caches to sync")
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return errors.New("caches did not sync before shutdown")
	}
	logger.Info("Starting workers", "count", workers)
	// Workers outlive ctx, so that the items still queued at shutdown are
	// reconciled, not failed; the clients' timeouts bound the drain.
	workCtx := context.WithoutCancel(ctx)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for c.processNextWorkItem(workCtx) {
			}
		})
	}
	<-ctx.Done()
	logger.Info("Shutting down: draining the queue", "queued", c.queue.Len())
	c.queue.ShutDownWithDrain()
	wg.Wait()
	logger.Info("Workers stopped")
	return nil
}

// HasSynced reports whether every informer cache has synced.
func (c *Controller) HasSynced() bool {
	for _, s := range c.synced {
		if !s() {
			return false
		}
	}
	return true
}

// processNextWorkItem reconciles one Installation. Success forgets the key's
// failures; a returned error requeues it with rate-limited backoff.
func (c *Controller) processNextWorkItem(ctx context.Context) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)

	start := time.Now()
	c.echoes.begin(key)
	err := c.sync(ctx, key)
	if c.echoes.end(key) {
		// News came during the sync: the queue runs it again after Done.
		c.queue.Add(key)
	}
	c.observe(key, time.Since(start), err)
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Reconciling failed, requeuing", "installation", key)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}
