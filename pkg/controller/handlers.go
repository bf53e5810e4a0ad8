package controller

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	lininformers "lin.dev/lin-operator/pkg/client/informers/externalversions"
	linlisters "lin.dev/lin-operator/pkg/client/listers/lin/v1"
	"lin.dev/lin-operator/pkg/resources"
)

// listers read one watched namespace's caches.
type listers struct {
	installations linlisters.InstallationLister
	// The children's caches hold them packed; these listers decode them.
	configMaps   configMapLister
	services     serviceLister
	statefulSets statefulSetLister
	budgets      budgetLister
	// events holds the events about StatefulSets, indexed byInvolvedUID.
	events cache.Indexer
	// pods holds the StatefulSets' pods, slimmed (see slimPod), indexed
	// byController.
	pods cache.Indexer
}

// watch asks the factories of the watched namespace ns for the informers the
// controller needs, registers its event handlers, and returns their listers.
func (c *Controller) watch(ns string, linFactory lininformers.SharedInformerFactory, kubeFactory kubeinformers.SharedInformerFactory) (*listers, []cache.InformerSynced, error) {
	insts := linFactory.Lin().V1().Installations()
	cms := kubeFactory.Core().V1().ConfigMaps()
	svcs := kubeFactory.Core().V1().Services()
	stss := kubeFactory.Apps().V1().StatefulSets()
	pdbs := kubeFactory.Policy().V1().PodDisruptionBudgets()
	events := kubeFactory.InformerFor(&corev1.Event{}, newEventInformer(ns))
	pods := kubeFactory.Core().V1().Pods().Informer()

	for _, inf := range []cache.SharedIndexInformer{stss.Informer(), pdbs.Informer(), pods} {
		if err := inf.AddIndexers(cache.Indexers{byController: controllerUID}); err != nil {
			return nil, nil, err
		}
	}
	statefulSets := newPackedLister[appsv1.StatefulSet](stss.Informer(), appsv1.Resource("statefulsets"))
	var synced []cache.InformerSynced
	childHandler := onChange(c.childChanged, func(obj any) {
		c.observeDeletion(obj)
		c.handleChild(obj)
	})
	for _, inf := range []struct {
		informer cache.SharedIndexInformer
		handler  cache.ResourceEventHandler
	}{
		{insts.Informer(), c.installationHandler()},
		{cms.Informer(), childHandler},
		{svcs.Informer(), childHandler},
		{stss.Informer(), childHandler},
		{pdbs.Informer(), childHandler},
		{events, c.eventHandler(stss.Informer().GetIndexer())},
		{pods, c.podHandler(statefulSets)},
	} {
		reg, err := inf.informer.AddEventHandler(inf.handler)
		if err != nil {
			return nil, nil, err
		}
		synced = append(synced, reg.HasSynced)
	}
	return &listers{
		installations: insts.Lister(),
		configMaps:    newPackedLister[corev1.ConfigMap](cms.Informer(), corev1.Resource("configmaps")),
		services:      newPackedLister[corev1.Service](svcs.Informer(), corev1.Resource("services")),
		statefulSets:  statefulSets,
		budgets:       newPackedLister[policyv1.PodDisruptionBudget](pdbs.Informer(), policyv1.Resource("poddisruptionbudgets")),
		events:        events.GetIndexer(),
		pods:          pods.GetIndexer(),
	}, synced, nil
}

// installationHandler queues an Installation on every event but the echo of
// its sync's own status write (see echoes). Every update is queued, resyncs
// included: a resync is how drift that no event announced (a foreign object
// deleted, say) is found.
func (c *Controller) installationHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueueInstallation,
		UpdateFunc: func(old, obj any) {
			inst, ok := obj.(*linv1.Installation)
			if !ok {
				c.enqueueInstallation(obj)
				return
			}
			c.statusWrites.observed(inst)
			if sameResourceVersion(old, obj) || c.echoes.news(cache.MetaObjectToName(inst), inst) {
				c.enqueueInstallation(obj)
			}
		},
		DeleteFunc: func(obj any) {
			c.observeDeletion(obj)
			c.enqueueInstallation(obj)
		},
	}
}

// listersFor returns the listers of the watched namespace that holds ns.
func (c *Controller) listersFor(ns string) *listers {
	if l, ok := c.listers[metav1.NamespaceAll]; ok {
		return l
	}
	return c.listers[ns]
}

// enqueueInstallation queues the key of an Installation (or its tombstone).
func (c *Controller) enqueueInstallation(obj any) {
	key, err := cache.DeletionHandlingObjectToName(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.queue.Add(key)
}

// handleChild queues the Installation that a child belongs to (see owner).
func (c *Controller) handleChild(obj any) {
	if key, _, ok := c.owner(obj); ok {
		c.queue.Add(key)
	}
}

// childChanged queues the Installation that a created or changed child
// belongs to, unless the event is the echo of its own sync's write.
func (c *Controller) childChanged(obj any) {
	if key, m, ok := c.owner(obj); ok && c.echoes.news(key, m) {
		c.queue.Add(key)
	}
}

// owner returns the key of the Installation that controls a child, and the
// child's metadata. The owner is resolved by group, kind and UID, so that a
// child of a deleted Installation does not wake a new one of the same name.
// A managed object without a controller (a foreign object that took the
// operator's label) belongs to the Installation it names, which then reports
// the conflict.
func (c *Controller) owner(obj any) (cache.ObjectName, metav1.Object, bool) {
	m, err := apimeta.Accessor(unwrapTombstone(obj))
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("child event with an object without metadata: %T", obj))
		return cache.ObjectName{}, nil, false
	}
	ref := metav1.GetControllerOf(m)
	if ref == nil {
		name := m.GetLabels()[resources.LabelInstallation]
		return cache.ObjectName{Namespace: m.GetNamespace(), Name: name}, m, name != ""
	}
	// By group, kind and UID, as the StatefulSet controller resolves a
	// controller reference: another version of the Installation is the same
	// owner.
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || gv.Group != linv1.SchemeGroupVersion.Group || ref.Kind != "Installation" {
		return cache.ObjectName{}, nil, false
	}
	l := c.listersFor(m.GetNamespace())
	if l == nil {
		return cache.ObjectName{}, nil, false
	}
	inst, err := l.installations.Installations(m.GetNamespace()).Get(ref.Name)
	if err != nil || inst.UID != ref.UID {
		return cache.ObjectName{}, nil, false
	}
	return cache.MetaObjectToName(inst), m, true
}

// eventHandler wakes the Installation whose StatefulSet, found in
// statefulSets, a pod creation event is about: a refusal makes it Degraded,
// a success after one clears that.
func (c *Controller) eventHandler(statefulSets cache.Indexer) cache.ResourceEventHandler {
	handle := func(obj any) {
		e, ok := unwrapTombstone(obj).(*corev1.Event)
		if !ok || (e.Reason != reasonFailedCreate && e.Reason != reasonSuccessfulCreate) {
			return
		}
		sts, exists, err := statefulSets.GetByKey(e.InvolvedObject.Namespace + "/" + e.InvolvedObject.Name)
		if err == nil && exists {
			c.handleChild(sts)
		}
	}
	return onChange(handle, handle)
}

// onChange returns the handlers that call changed on an object added, or
// updated to a new resourceVersion, and deleted on an object deleted. A
// resync delivers the same object again; only a real change needs its
// owner reconciled.
func onChange(changed, deleted func(any)) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: changed,
		UpdateFunc: func(old, obj any) {
			if !sameResourceVersion(old, obj) {
				changed(obj)
			}
		},
		DeleteFunc: deleted,
	}
}

// indexed returns the cached objects of type T under key in index.
func indexed[T any](indexer cache.Indexer, index, key string) []T {
	objs, err := indexer.ByIndex(index, key)
	if err != nil {
		return nil
	}
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
	}
	return out
}

// sameResourceVersion reports whether two objects carry one ResourceVersion.
func sameResourceVersion(a, b any) bool {
	ma, errA := apimeta.Accessor(a)
	mb, errB := apimeta.Accessor(b)
	return errA == nil && errB == nil && ma.GetResourceVersion() == mb.GetResourceVersion()
}

// observeDeletion forgets a deleted object, or a tombstone's, among the
// deletions the cache had not shown yet and the writes whose event had not
// come.
func (c *Controller) observeDeletion(obj any) {
	if m, err := apimeta.Accessor(unwrapTombstone(obj)); err == nil {
		c.deletions.observed(m.GetUID())
		c.echoes.forget(m.GetUID())
	}
}

// unwrapTombstone returns the object a DeletedFinalStateUnknown stands for, or obj.
func unwrapTombstone(obj any) any {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return obj
}
