package operator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// LeaderElection configures the election, through a Lease, of the one
// replica that runs workers.
type LeaderElection struct {
	// Namespace and Name name the Lease.
	Namespace, Name string
	// LeaseDuration is how long the other replicas wait after the last
	// renewal they saw before they take over from a leader that died.
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader keeps trying to renew before it
	// gives up the lead, and Run fails with ErrLeaseLost.
	RenewDeadline time.Duration
	// RetryPeriod is the time between tries to take or renew the Lease.
	RetryPeriod time.Duration
}

// ErrLeaseLost is Run's error when the leader could not renew its Lease. Run
// returns it without waiting for the workers to drain: the process should
// exit at once, since another replica may be leading already.
var ErrLeaseLost = errors.New("lost the leader election Lease")

// term is one replica's time as leader, shared by the election's callback and
// the shutdown.
type term struct {
	mu sync.Mutex
	// stopping is set when shutdown began; no term starts after it.
	stopping bool
	// done receives the controller's result; nil until a term began.
	done chan error
}

// begin starts a term, or returns nil when the operator is shutting down.
func (t *term) begin() chan error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopping {
		return nil
	}
	t.done = make(chan error, 1)
	return t.done
}

// stop forbids a new term and reports whether one began.
func (t *term) stop() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopping = true
	return t.done != nil
}

// result waits for the term's controller to return, if a term began.
func (t *term) result() error {
	t.mu.Lock()
	done := t.done
	t.mu.Unlock()
	if done == nil {
		return nil
	}
	return <-done
}

// runElected campaigns for the Lease and runs the controller while it leads.
// The informers already run, so a replica that takes over starts with warm
// caches. On shutdown the queue drains before the Lease is released, so that
// the next leader never writes alongside this one; that is why the election
// has a context of its own rather than ctx.
func (o *Operator) runElected(ctx context.Context) error {
	electCtx, endElection := context.WithCancel(context.WithoutCancel(ctx))
	defer endElection()
	var t term
	le, err := o.newElector(func(leadCtx context.Context) {
		done := t.begin()
		if done == nil {
			return
		}
		// The workers stop on shutdown, or when the lead is lost.
		runCtx, cancel := context.WithCancel(ctx)
		stop := context.AfterFunc(leadCtx, cancel)
		done <- o.Controller.Run(runCtx, o.config.Workers)
		stop()
		cancel()
		endElection()
	})
	if err != nil {
		return err
	}
	// A shutdown before this replica leads ends the election at once; one
	// while it leads ends it once the workers have drained, above.
	defer context.AfterFunc(ctx, func() {
		if !t.stop() {
			endElection()
		}
	})()
	o.electing.Store(true)
	le.Run(electCtx)
	o.electing.Store(false)
	if ctx.Err() == nil {
		return ErrLeaseLost
	}
	return t.result()
}

// newElector makes the elector of the configured Lease, which calls lead in
// a goroutine of its own once this process holds the Lease.
func (o *Operator) newElector(lead func(context.Context)) (*leaderelection.LeaderElector, error) {
	cfg := o.config.LeaderElection
	// The host name is the pod's name; the suffix tells apart two runs of
	// one pod, and processes on one host.
	host, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("naming this process for the Lease: %w", err)
	}
	identity := host + "_" + string(uuid.NewUUID())
	logger := klog.Background().WithValues("lease", cfg.Namespace+"/"+cfg.Name, "identity", identity)
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: cfg.Namespace, Name: cfg.Name},
			Client:     o.leaseClient.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: identity, EventRecorder: o.recorder},
		},
		Name:            cfg.Name,
		LeaseDuration:   cfg.LeaseDuration,
		RenewDeadline:   cfg.RenewDeadline,
		RetryPeriod:     cfg.RetryPeriod,
		ReleaseOnCancel: true,
		WatchDog:        o.watchdog,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				logger.Info("Leading: starting the workers")
				lead(ctx)
			},
			OnStoppedLeading: func() { logger.Info("Not leading") },
			OnNewLeader:      func(leader string) { logger.Info("New leader", "leader", leader) },
		},
	})
	if err != nil {
		return nil, fmt.Errorf("leader election: %w", err)
	}
	o.watchdog.SetLeaderElection(le)
	return le, nil
}
