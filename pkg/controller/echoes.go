package controller

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// echoes tells the watch events that are news for an Installation from the
// echoes of its sync's own writes: the event of a child that the sync
// created or updated, and of the status it wrote. An echo brings nothing
// that the sync did not know, since it computed status from the API
// server's answers, so it need not wake the Installation again. At four
// shards the twelve echoes of a new Installation's first sync would
// otherwise cost a second sync, which decodes every child from the cache to
// find nothing to do, and so would every edit.
//
// An echo may come before the write's answer does, while the sync is still
// running, or after. So the events of an Installation whose sync is running
// are held until it ends; those that match none of its writes wake it then.
// A write's answer that its event has not matched yet is remembered until
// that object's next event. Anything else, a change by someone else, the
// StatefulSet controller's status, a deletion, a resync, is news.
type echoes struct {
	mu sync.Mutex
	// written holds the resourceVersion of each write whose event has not
	// come yet, by the object's UID.
	written map[types.UID]string
	// syncing holds the events held for each Installation whose sync is running.
	syncing map[cache.ObjectName]*held
}

// held are the events of one Installation's objects that came during its sync.
type held struct {
	// rvs holds the resourceVersion of each event, by the object's UID.
	rvs map[types.UID]string
	// news is set when an object had two events: at most one is an echo.
	news bool
}

// newEchoes returns an empty memory.
func newEchoes() *echoes {
	return &echoes{written: map[types.UID]string{}, syncing: map[cache.ObjectName]*held{}}
}

// begin marks the sync of the Installation key running.
func (e *echoes) begin(key cache.ObjectName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.syncing[key] = &held{}
}

// end marks the sync of key done and reports whether an event held during
// it was news, which the caller must reconcile.
func (e *echoes) end(key cache.ObjectName) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	h := e.syncing[key]
	delete(e.syncing, key)
	return h != nil && (h.news || len(h.rvs) > 0)
}

// wrote records that the sync of key wrote o, as the API server answered,
// and reports whether its event came already.
func (e *echoes) wrote(key cache.ObjectName, o metav1.Object) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if h := e.syncing[key]; h != nil {
		if rv, ok := h.rvs[o.GetUID()]; ok && rv == o.GetResourceVersion() {
			delete(h.rvs, o.GetUID())
			return true
		}
	}
	e.written[o.GetUID()] = o.GetResourceVersion()
	return false
}

// news reports whether the event of o, one of the Installation key's objects,
// must wake it now. An echo does not; nor does an event that comes during
// the sync of key, which end reports if it was news.
func (e *echoes) news(key cache.ObjectName, o metav1.Object) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	uid, rv := o.GetUID(), o.GetResourceVersion()
	if w, ok := e.written[uid]; ok {
		delete(e.written, uid)
		if w == rv {
			return false
		}
	}
	h := e.syncing[key]
	if h == nil {
		return true
	}
	if h.rvs == nil {
		h.rvs = map[types.UID]string{}
	}
	if _, twice := h.rvs[uid]; twice {
		h.news = true
	}
	h.rvs[uid] = rv
	return false
}

// forget drops what is remembered of a deleted object.
func (e *echoes) forget(uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.written, uid)
}

// awaiting reports whether a write to the object with uid has been answered
// and its event has not come yet: until it comes, the cache holds the object
// as it was before the write.
func (e *echoes) awaiting(uid types.UID) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.written[uid]
	return ok
}
