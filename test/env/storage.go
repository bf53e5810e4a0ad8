package env

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// StorageClass is the name of the default StorageClass of the local
// clusters: that of `make run`, under kwok (ProvideVolumes), and the real
// node's of test/node.
const StorageClass = "standard"

// DefaultStorageClass is the cluster's default StorageClass, named
// StorageClass, of provisioner, whose dynamically made volumes go with their
// claims, as in most clusters.
func DefaultStorageClass(provisioner string, binding storagev1.VolumeBindingMode) *storagev1.StorageClass {
	return &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        StorageClass,
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"},
		},
		Provisioner:       provisioner,
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: ptr.To(binding),
	}
}

// ProvideVolumes gives a kwok cluster a default StorageClass and count
// PersistentVolumes of it, of size each, for claims to bind to: kwok runs no
// container, so no provisioner could make a folder on a node, and a claim
// that names no class would otherwise stay Pending for ever. The volumes are
// hostPath volumes that no container ever mounts; each serves one claim and
// is kept when the claim goes (Retain), so that nothing is reused by
// surprise. Volumes that exist already are kept.
func (e *Env) ProvideVolumes(ctx context.Context, count int, size string) error {
	class := DefaultStorageClass("kubernetes.io/no-provisioner", storagev1.VolumeBindingImmediate)
	if _, err := e.Client.StorageV1().StorageClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the default StorageClass: %w", err)
	}
	capacity, err := resource.ParseQuantity(size)
	if err != nil {
		return fmt.Errorf("volume size %q: %w", size, err)
	}
	for i := range count {
		name := fmt.Sprintf("local-volume-%d", i)
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: capacity},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
				StorageClassName:              StorageClass,
				PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/local-volumes/" + name}},
			},
		}
		if _, err := e.Client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating volume %s: %w", name, err)
		}
	}
	return nil
}
