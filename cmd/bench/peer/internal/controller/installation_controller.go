// Package controller holds the peer's reconciler of Installations.
package controller

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	opcontroller "lin.dev/lin-operator/pkg/controller"
	"lin.dev/lin-operator/pkg/resources"
)

// InstallationReconciler reconciles an Installation into its children and
// its status.
type InstallationReconciler struct {
	client.Client
	Scheme        *runtime.Scheme
	Recorder      events.EventRecorder
	ClusterDomain string
}

// +kubebuilder:rbac:groups=lin.dev,resources=installations,verbs=get;list;watch
// +kubebuilder:rbac:groups=lin.dev,resources=installations/status,verbs=get;update
// +kubebuilder:rbac:groups="",resources=configmaps;services,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile makes the children of the Installation req names what its spec
// renders (pkg/resources, as the operator), deletes those it no longer
// renders, records one event of what it changed and writes the status that
// the operator computes, when it differs.
func (r *InstallationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)
	var inst linv1.Installation
	if err := r.Get(ctx, req.NamespacedName, &inst); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !inst.DeletionTimestamp.IsZero() {
		// Garbage collection deletes the children, which it owns.
		return ctrl.Result{}, nil
	}
	desired, err := resources.NewChildren(&inst, r.ClusterDomain)
	if resources.IsInvalidSpec(err) {
		return ctrl.Result{}, r.degraded(ctx, &inst, err)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	var changed []string
	apply := func(obj client.Object, mutate func(exists bool)) error {
		res, err := controllerutil.CreateOrUpdate(ctx, r.Client, obj, func() error {
			mutate(obj.GetResourceVersion() != "")
			return controllerutil.SetControllerReference(&inst, obj, r.Scheme)
		})
		if err != nil {
			return fmt.Errorf("%T %s: %w", obj, obj.GetName(), err)
		}
		if res != controllerutil.OperationResultNone {
			changed = append(changed, fmt.Sprintf("%s %s", res, obj.GetName()))
		}
		return nil
	}
	for _, want := range desired.ConfigMaps {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: want.Name, Namespace: want.Namespace}}
		if err := apply(cm, func(bool) {
			if mergeMeta(&cm.ObjectMeta, &want.ObjectMeta) {
				cm.Data = want.Data
			}
		}); err != nil {
			return ctrl.Result{}, err
		}
	}
	for _, want := range desired.Services {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: want.Name, Namespace: want.Namespace}}
		if err := apply(svc, func(bool) {
			if mergeMeta(&svc.ObjectMeta, &want.ObjectMeta) {
				svc.Spec = serviceSpec(want.Spec, svc.Spec)
			}
		}); err != nil {
			return ctrl.Result{}, err
		}
	}
	stored := make([]*appsv1.StatefulSet, len(desired.StatefulSets))
	for i, want := range desired.StatefulSets {
		sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: want.Name, Namespace: want.Namespace}}
		if err := apply(sts, func(exists bool) {
			// Shard by shard: a shard whose template is not the one the spec
			// renders keeps its pods until the one before it has rolled
			// out, as the operator's ShardByShard strategy.
			if exists && i > 0 && resources.RolloutStrategy(&inst) == linv1.RolloutShardByShard && !rolledOut(stored[i-1]) &&
				sts.Annotations[resources.AnnotationSpecHash] != want.Annotations[resources.AnnotationSpecHash] {
				want = resources.HoldTemplate(want, sts)
			}
			if mergeMeta(&sts.ObjectMeta, &want.ObjectMeta) {
				sts.Spec = statefulSetSpec(want.Spec, sts.Spec, exists)
			}
		}); err != nil {
			return ctrl.Result{}, err
		}
		stored[i] = sts
	}
	for _, want := range desired.PodDisruptionBudgets {
		pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: want.Name, Namespace: want.Namespace}}
		if err := apply(pdb, func(bool) {
			if mergeMeta(&pdb.ObjectMeta, &want.ObjectMeta) {
				pdb.Spec = want.Spec
			}
		}); err != nil {
			return ctrl.Result{}, err
		}
	}
	deleted, err := r.prune(ctx, &inst, desired)
	if err != nil {
		return ctrl.Result{}, err
	}
	if changed = append(changed, deleted...); len(changed) > 0 {
		r.Recorder.Eventf(&inst, nil, corev1.EventTypeNormal, "Synced", "Sync", "%s", strings.Join(changed, ", "))
		log.V(1).Info("changed children", "changes", changed)
	}
	return ctrl.Result{}, r.writeStatus(ctx, &inst, opcontroller.FirstStatus(&inst, desired, stored, r.ClusterDomain, metav1.Now()))
}

// rolledOut reports whether all of a StatefulSet's pods run its current
// template and are ready, as its controller last saw it.
func rolledOut(sts *appsv1.StatefulSet) bool {
	want, s := ptr.Deref(sts.Spec.Replicas, 1), sts.Status
	return s.ObservedGeneration >= sts.Generation && s.Replicas == want && s.ReadyReplicas == want &&
		s.UpdatedReplicas == want && (want == 0 || s.UpdateRevision == s.CurrentRevision)
}

// mergeMeta adds desired's labels and annotations to live's, keeping those
// that others set, and reports whether the spec must be written too: the
// hash of the rendering (resources.AnnotationSpecHash) differs.
func mergeMeta(live, desired *metav1.ObjectMeta) bool {
	stale := live.Annotations[resources.AnnotationSpecHash] != desired.Annotations[resources.AnnotationSpecHash]
	live.Labels = merged(live.Labels, desired.Labels)
	live.Annotations = merged(live.Annotations, desired.Annotations)
	return stale
}

// merged returns live with every entry of desired.
func merged(live, desired map[string]string) map[string]string {
	if live == nil {
		live = map[string]string{}
	}
	for k, v := range desired {
		live[k] = v
	}
	return live
}

// serviceSpec is desired with what the API server allocated in live, which
// cannot change.
func serviceSpec(desired, live corev1.ServiceSpec) corev1.ServiceSpec {
	if live.ClusterIP != "" {
		desired.ClusterIP, desired.ClusterIPs = live.ClusterIP, live.ClusterIPs
		desired.IPFamilies, desired.IPFamilyPolicy = live.IPFamilies, live.IPFamilyPolicy
	}
	return desired
}

// statefulSetSpec is desired, or for a StatefulSet that exists, live with
// the fields of desired that an update may change.
func statefulSetSpec(desired, live appsv1.StatefulSetSpec, exists bool) appsv1.StatefulSetSpec {
	if !exists {
		return desired
	}
	live.Replicas, live.Template, live.UpdateStrategy = desired.Replicas, desired.Template, desired.UpdateStrategy
	live.MinReadySeconds, live.PersistentVolumeClaimRetentionPolicy = desired.MinReadySeconds, desired.PersistentVolumeClaimRetentionPolicy
	return live
}

// prune deletes the children that inst controls and no longer renders: the
// StatefulSets and budgets of shards it lost, the budgets when they are
// off, the client Service when it has no port. It lists them from the
// cache's index of controllers, as the kubebuilder book's CronJob lists its
// Jobs.
func (r *InstallationReconciler) prune(ctx context.Context, inst *linv1.Installation, desired *resources.Children) ([]string, error) {
	keep := map[string]bool{}
	for _, obj := range desired.Objects() {
		keep[fmt.Sprintf("%T/%s", obj, obj.GetName())] = true
	}
	var deleted []string
	for _, list := range []client.ObjectList{&corev1.ServiceList{}, &appsv1.StatefulSetList{}, &policyv1.PodDisruptionBudgetList{}} {
		if err := r.List(ctx, list, client.InNamespace(inst.Namespace), client.MatchingFields{ownerKey: inst.Name}); err != nil {
			return nil, err
		}
		if err := apimeta.EachListItem(list, func(o runtime.Object) error {
			obj := o.(client.Object)
			if keep[fmt.Sprintf("%T/%s", obj, obj.GetName())] || !metav1.IsControlledBy(obj, inst) {
				return nil
			}
			if err := r.Delete(ctx, obj, client.Preconditions{UID: ptr.To(obj.GetUID())}); client.IgnoreNotFound(err) != nil {
				return err
			}
			deleted = append(deleted, "deleted "+obj.GetName())
			return nil
		}); err != nil {
			return nil, err
		}
	}
	return deleted, nil
}

// writeStatus writes want as the status of inst unless it holds it already,
// keeping the times of the conditions that did not change, as
// meta.SetStatusCondition does, and of a rollout of the same shard.
func (r *InstallationReconciler) writeStatus(ctx context.Context, inst *linv1.Installation, want linv1.InstallationStatus) error {
	conditions := inst.Status.DeepCopy().Conditions
	for _, c := range want.Conditions {
		apimeta.SetStatusCondition(&conditions, c)
	}
	want.Conditions = conditions
	if prev := inst.Status.Rollout; prev != nil && want.Rollout != nil && prev.Shard == want.Rollout.Shard &&
		inst.Status.ObservedGeneration == inst.Generation {
		want.Rollout.Since = prev.Since
	}
	if equality.Semantic.DeepEqual(inst.Status, want) {
		return nil
	}
	inst.Status = want
	return r.Status().Update(ctx, inst)
}

// degraded writes a Degraded status that says why the spec cannot be
// rendered, and records it as a Warning event; the children stay as they are.
func (r *InstallationReconciler) degraded(ctx context.Context, inst *linv1.Installation, cause error) error {
	st := inst.Status.DeepCopy()
	st.ObservedGeneration, st.Phase = inst.Generation, linv1.PhaseDegraded
	apimeta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: linv1.ConditionDegraded, Status: metav1.ConditionTrue,
		Reason: "InvalidSpec", Message: cause.Error(), ObservedGeneration: inst.Generation})
	if equality.Semantic.DeepEqual(inst.Status, *st) {
		return nil
	}
	r.Recorder.Eventf(inst, nil, corev1.EventTypeWarning, "InvalidSpec", "Sync", "%s", cause.Error())
	inst.Status = *st
	return r.Status().Update(ctx, inst)
}

// ownerKey indexes the children that prune lists by the name of the
// Installation that controls them.
const ownerKey = ".metadata.controller"

// SetupWithManager sets up the controller with the Manager: Installations,
// and the children it owns, with workers concurrent reconciles, and the
// index of the children by their controller.
func (r *InstallationReconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	for _, obj := range []client.Object{&corev1.Service{}, &appsv1.StatefulSet{}, &policyv1.PodDisruptionBudget{}} {
		if err := mgr.GetFieldIndexer().IndexField(context.Background(), obj, ownerKey, controllerName); err != nil {
			return err
		}
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&linv1.Installation{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&corev1.Service{}).
		Owns(&appsv1.StatefulSet{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Named("installation").
		Complete(r)
}

// controllerName is the index function of ownerKey: the name of the
// Installation that controls obj, if one does.
func controllerName(obj client.Object) []string {
	owner := metav1.GetControllerOf(obj)
	if owner == nil || owner.APIVersion != linv1.SchemeGroupVersion.String() || owner.Kind != "Installation" {
		return nil
	}
	return []string{owner.Name}
}
