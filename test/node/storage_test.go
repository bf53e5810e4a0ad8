package node_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"lin.dev/lin-operator/test/env"
	"lin.dev/lin-operator/test/harness"
	"lin.dev/lin-operator/test/node"
)

// TestClaimsBindToFoldersOfTheNode: a claim that names no class gets the
// default one, local-path-provisioner binds it to a folder of the node, a
// pod writes there, and a new pod on the same claim reads the bytes back;
// deleting the claim deletes its volume.
func TestClaimsBindToFoldersOfTheNode(t *testing.T) {
	ns := restrictedNamespace(t)
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := cluster.Client.CoreV1().PersistentVolumeClaims(ns).Create(t.Context(), claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns}}
	if _, err := cluster.Client.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	runPod := func() string {
		pod := testAppPod(ns, "app", node.TestAppImage)
		pod.Spec.Volumes[1].VolumeSource = corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}
		// The folder is the provisioner's 0777 one; the pod's group owns
		// what it writes.
		pod.Spec.SecurityContext.FSGroup = ptr.To[int64](65532)
		if _, err := cluster.Client.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return "http://" + waitPodReady(t, ns, "app", 2*time.Minute).Status.PodIP + ":8080"
	}
	created := time.Now()
	base := runPod()
	bound, err := cluster.Client.CoreV1().PersistentVolumeClaims(ns).Get(t.Context(), "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ptr.Deref(bound.Spec.StorageClassName, "") != env.StorageClass || bound.Status.Phase != corev1.ClaimBound {
		t.Fatalf("claim: class %q, phase %s; want bound, of class %s", ptr.Deref(bound.Spec.StorageClassName, ""), bound.Status.Phase, env.StorageClass)
	}
	t.Logf("claim bound to %s and its pod Ready %v after the claim's creation", bound.Spec.VolumeName, time.Since(created).Round(time.Millisecond))
	httpDo(t, http.MethodPut, base+"/file?path=/data/kept", "bytes on a claim")

	if err := cluster.Client.CoreV1().Pods(ns).Delete(t.Context(), "app", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, time.Minute, "the pod to be gone", func(ctx context.Context) (bool, error) {
		_, err := cluster.Client.CoreV1().Pods(ns).Get(ctx, "app", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	base = runPod()
	if got := httpDo(t, http.MethodGet, base+"/file?path=/data/kept", ""); got != "bytes on a claim" {
		t.Errorf("a new pod read %q from the claim", got)
	}

	if err := cluster.Client.CoreV1().Pods(ns).Delete(t.Context(), "app", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Client.CoreV1().PersistentVolumeClaims(ns).Delete(t.Context(), "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 2*time.Minute, "volume "+bound.Spec.VolumeName+" to be deleted with its claim", func(ctx context.Context) (bool, error) {
		pv, err := cluster.Client.CoreV1().PersistentVolumes().Get(ctx, bound.Spec.VolumeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return false, fmt.Errorf("volume %s is %s", pv.Name, pv.Status.Phase)
	})
}
