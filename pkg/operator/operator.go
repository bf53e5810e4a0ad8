// Package operator wires the operator together: clients, event recording,
// informers, the controller, leader election, and the metrics and health
// endpoints. The command and the tests both run it.
package operator

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/record"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/client/clientset/versioned"
	linscheme "lin.dev/lin-operator/pkg/client/clientset/versioned/scheme"
	"lin.dev/lin-operator/pkg/controller"
	"lin.dev/lin-operator/pkg/metrics"
)

// Component names the operator in events.
const Component = "lin-operator"

func init() {
	// Events on Installations need their kind in the scheme the recorder uses.
	utilruntime.Must(linscheme.AddToScheme(scheme.Scheme))
}

// Config is what the operator is told on its command line.
type Config struct {
	// Namespaces to watch; empty means all.
	Namespaces []string
	// Workers is the number of Installations reconciled at once.
	Workers int
	// ResyncPeriod is how often every Installation is reconciled again; zero: never.
	ResyncPeriod time.Duration
	// ClusterDomain is the cluster's DNS domain.
	ClusterDomain string
	// InstallationSelector is a label selector of the Installations to reconcile.
	InstallationSelector string
	// KeepManagedFields and WatchAllChildren turn off the informers' managedFields
	// transform and label filter; they are there for measuring what those save
	// (see controller.InformerOptions), and the command never sets them.
	KeepManagedFields, WatchAllChildren bool
	// LeaderElection, if set, runs the workers only while this process
	// holds a Lease; the informers run either way.
	LeaderElection *LeaderElection
	// MetricsAddress is where /metrics is served; empty: nowhere.
	MetricsAddress string
	// MetricsInsecure serves /metrics over plain HTTP to anyone. Otherwise,
	// as the zero value has it, /metrics is served over HTTPS, and only to
	// callers whose bearer token a TokenReview accepts and whom a
	// SubjectAccessReview allows get on /metrics.
	MetricsInsecure bool
	// MetricsCertDir holds the tls.crt and tls.key of /metrics over HTTPS;
	// empty: a self-signed certificate made at start.
	MetricsCertDir string
	// HealthAddress is where /healthz and /readyz are served; empty: nowhere.
	HealthAddress string
	// Compression lets the API server gzip its answers. Off by default: the
	// API server compresses every event of a watch that began as a streamed
	// list (as the informers' do) on its own, which costs it CPU on every
	// write to a child, and on the network between an operator and its API
	// server, a cluster's own, the bytes saved are not worth it.
	Compression bool
	// OnReconcile, if set, is told of every reconcile besides the metrics,
	// so that tests and the benchmark can count them per Installation.
	OnReconcile func(key cache.ObjectName, err error)
}

// Operator is a wired operator, ready to Run.
type Operator struct {
	// Controller is the Installation controller.
	Controller *controller.Controller

	config      Config
	informers   *controller.Informers
	broadcaster record.EventBroadcaster
	// recorder records the operator's events, on Installations and on the Lease.
	recorder record.EventRecorder
	// leaseClient renews the Lease; it has a rate limiter of its own, so
	// that a busy controller cannot delay a renewal.
	leaseClient kubernetes.Interface
	// reviewClient asks for the TokenReviews and SubjectAccessReviews of
	// scrapes, with a rate limiter of its own for the same reason.
	reviewClient kubernetes.Interface
	// watchdog fails /healthz when the leader has not renewed its Lease in time.
	watchdog *leaderelection.HealthzAdaptor
	// electing is true while the leader election runs.
	electing atomic.Bool
	// installations lists the cached Installations, for metrics.
	installations func() ([]*linv1.Installation, error)
}

// New makes the clients from restConfig, the informers and the controller.
func New(restConfig *rest.Config, cfg Config) (*Operator, error) {
	// Before the clients and the queue are made: they take their metrics then.
	metrics.Register()
	restConfig = rest.CopyConfig(restConfig)
	restConfig.DisableCompression = !cfg.Compression
	kubeClient, err := kubernetes.NewForConfig(ProtobufConfig(restConfig))
	if err != nil {
		return nil, fmt.Errorf("making the Kubernetes client: %w", err)
	}
	linClient, err := versioned.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("making the lin.dev client: %w", err)
	}
	inf, err := newInformers(restConfig, cfg)
	if err != nil {
		return nil, err
	}
	leaseClient, err := kubernetes.NewForConfig(ProtobufConfig(restConfig))
	if err != nil {
		return nil, fmt.Errorf("making the Lease client: %w", err)
	}
	reviewConfig := ProtobufConfig(restConfig)
	reviewConfig.Wrap(metrics.CountAccessReviews)
	reviewClient, err := kubernetes.NewForConfig(reviewConfig)
	if err != nil {
		return nil, fmt.Errorf("making the review client: %w", err)
	}
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kubeClient.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: Component})
	ctrl, err := controller.New(kubeClient, linClient, inf, controller.Options{
		ClusterDomain: cfg.ClusterDomain,
		Recorder:      recorder,
		ObserveReconcile: func(key cache.ObjectName, d time.Duration, err error) {
			metrics.ObserveReconcile(d, err)
			if cfg.OnReconcile != nil {
				cfg.OnReconcile(key, err)
			}
		},
	})
	if err != nil {
		broadcaster.Shutdown()
		return nil, err
	}
	return &Operator{
		Controller: ctrl, config: cfg, informers: inf, broadcaster: broadcaster, recorder: recorder,
		leaseClient: leaseClient, reviewClient: reviewClient,
		watchdog:      leaderelection.NewLeaderHealthzAdaptor(watchdogTimeout),
		installations: cachedInstallations(inf),
	}, nil
}

// newInformers makes the informers. Their lists and watches go through
// clients of their own with no Timeout: restConfig's bounds one request, and
// would cut every watch after it, while the reflector ends its watches by
// itself (5 to 10 minutes) and resumes them from the last version seen.
func newInformers(restConfig *rest.Config, cfg Config) (*controller.Informers, error) {
	watchConfig := rest.CopyConfig(restConfig)
	watchConfig.Timeout = 0
	kubeWatchClient, err := kubernetes.NewForConfig(ProtobufConfig(watchConfig))
	if err != nil {
		return nil, fmt.Errorf("making the Kubernetes client: %w", err)
	}
	linWatchClient, err := controller.NewInstallationWatchClient(watchConfig)
	if err != nil {
		return nil, fmt.Errorf("making the lin.dev client: %w", err)
	}
	children, err := controller.NewChildClients(watchConfig, cfg.KeepManagedFields)
	if err != nil {
		return nil, fmt.Errorf("making the children's clients: %w", err)
	}
	return controller.NewInformers(kubeWatchClient, linWatchClient, controller.InformerOptions{
		Namespaces: cfg.Namespaces, ResyncPeriod: cfg.ResyncPeriod, InstallationSelector: cfg.InstallationSelector,
		KeepManagedFields: cfg.KeepManagedFields, WatchAllChildren: cfg.WatchAllChildren, Children: children,
	}), nil
}

// ProtobufConfig returns a copy of cfg that talks protobuf, for the clients of
// Kubernetes' own kinds, as kube-controller-manager's do: the API server
// encodes it, and the operator decodes it, at a fraction of JSON's cost,
// which tells most when the caches list every child on a start. The
// Installations' client stays on JSON, the one encoding of custom resources.
func ProtobufConfig(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return cfg
}

// watchdogTimeout is how long past its lease duration a leader that cannot
// renew still counts as healthy, as in Kubernetes' own controller managers.
const watchdogTimeout = 20 * time.Second

// Run serves the endpoints, starts the informers and runs the controller
// (with leader election, only while it leads) until ctx is done; then it
// drains the queue, releases the Lease, stops the informers and the
// endpoints, flushes the events and returns. It returns ErrLeaseLost early if
// the lead is lost.
func (o *Operator) Run(ctx context.Context) error {
	defer o.broadcaster.Shutdown()
	stopServing, err := o.serve()
	if err != nil {
		return err
	}
	defer stopServing()
	// The informers get a context of their own, as Run may return before
	// ctx is done (ErrLeaseLost) and must stop them to return at all.
	informersCtx, stopInformers := context.WithCancel(ctx)
	o.informers.Start(informersCtx)
	defer func() {
		stopInformers()
		o.informers.Shutdown()
	}()
	if o.config.LeaderElection == nil {
		return o.Controller.Run(ctx, o.config.Workers)
	}
	return o.runElected(ctx)
}
