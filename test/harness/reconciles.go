package harness

import (
	"sync"

	"k8s.io/client-go/tools/cache"
)

// ReconcileCounter counts the reconciles of each Installation: a positive
// sign that the operator has looked at one, for tests that must show it did
// something (or nothing) after it did.
type ReconcileCounter struct {
	mu     sync.Mutex
	counts map[cache.ObjectName]int
}

// NewReconcileCounter returns an empty counter.
func NewReconcileCounter() *ReconcileCounter {
	return &ReconcileCounter{counts: map[cache.ObjectName]int{}}
}

// observe records one reconcile of key.
func (c *ReconcileCounter) observe(key cache.ObjectName, _ error) {
	c.mu.Lock()
	c.counts[key]++
	c.mu.Unlock()
}

// Count returns how often the Installation namespace/name was reconciled.
func (c *ReconcileCounter) Count(namespace, name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[cache.ObjectName{Namespace: namespace, Name: name}]
}
