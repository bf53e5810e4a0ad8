package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"lin.dev/lin-operator/pkg/operator"
)

// memory is what one contender's process held once its caches had synced and
// its first syncs were done.
type memory struct {
	// Installations is the number of Installations in the namespace.
	Installations int `json:"installations"`
	// KeepManagedFields and WatchAllChildren say whether the cache kept
	// managedFields and whether the label filter was off.
	KeepManagedFields bool `json:"keepManagedFields"`
	WatchAllChildren  bool `json:"watchAllChildren"`
	// HeapInuseBytes is runtime.MemStats.HeapInuse after a forced GC, and
	// HeapAllocBytes HeapAlloc then: the objects still reachable, without
	// the free slots of the spans that hold them.
	HeapInuseBytes uint64 `json:"heapInuseBytes"`
	HeapAllocBytes uint64 `json:"heapAllocBytes"`
	// RSSBytes is VmRSS from /proc/self/status, after memory was returned to the OS.
	RSSBytes uint64 `json:"rssBytes"`
	// Writes are the operator's writes, events included: zero when in sync.
	Writes int `json:"writes"`
}

// memoryConfigs are the informer settings measured: as shipped, then keeping
// managedFields, without the filter, and both.
var memoryConfigs = []struct{ keepManagedFields, watchAllChildren bool }{
	{false, false}, {true, false}, {false, true}, {true, true},
}

// memory measures contender c on ns, which holds n in-sync Installations,
// each time in a process of its own so that none inherits another's heap:
// the operator once per informer setting in the run of ratioN
// Installations (and before the Installations of that run exist, n = 0),
// as shipped in the others, and the peer as it is.
func (b *bench) memory(ctx context.Context, c contender, ns string, n, runN int) ([]memory, error) {
	configs := memoryConfigs
	if runN != ratioN || c != theOperator {
		configs = configs[:1]
	}
	var out []memory
	for _, mc := range configs {
		m, err := b.memoryChild(ctx, c, ns, childOptions{resync: operator.DefaultResyncPeriod,
			keepManagedFields: mc.keepManagedFields, watchAllChildren: mc.watchAllChildren})
		if err != nil {
			return nil, err
		}
		m.Installations = n
		out = append(out, m)
	}
	if b.o.heapProfiles != "" && c == theOperator {
		// Apart: profiling every allocation takes memory of its own.
		co := childOptions{resync: operator.DefaultResyncPeriod, heapProfile: filepath.Join(b.o.heapProfiles, fmt.Sprintf("heap-%d.pprof", n))}
		if _, err := b.memoryChild(ctx, c, ns, co); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// memoryChild starts contender c on ns, lets it sync every Installation
// once after its caches fill, and reads what it holds after a forced
// collection, with a heap profile to co.heapProfile if set. In sync, the
// first syncs cost no request, so their end shows only in the process's CPU
// time: a collection while they run would count what they have in hand, and
// every object allocated while it marks, as held.
func (b *bench) memoryChild(ctx context.Context, c contender, ns string, co childOptions) (m memory, err error) {
	ch, _, err := b.startChild(ctx, c, ns, co)
	if err != nil {
		return m, err
	}
	defer func() { err = errors.Join(err, ch.stop()) }()
	if err := idle(ctx, ch); err != nil {
		return m, fmt.Errorf("waiting for the %s's first syncs: %w", c, err)
	}
	s, err := ch.stats.Get(ctx, true, co.heapProfile)
	if err != nil {
		return m, err
	}
	return memory{HeapInuseBytes: s.HeapInuseBytes, HeapAllocBytes: s.HeapAllocBytes, RSSBytes: s.RSSBytes, Writes: total(writes(s.Requests)),
		KeepManagedFields: co.keepManagedFields, WatchAllChildren: co.watchAllChildren}, nil
}

// addUnrelated creates count ConfigMaps and count Services in ns that the
// operator does not manage, as other applications would have there.
func (b *bench) addUnrelated(ctx context.Context, ns string, count int) error {
	data := map[string]string{"settings.conf": strings.Repeat("key=value\n", 100)}
	err := parallel(ctx, count, b.o.workers, func(ctx context.Context, i int) error {
		meta := metav1.ObjectMeta{Name: "other-" + strconv.Itoa(i), Namespace: ns, Labels: map[string]string{"app": "other"}}
		if _, err := b.kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: meta, Data: data}, metav1.CreateOptions{}); err != nil {
			return err
		}
		svc := &corev1.Service{ObjectMeta: meta, Spec: corev1.ServiceSpec{
			Selector: meta.Labels, Ports: []corev1.ServicePort{{Name: "http", Port: 80}},
		}}
		_, err := b.kube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("creating unrelated objects: %w", err)
	}
	return nil
}
