package controller

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/resources"
)

// child is what apply needs to know of one kind of child.
type child[T metav1.Object] struct {
	// kind names the kind in events and errors.
	kind string
	// get reads the live object from the informer cache.
	get func(namespace, name string) (T, error)
	// read reads it from the API server, for the rare create that finds
	// the name taken by an object the cache does not show.
	read func(ctx context.Context, namespace, name string) (T, error)
	// create and update write through the clientset.
	create func(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	update func(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	// merge returns a copy of live changed to what desired asks for, keeping
	// what others added and what the API server defaulted. apply writes only
	// when the copy differs from live.
	merge func(desired, live T) T
	// delete deletes through the clientset; nil for the kinds the operator
	// leaves to garbage collection (ConfigMaps).
	delete func(ctx context.Context, namespace, name string, opts metav1.DeleteOptions) error
	// unchecked names what desired holds that the CRD's schema does not
	// check, so that the API server may refuse it for the spec; "" when
	// nothing (nil: never). Writes that name the same stand or fall together.
	unchecked func(desired T) string
}

// write is the create or update of one child that a sync is about to send.
type write[T metav1.Object] struct {
	k      child[T]
	obj    T
	create bool
}

// pending is a write of any kind of child, as sendAll orders and sends them.
type pending interface {
	// send sends the write, as a dry run when dryRun is set, and returns
	// what it changed.
	send(ctx context.Context, c *Controller, inst *linv1.Installation, dryRun bool) (change, error)
	// unchecked is what child.unchecked says of the object written.
	unchecked() string
}

// planWrite appends to ws the write that makes the live child of desired
// match it, if it needs one: a create of a missing child, an update of one
// that differs. It returns an error, and no write, when the name is taken by
// an object that inst does not control.
func planWrite[T metav1.Object](ws []pending, inst *linv1.Installation, k child[T], desired T) ([]pending, error) {
	name := desired.GetName()
	live, err := k.get(desired.GetNamespace(), name)
	if apierrors.IsNotFound(err) {
		return append(ws, &write[T]{k: k, obj: desired, create: true}), nil
	}
	if err != nil {
		return ws, fmt.Errorf("reading %s %s from the cache: %w", k.kind, name, err)
	}
	if !metav1.IsControlledBy(live, inst) {
		return ws, conflictError(k.kind, name)
	}
	merged := k.merge(desired, live)
	if equality.Semantic.DeepEqual(merged, live) {
		return ws, nil
	}
	return append(ws, &write[T]{k: k, obj: merged}), nil
}

func (w *write[T]) unchecked() string {
	if w.k.unchecked == nil {
		return ""
	}
	return w.k.unchecked(w.obj)
}

// send sends the write. A dry run is checked by the API server in full but
// changes nothing, and reports no change.
func (w *write[T]) send(ctx context.Context, c *Controller, inst *linv1.Installation, dryRun bool) (change, error) {
	var mode []string
	if dryRun {
		mode = []string{metav1.DryRunAll}
	}
	name := w.obj.GetName()
	if !w.create {
		updated, err := w.k.update(ctx, w.obj, metav1.UpdateOptions{FieldManager: FieldManager, DryRun: mode})
		if err != nil {
			return change{}, writeError("updating", w.k.kind, name, err)
		}
		if !dryRun && updated.GetResourceVersion() != w.obj.GetResourceVersion() {
			// An update that stored nothing new has no event.
			c.echoes.wrote(cache.MetaObjectToName(inst), updated)
		}
		return w.done(dryRun, false, updated), nil
	}
	created, err := w.k.create(ctx, w.obj, metav1.CreateOptions{FieldManager: FieldManager, DryRun: mode})
	if apierrors.IsAlreadyExists(err) {
		return w.existing(ctx, c, inst, dryRun)
	}
	if err != nil {
		return change{}, writeError("creating", w.k.kind, name, err)
	}
	if !dryRun {
		c.echoes.wrote(cache.MetaObjectToName(inst), created)
	}
	return w.done(dryRun, true, created), nil
}

// done is the change that the write made once sent, with the object stored:
// none for a dry run.
func (w *write[T]) done(dryRun, created bool, stored T) change {
	if dryRun {
		return change{}
	}
	return change{created: created, kind: w.k.kind, name: w.obj.GetName(), stored: stored}
}

// existing handles a create that found its name taken by an object the
// cache does not show. The informers see only the operator's labelled
// children, and only some time after they are written: the object, read from
// the API server, is this Installation's own child when it carries its
// controller reference (one made by an earlier sync whose event has not
// arrived yet, or one whose managed-by label someone removed). Then it is
// made to match desired, labels included, as a cached child would be. Any
// other object belongs to someone else and is left alone.
func (w *write[T]) existing(ctx context.Context, c *Controller, inst *linv1.Installation, dryRun bool) (change, error) {
	name := w.obj.GetName()
	live, err := w.k.read(ctx, w.obj.GetNamespace(), name)
	if err != nil {
		// Gone again since the create, most likely: the retry creates it.
		return change{}, writeError("reading", w.k.kind, name, err)
	}
	if !metav1.IsControlledBy(live, inst) {
		return change{}, conflictError(w.k.kind, name)
	}
	merged := w.k.merge(w.obj, live)
	if equality.Semantic.DeepEqual(merged, live) {
		return change{}, nil
	}
	update := &write[T]{k: w.k, obj: merged}
	return update.send(ctx, c, inst, dryRun)
}

// mergeMeta sets on live the labels and annotations that desired carries,
// keeping those that others added, and removes those that the spec set
// before (as live records) and sets no more.
func mergeMeta(desired, live *metav1.ObjectMeta) {
	live.Labels = pruned(live.Labels, resources.RecordedKeys(live, resources.AnnotationSpecLabels), desired.Labels)
	live.Annotations = pruned(live.Annotations, resources.RecordedKeys(live, resources.AnnotationSpecAnnotations), desired.Annotations)
	live.Annotations = pruned(live.Annotations, recordAnnotations, desired.Annotations)
	live.Labels = mergeInto(live.Labels, desired.Labels)
	live.Annotations = mergeInto(live.Annotations, desired.Annotations)
}

// recordAnnotations are the annotations that record keys set from the spec;
// like the keys they list, they go when desired has none.
var recordAnnotations = []string{resources.AnnotationSpecLabels, resources.AnnotationSpecAnnotations, resources.AnnotationPodAnnotations}

// pruned deletes from m, a map of live's own that may be changed, the keys
// listed that desired lacks.
func pruned(m map[string]string, keys []string, desired map[string]string) map[string]string {
	for _, k := range keys {
		if _, ok := desired[k]; !ok {
			delete(m, k)
		}
	}
	return m
}

// mergeInto sets the entries of over in m, allocating m when needed.
func mergeInto(m, over map[string]string) map[string]string {
	if m == nil && len(over) > 0 {
		m = make(map[string]string, len(over))
	}
	for k, v := range over {
		m[k] = v
	}
	return m
}

// configMapChild reads ConfigMaps of one namespace's cache and writes them.
func (c *Controller) configMapChild(l *listers) child[*corev1.ConfigMap] {
	return child[*corev1.ConfigMap]{
		kind: "ConfigMap",
		get:  func(ns, name string) (*corev1.ConfigMap, error) { return l.configMaps.Get(ns, name) },
		read: func(ctx context.Context, ns, name string) (*corev1.ConfigMap, error) {
			return c.kubeClient.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		},
		create: func(ctx context.Context, o *corev1.ConfigMap, opts metav1.CreateOptions) (*corev1.ConfigMap, error) {
			return c.kubeClient.CoreV1().ConfigMaps(o.Namespace).Create(ctx, o, opts)
		},
		update: func(ctx context.Context, o *corev1.ConfigMap, opts metav1.UpdateOptions) (*corev1.ConfigMap, error) {
			return c.kubeClient.CoreV1().ConfigMaps(o.Namespace).Update(ctx, o, opts)
		},
		merge: mergeConfigMap,
	}
}

// mergeConfigMap: the operator owns the data of its ConfigMaps entirely.
func mergeConfigMap(desired, live *corev1.ConfigMap) *corev1.ConfigMap {
	merged := live.DeepCopy()
	mergeMeta(&desired.ObjectMeta, &merged.ObjectMeta)
	merged.Data = desired.Data
	merged.BinaryData = nil
	return merged
}

// serviceChild reads Services of one namespace's cache and writes them.
func (c *Controller) serviceChild(l *listers) child[*corev1.Service] {
	return child[*corev1.Service]{
		kind: "Service",
		get:  func(ns, name string) (*corev1.Service, error) { return l.services.Get(ns, name) },
		read: func(ctx context.Context, ns, name string) (*corev1.Service, error) {
			return c.kubeClient.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		},
		create: func(ctx context.Context, o *corev1.Service, opts metav1.CreateOptions) (*corev1.Service, error) {
			return c.kubeClient.CoreV1().Services(o.Namespace).Create(ctx, o, opts)
		},
		update: func(ctx context.Context, o *corev1.Service, opts metav1.UpdateOptions) (*corev1.Service, error) {
			return c.kubeClient.CoreV1().Services(o.Namespace).Update(ctx, o, opts)
		},
		merge:     mergeService,
		unchecked: uncheckedService,
		delete: func(ctx context.Context, ns, name string, opts metav1.DeleteOptions) error {
			return c.kubeClient.CoreV1().Services(ns).Delete(ctx, name, opts)
		},
	}
}

// uncheckedService: a Service of type ClusterIP with no labels or
// annotations from the spec holds only what the schema checks (ports, the
// operator's selector); node ports, source ranges and the user's metadata it
// does not, and each Service holds its own.
func uncheckedService(desired *corev1.Service) string {
	meta := desired.Annotations
	if desired.Spec.Type == corev1.ServiceTypeClusterIP && meta[resources.AnnotationSpecLabels] == "" && meta[resources.AnnotationSpecAnnotations] == "" {
		return ""
	}
	return "Service " + desired.Name
}

// mergeService sets the fields the operator renders and keeps the rest of the
// live spec, which the API server filled (cluster IPs, IP families, traffic
// policies) and which may not change. A field the spec leaves empty keeps
// what the API server chose (the load balancer class, the node port
// allocated to a port), or goes back to its default (the external traffic
// policy).
func mergeService(desired, live *corev1.Service) *corev1.Service {
	merged := live.DeepCopy()
	mergeMeta(&desired.ObjectMeta, &merged.ObjectMeta)
	d, m := &desired.Spec, &merged.Spec
	m.Type = d.Type
	m.Selector = d.Selector
	m.PublishNotReadyAddresses = d.PublishNotReadyAddresses
	m.LoadBalancerSourceRanges = d.LoadBalancerSourceRanges
	keepNodePorts := d.Type == corev1.ServiceTypeNodePort || d.Type == corev1.ServiceTypeLoadBalancer
	m.ExternalTrafficPolicy = d.ExternalTrafficPolicy
	if m.ExternalTrafficPolicy == "" && keepNodePorts {
		// The API server's default, which a policy removed from the spec goes back to.
		m.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
	if d.LoadBalancerClass != nil {
		m.LoadBalancerClass = d.LoadBalancerClass
	}
	ports := make([]corev1.ServicePort, len(d.Ports))
	for i, p := range d.Ports {
		ports[i] = p
		for _, lp := range live.Spec.Ports {
			if keepNodePorts && p.NodePort == 0 && lp.Name == p.Name && lp.Protocol == p.Protocol {
				ports[i].NodePort = lp.NodePort
			}
		}
	}
	m.Ports = ports
	return merged
}

// statefulSetChild reads StatefulSets of one namespace's cache and writes them.
func (c *Controller) statefulSetChild(l *listers) child[*appsv1.StatefulSet] {
	return child[*appsv1.StatefulSet]{
		kind: "StatefulSet",
		get:  func(ns, name string) (*appsv1.StatefulSet, error) { return l.statefulSets.Get(ns, name) },
		read: func(ctx context.Context, ns, name string) (*appsv1.StatefulSet, error) {
			return c.kubeClient.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		},
		create: func(ctx context.Context, o *appsv1.StatefulSet, opts metav1.CreateOptions) (*appsv1.StatefulSet, error) {
			return c.kubeClient.AppsV1().StatefulSets(o.Namespace).Create(ctx, o, opts)
		},
		update: func(ctx context.Context, o *appsv1.StatefulSet, opts metav1.UpdateOptions) (*appsv1.StatefulSet, error) {
			return c.kubeClient.AppsV1().StatefulSets(o.Namespace).Update(ctx, o, opts)
		},
		merge: mergeStatefulSet,
		// The shards' StatefulSets differ only in what the schema bounds
		// (names, the shard's labels and environment); sync writes one with
		// the desired pod template first.
		unchecked: func(*appsv1.StatefulSet) string { return "the StatefulSets" },
		delete: func(ctx context.Context, ns, name string, opts metav1.DeleteOptions) error {
			return c.kubeClient.AppsV1().StatefulSets(ns).Delete(ctx, name, opts)
		},
	}
}

// mergeStatefulSet keeps the live spec while it holds what desired sets and
// nothing that was added by hand (the API server adds defaults, which are no
// reason to write; see statefulSetSpecHolds) and the child was rendered from
// the same spec. Otherwise it takes the desired spec, with
// the immutable fields as stored and the pod template annotations that others
// added (`kubectl rollout restart`'s, say), so that no pod restarts for them.
func mergeStatefulSet(desired, live *appsv1.StatefulSet) *appsv1.StatefulSet {
	merged := live.DeepCopy()
	mergeMeta(&desired.ObjectMeta, &merged.ObjectMeta)
	if sameRendering(desired, live) && statefulSetSpecHolds(&desired.Spec, &live.Spec) {
		return merged
	}
	spec := desired.Spec.DeepCopy()
	spec.Selector = live.Spec.Selector
	spec.ServiceName = live.Spec.ServiceName
	spec.PodManagementPolicy = live.Spec.PodManagementPolicy
	spec.VolumeClaimTemplates = live.Spec.VolumeClaimTemplates
	others := pruned(live.Spec.Template.DeepCopy().Annotations, resources.RecordedKeys(&live.ObjectMeta, resources.AnnotationPodAnnotations),
		desired.Spec.Template.Annotations)
	spec.Template.Annotations = mergeInto(others, desired.Spec.Template.Annotations)
	merged.Spec = *spec
	return merged
}

// sameRendering reports whether live was written from the rendering desired has.
func sameRendering(desired, live metav1.Object) bool {
	return live.GetAnnotations()[resources.AnnotationSpecHash] == desired.GetAnnotations()[resources.AnnotationSpecHash]
}

// immutableChanged reports whether desired differs from live in a field that
// a StatefulSet cannot change in place.
func immutableChanged(desired, live *appsv1.StatefulSet) bool {
	d, l := desired.Spec, live.Spec
	return !equality.Semantic.DeepDerivative(d.Selector, l.Selector) ||
		d.ServiceName != l.ServiceName ||
		d.PodManagementPolicy != l.PodManagementPolicy ||
		!equality.Semantic.DeepDerivative(d.VolumeClaimTemplates, l.VolumeClaimTemplates)
}

// budgetChild reads PodDisruptionBudgets of one namespace's cache and writes them.
func (c *Controller) budgetChild(l *listers) child[*policyv1.PodDisruptionBudget] {
	return child[*policyv1.PodDisruptionBudget]{
		kind: "PodDisruptionBudget",
		get: func(ns, name string) (*policyv1.PodDisruptionBudget, error) {
			return l.budgets.Get(ns, name)
		},
		read: func(ctx context.Context, ns, name string) (*policyv1.PodDisruptionBudget, error) {
			return c.kubeClient.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{})
		},
		create: func(ctx context.Context, o *policyv1.PodDisruptionBudget, opts metav1.CreateOptions) (*policyv1.PodDisruptionBudget, error) {
			return c.kubeClient.PolicyV1().PodDisruptionBudgets(o.Namespace).Create(ctx, o, opts)
		},
		update: func(ctx context.Context, o *policyv1.PodDisruptionBudget, opts metav1.UpdateOptions) (*policyv1.PodDisruptionBudget, error) {
			return c.kubeClient.PolicyV1().PodDisruptionBudgets(o.Namespace).Update(ctx, o, opts)
		},
		merge: mergeBudget,
		delete: func(ctx context.Context, ns, name string, opts metav1.DeleteOptions) error {
			return c.kubeClient.PolicyV1().PodDisruptionBudgets(ns).Delete(ctx, name, opts)
		},
	}
}

// mergeBudget: the operator owns the spec of its budgets entirely; the API
// server defaults none of it.
func mergeBudget(desired, live *policyv1.PodDisruptionBudget) *policyv1.PodDisruptionBudget {
	merged := live.DeepCopy()
	mergeMeta(&desired.ObjectMeta, &merged.ObjectMeta)
	merged.Spec = desired.Spec
	return merged
}
