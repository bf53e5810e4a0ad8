// Package harness runs the operator inside a test (or benchmark) process
// against a real API server, counting every request it makes, and offers the
// waits and object makers that the integration tests share.
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

// Operator is an operator running in this process.
type Operator struct {
	// Requests counts every request the operator's clients made.
	Requests *RequestCounter
	// Reconciles counts the reconciles of each Installation.
	Reconciles *ReconcileCounter
	// Controller is the running controller.
	Controller *controller.Controller

	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
	// err is what the operator's Run returned; set when done is closed.
	err error
}

// StartOperator runs the operator against cfg until the test ends (or Stop),
// and returns once its caches have synced.
func StartOperator(t testing.TB, cfg *rest.Config, opts Options) *Operator {
	t.Helper()
	if opts.Workers == 0 {
		opts.Workers = 4
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = operator.Component + "-test"
	run, err := RunOperator(cfg, operator.Config{
		Namespaces: opts.Namespaces, Workers: opts.Workers, ResyncPeriod: opts.ResyncPeriod,
		ClusterDomain: "cluster.local", InstallationSelector: opts.InstallationSelector,
	})
	if err != nil {
		t.Fatalf("making the operator: %v", err)
	}
	t.Cleanup(func() {
		if err := run.Stop(); err != nil {
			t.Errorf("operator: %v", err)
		}
	})
	Eventually(t, 30*time.Second, "the operator's caches to sync", func(context.Context) (bool, error) {
		return run.Controller.HasSynced(), nil
	})
	return run
}

// RunOperator runs the operator configured by oc against cfg, counting its
// requests, until Stop. It returns at once; Controller.HasSynced tells when
// the caches have synced. Programs that are not tests (the benchmark) use it
// as StartOperator does.
func RunOperator(cfg *rest.Config, oc operator.Config) (*Operator, error) {
	counter, reconciles := NewRequestCounter(), NewReconcileCounter()
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(counter.Wrap)
	oc.OnReconcile = reconciles.observe
	op, err := operator.New(cfg, oc)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	run := &Operator{Requests: counter, Reconciles: reconciles, Controller: op.Controller, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(run.done)
		run.err = op.Run(ctx)
	}()
	return run, nil
}

// Stop stops the operator and waits until its workers are done. It returns
// the error the operator's Run returned, if any.
func (o *Operator) Stop() error {
	o.once.Do(func() {
		o.cancel()
		<-o.done
	})
	return o.err
}
