// Package harness runs the operator inside a test process against a real API
// server, counting every request it makes, and offers the waits and object
// makers that the integration tests share.
package harness

import (
	"context"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"lin.dev/lin-operator/pkg/controller"
	"lin.dev/lin-operator/pkg/operator"
)

// Options configure an operator run by a test.
type Options struct {
	// Namespaces to watch; empty means all.
	Namespaces []string
	// Workers defaults to 4.
	Workers int
	// ResyncPeriod defaults to zero: no resync.
	ResyncPeriod time.Duration
	// InstallationSelector selects the Installations to reconcile.
	InstallationSelector string
}

// Operator is an operator running in the test process.
type Operator struct {
	// Requests counts every request the operator's clients made.
	Requests *RequestCounter
	// Controller is the running controller.
	Controller *controller.Controller

	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// StartOperator runs the operator against cfg until the test ends (or Stop),
// and returns once its caches have synced.
func StartOperator(t testing.TB, cfg *rest.Config, opts Options) *Operator {
	t.Helper()
	if opts.Workers == 0 {
		opts.Workers = 4
	}
	counter := NewRequestCounter()
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = operator.Component + "-test"
	cfg.Wrap(counter.Wrap)
	op, err := operator.New(cfg, operator.Config{
		Namespaces: opts.Namespaces, Workers: opts.Workers, ResyncPeriod: opts.ResyncPeriod,
		ClusterDomain: "cluster.local", InstallationSelector: opts.InstallationSelector,
	})
	if err != nil {
		t.Fatalf("making the operator: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	run := &Operator{Requests: counter, Controller: op.Controller, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(run.done)
		if err := op.Run(ctx); err != nil {
			t.Errorf("operator: %v", err)
		}
	}()
	t.Cleanup(run.Stop)
	Eventually(t, 30*time.Second, "the operator's caches to sync", func(context.Context) (bool, error) {
		return op.Controller.HasSynced(), nil
	})
	return run
}

// Stop stops the operator and waits until its workers are done.
func (o *Operator) Stop() {
	o.once.Do(func() {
		o.cancel()
		<-o.done
	})
}
