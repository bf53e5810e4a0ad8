package controller

import (
	"context"
	"errors"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/resources"
)

// onlyClaimsGrow reports whether desired differs from live, among the fields
// a StatefulSet cannot change in place, only in the storage its claim
// template requests, which is more: storage.size grew.
func onlyClaimsGrow(desired, live *appsv1.StatefulSet) bool {
	d, l := desired.Spec.VolumeClaimTemplates, live.Spec.VolumeClaimTemplates
	if len(d) != 1 || len(l) != 1 {
		return false
	}
	want, have := d[0].Spec.Resources.Requests[corev1.ResourceStorage], l[0].Spec.Resources.Requests[corev1.ResourceStorage]
	if want.Cmp(have) <= 0 {
		return false
	}
	grown := live.DeepCopy()
	grown.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage] = want
	return !immutableChanged(desired, grown)
}

// growClaims raises the storage request of every claim of a shard to what
// its desired claim template requests. A StatefulSet never resizes the claims
// it made, so the operator does, before it gives the StatefulSet the new
// template: if the API server refuses (the StorageClass does not allow
// expansion), nothing else changes and the refusal is reported. The claims
// are listed from the API server: the operator keeps no cache of them, and
// this read happens only while storage.size grows.
func (c *Controller) growClaims(ctx context.Context, inst *linv1.Installation, desired, live *appsv1.StatefulSet) error {
	want := desired.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]
	// The claims carry the labels of the pods they were made for.
	selector, err := metav1.LabelSelectorAsSelector(live.Spec.Selector)
	if err != nil {
		return writeError("selecting", "PersistentVolumeClaims of StatefulSet", live.Name, err)
	}
	claims, err := c.kubeClient.CoreV1().PersistentVolumeClaims(inst.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return writeError("listing", "PersistentVolumeClaims of StatefulSet", desired.Name, err)
	}
	// The StatefulSet names its claims data-<StatefulSet>-<ordinal>; others
	// with the same labels are not its own.
	prefix := resources.DataVolume + "-" + live.Name + "-"
	var errs []error
	for _, claim := range claims.Items {
		have := claim.Spec.Resources.Requests[corev1.ResourceStorage]
		if !strings.HasPrefix(claim.Name, prefix) || have.Cmp(want) >= 0 || claim.DeletionTimestamp != nil {
			continue
		}
		grown := claim.DeepCopy()
		if grown.Spec.Resources.Requests == nil {
			grown.Spec.Resources.Requests = corev1.ResourceList{}
		}
		grown.Spec.Resources.Requests[corev1.ResourceStorage] = want
		if _, err := c.kubeClient.CoreV1().PersistentVolumeClaims(inst.Namespace).Update(ctx, grown,
			metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
			errs = append(errs, writeError("resizing", "PersistentVolumeClaim", claim.Name, err))
			continue
		}
		c.recorder.Eventf(inst, corev1.EventTypeNormal, "Resized", "Raised the storage request of PersistentVolumeClaim %s to %s", claim.Name, want.String())
	}
	return errors.Join(errs...)
}
