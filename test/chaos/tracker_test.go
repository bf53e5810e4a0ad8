//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"lin.dev/lin-operator/pkg/resources"
)

// uidTracker watches the operator's children and the claims of a namespace
// for the whole of a scenario, and remembers every UID that each name had and
// every deletion, so that a child deleted and made again, or deleted at all,
// is seen even when it happened between two looks. Its informers relist
// after a fault, so what happened meanwhile shows as a new UID or a tombstone.
type uidTracker struct {
	cancel    context.CancelFunc
	factories []kubeinformers.SharedInformerFactory

	mu sync.Mutex
	// uids are the UIDs each "Kind/name" had, in the order seen.
	uids map[string][]types.UID
	// deleted are the keys whose deletion was requested or seen.
	deleted map[string]bool
}

// trackUIDs starts a tracker on namespace ns until the test ends.
func trackUIDs(t *testing.T, c kubernetes.Interface, ns string) *uidTracker {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	managed := kubeinformers.NewSharedInformerFactoryWithOptions(c, 0, kubeinformers.WithNamespace(ns),
		kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = resources.ManagedBySelector }))
	all := kubeinformers.NewSharedInformerFactoryWithOptions(c, 0, kubeinformers.WithNamespace(ns))
	u := &uidTracker{cancel: cancel, factories: []kubeinformers.SharedInformerFactory{managed, all},
		uids: map[string][]types.UID{}, deleted: map[string]bool{}}
	var synced []cache.InformerSynced
	for kind, inf := range map[string]cache.SharedIndexInformer{
		"ConfigMap":             managed.Core().V1().ConfigMaps().Informer(),
		"Service":               managed.Core().V1().Services().Informer(),
		"StatefulSet":           managed.Apps().V1().StatefulSets().Informer(),
		"PodDisruptionBudget":   managed.Policy().V1().PodDisruptionBudgets().Informer(),
		"PersistentVolumeClaim": all.Core().V1().PersistentVolumeClaims().Informer(),
	} {
		reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { u.seen(kind, obj) },
			UpdateFunc: func(_, obj any) { u.seen(kind, obj) },
			DeleteFunc: func(obj any) { u.gone(kind, obj) },
		})
		if err != nil {
			t.Fatal(err)
		}
		synced = append(synced, reg.HasSynced)
	}
	for _, f := range u.factories {
		f.Start(ctx.Done())
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		t.Fatal("the UID tracker's caches did not sync")
	}
	t.Cleanup(u.stop)
	return u
}

// stop ends the watches.
func (u *uidTracker) stop() {
	u.cancel()
	for _, f := range u.factories {
		f.Shutdown()
	}
}

// seen records the UID of an object, and a requested deletion as one.
func (u *uidTracker) seen(kind string, obj any) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	key := kind + "/" + m.GetName()
	u.mu.Lock()
	defer u.mu.Unlock()
	if uids := u.uids[key]; len(uids) == 0 || uids[len(uids)-1] != m.GetUID() {
		u.uids[key] = append(uids, m.GetUID())
	}
	if m.GetDeletionTimestamp() != nil {
		u.deleted[key] = true
	}
}

// gone records a deletion, of an object or of a tombstone's.
func (u *uidTracker) gone(kind string, obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if m, ok := obj.(metav1.Object); ok {
		u.mu.Lock()
		defer u.mu.Unlock()
		u.deleted[kind+"/"+m.GetName()] = true
	}
}

// catchUp waits until the tracker has seen every key of uids with its UID:
// its informers may still be backing off after a fault when the API server
// already shows the final state.
func (u *uidTracker) catchUp(t *testing.T, uids map[string]types.UID) {
	t.Helper()
	waitFor(t, 2*time.Minute, "the UID tracker to catch up", func(context.Context) error {
		u.mu.Lock()
		defer u.mu.Unlock()
		for key, uid := range uids {
			if seen := u.uids[key]; len(seen) == 0 || seen[len(seen)-1] != uid {
				return fmt.Errorf("%s not seen with UID %s", key, uid)
			}
		}
		return nil
	})
}

// recreated returns the keys that had more than one UID.
func (u *uidTracker) recreated() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []string
	for key, uids := range u.uids {
		if len(uids) > 1 {
			out = append(out, key)
		}
	}
	slices.Sort(out)
	return out
}

// deletions returns the keys whose deletion was seen.
func (u *uidTracker) deletions() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Sorted(maps.Keys(u.deleted))
}

// count returns how many keys were seen.
func (u *uidTracker) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.uids)
}
