package controller

import (
	"sync"

	"k8s.io/client-go/tools/cache"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
)

// statusWrites remembers the Installation that each status write returned
// until the cache catches up with it. A sync that starts right after a status
// write (woken by a child's event, say) would otherwise
// read the Installation as it was before the write, find its status out of
// date, and send an update that the API server refuses with a conflict.
type statusWrites struct {
	mu      sync.Mutex
	written map[cache.ObjectName]statusWrite
}

// statusWrite is one status write: the resourceVersion it replaced and the
// object it returned.
type statusWrite struct {
	from string
	to   *linv1.Installation
}

// newStatusWrites returns an empty memory.
func newStatusWrites() *statusWrites {
	return &statusWrites{written: map[cache.ObjectName]statusWrite{}}
}

// record remembers that the Installation at resourceVersion from became written.
func (w *statusWrites) record(from string, written *linv1.Installation) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.written[cache.MetaObjectToName(written)] = statusWrite{from: from, to: written}
}

// latest returns the Installation as last written while the cache still
// holds the version that write replaced, else the cached one. It compares
// resourceVersions for equality only, never for order: a cache that moved
// past from has seen the write or something newer.
func (w *statusWrites) latest(cached *linv1.Installation) *linv1.Installation {
	key := cache.MetaObjectToName(cached)
	w.mu.Lock()
	defer w.mu.Unlock()
	s, ok := w.written[key]
	if !ok {
		return cached
	}
	if s.from == cached.ResourceVersion {
		return s.to
	}
	delete(w.written, key)
	return cached
}

// observed forgets the write of an Installation once the cache holds inst,
// from a watch event, and inst is not the version that the write replaced:
// the cache has caught up. (Without it, a write whose event wakes no sync
// would be kept until the next one.)
func (w *statusWrites) observed(inst *linv1.Installation) {
	key := cache.MetaObjectToName(inst)
	w.mu.Lock()
	defer w.mu.Unlock()
	if s, ok := w.written[key]; ok && s.from != inst.ResourceVersion {
		delete(w.written, key)
	}
}

// forget drops what is remembered of a deleted Installation.
func (w *statusWrites) forget(key cache.ObjectName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.written, key)
}
