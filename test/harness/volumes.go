package harness

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Volumes describes PersistentVolumes for claims to bind to: the test
// control planes have no provisioner.
type Volumes struct {
	// Prefix begins each volume's name, which ends with its number.
	Prefix string
	// Count is the number of volumes.
	Count int
	// Size is each volume's capacity; empty means 1Gi.
	Size string
	// StorageClass is the class of the volumes; empty matches the claims
	// that name no class (there is no default class).
	StorageClass string
	// AccessModes of the volumes; empty means ReadWriteOnce.
	AccessModes []corev1.PersistentVolumeAccessMode
}

// CreateVolumes creates the volumes v describes, as hostPath volumes that
// keep their data, and deletes them when the test ends.
func CreateVolumes(t testing.TB, c kubernetes.Interface, v Volumes) {
	t.Helper()
	size, modes := v.Size, v.AccessModes
	if size == "" {
		size = "1Gi"
	}
	if len(modes) == 0 {
		modes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	for i := range v.Count {
		name := fmt.Sprintf("%s-pv-%d", v.Prefix, i)
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
				AccessModes:                   modes,
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
				StorageClassName:              v.StorageClass,
				PersistentVolumeSource: corev1.PersistentVolumeSource{
					HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/" + name},
				},
			},
		}
		if _, err := c.CoreV1().PersistentVolumes().Create(context.Background(), pv, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating PV %s: %v", name, err)
		}
		t.Cleanup(func() {
			_ = c.CoreV1().PersistentVolumes().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
}
