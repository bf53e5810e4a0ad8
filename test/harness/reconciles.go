package harness

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

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

// Snapshot returns the reconcile counts of the Installations names of
// namespace, by name.
func (c *ReconcileCounter) Snapshot(namespace string, names ...string) map[string]int {
	out := make(map[string]int, len(names))
	for _, name := range names {
		out[name] = c.Count(namespace, name)
	}
	return out
}

// WaitForMore waits until each Installation of before (a Snapshot of
// namespace) has been reconciled at least more times since, and fails the
// test after timeout.
func (c *ReconcileCounter) WaitForMore(t testing.TB, timeout time.Duration, namespace string, before map[string]int, more int) {
	t.Helper()
	Eventually(t, timeout, fmt.Sprintf("%d more reconciles of each of %d Installations", more, len(before)),
		func(context.Context) (bool, error) {
			for name, n := range before {
				if got := c.Count(namespace, name); got < n+more {
					return false, fmt.Errorf("%s reconciled %d times since, want %d", name, got-n, more)
				}
			}
			return true, nil
		})
}
