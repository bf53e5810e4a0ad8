package controller

import (
	"context"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"lin.dev/lin-operator/pkg/client/clientset/versioned"
	lininformers "lin.dev/lin-operator/pkg/client/informers/externalversions"
	"lin.dev/lin-operator/pkg/resources"
)

// Informers holds a kube and a lin shared informer factory per watched
// namespace ("" stands for all namespaces).
type Informers struct {
	// Kube are the factories of ConfigMaps, Services, StatefulSets,
	// PodDisruptionBudgets and the StatefulSets' pods, which list and watch
	// only objects labelled as managed by the operator.
	Kube map[string]kubeinformers.SharedInformerFactory
	// Lin are the factories of Installations.
	Lin map[string]lininformers.SharedInformerFactory
}

// InformerOptions choose what the informers watch.
type InformerOptions struct {
	// Namespaces are the namespaces to watch; empty means all.
	Namespaces []string
	// ResyncPeriod is how often every Installation is reconciled again even
	// when nothing changed; zero turns resync off.
	ResyncPeriod time.Duration
	// InstallationSelector is a label selector on Installations; empty selects all.
	InstallationSelector string
	// KeepManagedFields keeps managedFields in the caches, which Transform
	// drops. It is there to measure what dropping them saves; the operator
	// never sets it.
	KeepManagedFields bool
	// WatchAllChildren lists and watches every ConfigMap, Service and
	// StatefulSet, not only the operator's. It is there to measure what the
	// label filter saves; the operator never sets it.
	WatchAllChildren bool
	// Children, if set, list and watch the children, packing each as it is
	// decoded. Without them, the kube client's typed informers do, and the
	// transform packs what they decode: so it is with the fake clientsets
	// of unit tests.
	Children *ChildClients
}

// NewInformers makes the factories. Child informers are filtered to the
// operator's label, and every informer passes each object through Transform
// before it reaches its cache. KeepManagedFields and WatchAllChildren turn
// the dropping of managedFields and the filter off, for measuring what they
// save.
func NewInformers(kubeClient kubernetes.Interface, linClient versioned.Interface, opts InformerOptions) *Informers {
	namespaces := opts.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	inf := &Informers{
		Kube: map[string]kubeinformers.SharedInformerFactory{},
		Lin:  map[string]lininformers.SharedInformerFactory{},
	}
	transform := transformFunc(opts)
	childSelector := resources.ManagedBySelector
	if opts.WatchAllChildren {
		childSelector = ""
	}
	for _, ns := range namespaces {
		inf.Kube[ns] = kubeinformers.NewSharedInformerFactoryWithOptions(kubeClient, opts.ResyncPeriod,
			kubeinformers.WithNamespace(ns),
			kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = childSelector }),
			kubeinformers.WithTransform(transform))
		if opts.Children != nil {
			opts.Children.register(inf.Kube[ns], ns, childSelector)
		}
		inf.Lin[ns] = lininformers.NewSharedInformerFactoryWithOptions(linClient, opts.ResyncPeriod,
			lininformers.WithNamespace(ns),
			lininformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = opts.InstallationSelector }),
			lininformers.WithTransform(transform))
	}
	return inf
}

// Start starts every informer that has been asked for; it returns at once.
func (inf *Informers) Start(ctx context.Context) {
	for _, f := range inf.Kube {
		f.Start(ctx.Done())
	}
	for _, f := range inf.Lin {
		f.Start(ctx.Done())
	}
}

// Shutdown waits for the informers' goroutines to end after ctx is done.
func (inf *Informers) Shutdown() {
	for _, f := range inf.Kube {
		f.Shutdown()
	}
	for _, f := range inf.Lin {
		f.Shutdown()
	}
}

// byController names the index of StatefulSets and PodDisruptionBudgets by
// the UID of the controlling owner. A sync finds its Installation's shards
// there, instead of matching labels on every object of the namespace: that
// scan made each sync cost time in proportion to the number of Installations.
const byController = "byController"

// controllerUID is the index function of byController.
func controllerUID(obj any) ([]string, error) {
	m, err := apimeta.Accessor(obj)
	if err != nil {
		return nil, nil
	}
	if ref := metav1.GetControllerOf(m); ref != nil {
		return []string{string(ref.UID)}, nil
	}
	return nil, nil
}
