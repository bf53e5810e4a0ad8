package controller

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// deletions remembers the children this controller deleted, and the
// Installations that a status write found gone, until their deletion reaches
// the cache. A sync that runs on a cache that still holds such an object
// waits for the delete event instead of deleting the child again or
// reconciling the Installation, the way Kubernetes' controllers keep
// "expectations".
type deletions struct {
	mu   sync.Mutex
	uids map[types.UID]struct{}
}

// newDeletions returns an empty set.
func newDeletions() *deletions {
	return &deletions{uids: map[types.UID]struct{}{}}
}

// expect records that the object with uid was deleted.
func (d *deletions) expect(uid types.UID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.uids[uid] = struct{}{}
}

// pending reports whether the deletion of uid has not reached the cache yet.
func (d *deletions) pending(uid types.UID) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.uids[uid]
	return ok
}

// observed forgets uid once the cache has seen it go.
func (d *deletions) observed(uid types.UID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.uids, uid)
}
