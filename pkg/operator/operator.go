// Package operator wires the operator together: clients, event recording,
// informers and the controller. The command and the tests both run it.
package operator

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"lin.dev/lin-operator/pkg/client/clientset/versioned"
	linscheme "lin.dev/lin-operator/pkg/client/clientset/versioned/scheme"
	"lin.dev/lin-operator/pkg/controller"
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
}

// Operator is a wired operator, ready to Run.
type Operator struct {
	// Controller is the Installation controller.
	Controller *controller.Controller

	config      Config
	informers   *controller.Informers
	broadcaster record.EventBroadcaster
}

// New makes the clients from restConfig, the informers and the controller.
func New(restConfig *rest.Config, cfg Config) (*Operator, error) {
	kubeClient, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("making the Kubernetes client: %w", err)
	}
	linClient, err := versioned.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("making the lin.dev client: %w", err)
	}
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kubeClient.CoreV1().Events("")})
	inf := controller.NewInformers(kubeClient, linClient, controller.InformerOptions{
		Namespaces: cfg.Namespaces, ResyncPeriod: cfg.ResyncPeriod, InstallationSelector: cfg.InstallationSelector,
		KeepManagedFields: cfg.KeepManagedFields, WatchAllChildren: cfg.WatchAllChildren,
	})
	ctrl, err := controller.New(kubeClient, linClient, inf, controller.Options{
		ClusterDomain: cfg.ClusterDomain,
		Recorder:      broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: Component}),
	})
	if err != nil {
		broadcaster.Shutdown()
		return nil, err
	}
	return &Operator{Controller: ctrl, config: cfg, informers: inf, broadcaster: broadcaster}, nil
}

// Run starts the informers and runs the controller until ctx is done; then it
// drains the queue, stops the informers, flushes the events and returns.
func (o *Operator) Run(ctx context.Context) error {
	defer o.broadcaster.Shutdown()
	o.informers.Start(ctx)
	defer o.informers.Shutdown()
	return o.Controller.Run(ctx, o.config.Workers)
}
