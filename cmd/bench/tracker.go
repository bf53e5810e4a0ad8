package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	lininformers "lin.dev/lin-operator/pkg/client/informers/externalversions"
	"lin.dev/lin-operator/pkg/resources"
)

// tracker watches the Installations of one namespace and tells when every
// one has a status that observed its generation. It watches, rather than
// polls, so that it adds almost no load to the API server it measures, and
// only Installations: the operator writes status after the children, so the
// children are checked once, at the end (childrenComplete).
type tracker struct {
	// n is the number of Installations.
	n int

	mu sync.Mutex
	// observed holds the Installations whose status observed their generation.
	observed map[string]bool
	// doneAt is when the last Installation was observed.
	doneAt time.Time
	// done is closed then.
	done chan struct{}

	cancel  context.CancelFunc
	factory lininformers.SharedInformerFactory
}

// newTracker starts watching ns, where n Installations are about to be
// created, and returns once its cache has synced.
func (b *bench) newTracker(ctx context.Context, ns string, n int) *tracker {
	t := &tracker{n: n, observed: map[string]bool{}, done: make(chan struct{})}
	t.factory = lininformers.NewSharedInformerFactoryWithOptions(b.lin, 0, lininformers.WithNamespace(ns))
	// An error is impossible here: the informer has not started.
	_, _ = t.factory.Lin().V1().Installations().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    t.installation,
		UpdateFunc: func(_, obj any) { t.installation(obj) },
	})
	ctx, t.cancel = context.WithCancel(ctx)
	t.factory.Start(ctx.Done())
	t.factory.WaitForCacheSync(ctx.Done())
	return t
}

// stop ends the watch.
func (t *tracker) stop() {
	t.cancel()
	t.factory.Shutdown()
}

// installation notes whether an Installation's status observed its
// generation, and closes done after the last one.
func (t *tracker) installation(obj any) {
	inst, ok := obj.(*linv1.Installation)
	if !ok || inst.Generation == 0 || inst.Status.ObservedGeneration != inst.Generation {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.observed[inst.Name] {
		return
	}
	t.observed[inst.Name] = true
	if len(t.observed) == t.n {
		t.doneAt = time.Now()
		close(t.done)
	}
}

// observedAt waits until every Installation was observed, and returns when.
func (t *tracker) observedAt(ctx context.Context) (time.Time, error) {
	select {
	case <-t.done:
		t.mu.Lock()
		defer t.mu.Unlock()
		return t.doneAt, nil
	case <-ctx.Done():
		t.mu.Lock()
		defer t.mu.Unlock()
		return time.Time{}, fmt.Errorf("%d of %d Installations observed: %w", len(t.observed), t.n, context.Cause(ctx))
	}
}

// childrenComplete checks that every one of n Installations in ns has the
// children of shards shards.
func (b *bench) childrenComplete(ctx context.Context, ns string, n, shards int) error {
	opts := metav1.ListOptions{LabelSelector: resources.ManagedBySelector}
	perInstallation := map[string]int{}
	count := func(items []metav1.Object) {
		for _, o := range items {
			perInstallation[o.GetLabels()[resources.LabelInstallation]]++
		}
	}
	cms, err := b.kube.CoreV1().ConfigMaps(ns).List(ctx, opts)
	if err != nil {
		return err
	}
	count(metaOf(cms.Items))
	svcs, err := b.kube.CoreV1().Services(ns).List(ctx, opts)
	if err != nil {
		return err
	}
	count(metaOf(svcs.Items))
	stss, err := b.kube.AppsV1().StatefulSets(ns).List(ctx, opts)
	if err != nil {
		return err
	}
	count(metaOf(stss.Items))
	pdbs, err := b.kube.PolicyV1().PodDisruptionBudgets(ns).List(ctx, opts)
	if err != nil {
		return err
	}
	count(metaOf(pdbs.Items))
	for i := range n {
		if got := perInstallation[installationName(i)]; got != childrenPer(shards) {
			return fmt.Errorf("Installation %s has %d children, want %d", installationName(i), got, childrenPer(shards))
		}
	}
	return nil
}

// metaOf returns the metadata of each item.
func metaOf[T any, PT interface {
	*T
	metav1.Object
}](items []T) []metav1.Object {
	out := make([]metav1.Object, len(items))
	for i := range items {
		out[i] = PT(&items[i])
	}
	return out
}
