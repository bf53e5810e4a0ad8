package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/resources"
	"lin.dev/lin-operator/test/harness"
)

// timeout bounds waits on the whole control plane: scheduling, kwok marking
// pods ready, and garbage collection take seconds.
const timeout = 2 * time.Minute

// waitPhase waits until the Installation reports phase with its current generation.
func waitPhase(t *testing.T, ns, name string, phase linv1.Phase) *linv1.Installation {
	t.Helper()
	return harness.WaitPhase(t, linClient, ns, name, phase, timeout)
}

func TestShardedInstallationBecomesReadyAndItsDeletionKeepsRetainedClaims(t *testing.T) {
	ns := harness.Namespace(t, testEnv.Client)
	harness.StartOperator(t, testEnv.Config, harness.Options{Namespaces: []string{ns}})
	harness.CreateVolumes(t, testEnv.Client, harness.Volumes{Prefix: ns, Count: 4})

	inst := harness.NewInstallation(ns, "demo")
	inst.Spec.Shards = ptr.To[int32](2)
	inst.Spec.Replicas = ptr.To[int32](2)
	inst.Spec.PodManagementPolicy = linv1.ParallelPodManagement
	inst.Spec.Storage = &linv1.StorageSpec{Size: resource.MustParse("1Gi"), ReclaimPolicy: linv1.ReclaimRetain}
	ctx := context.Background()
	start := time.Now()
	if _, err := linClient.LinV1().Installations(ns).Create(ctx, inst, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	ready := waitPhase(t, ns, "demo", linv1.PhaseReady)
	t.Logf("Ready %s after %s", ready.Status.Ready, time.Since(start).Round(time.Millisecond))
	if ready.Status.Ready != "4/4" || ready.Status.ReadyReplicas != 4 || ready.Status.Replicas != 2 ||
		ready.Status.ConfigHash != resources.ConfigHash(ready) {
		t.Errorf("status = %+v", ready.Status)
	}
	pods, err := testEnv.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: ready.Status.Selector})
	if err != nil || len(pods.Items) != 4 {
		t.Fatalf("pods selected by status.selector: %d, %v", len(pods.Items), err)
	}
	claims, err := testEnv.Client.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(claims.Items) != 4 {
		t.Fatalf("claims: %d, %v", len(claims.Items), err)
	}

	if err := linClient.LinV1().Installations(ns).Delete(ctx, "demo", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, timeout, "garbage collection of the children", func(ctx context.Context) (bool, error) {
		sets, err := testEnv.Client.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		cms, err := testEnv.Client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: resources.ManagedBySelector})
		if err != nil {
			return false, err
		}
		svcs, err := testEnv.Client.CoreV1().Services(ns).List(ctx, metav1.ListOptions{LabelSelector: resources.ManagedBySelector})
		if err != nil {
			return false, err
		}
		pdbs, err := testEnv.Client.PolicyV1().PodDisruptionBudgets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		pods, err := testEnv.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		if len(sets.Items)+len(cms.Items)+len(svcs.Items)+len(pdbs.Items)+len(pods.Items) == 0 {
			return true, nil
		}
		return false, fmt.Errorf("%d StatefulSets, %d ConfigMaps, %d Services, %d PodDisruptionBudgets, %d pods left",
			len(sets.Items), len(cms.Items), len(svcs.Items), len(pdbs.Items), len(pods.Items))
	})
	claims, err = testEnv.Client.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(claims.Items) != 4 {
		t.Fatalf("claims after deletion under Retain: %d, %v; want all 4 kept", len(claims.Items), err)
	}
	for _, c := range claims.Items {
		if c.DeletionTimestamp != nil || c.Status.Phase != corev1.ClaimBound {
			t.Errorf("claim %s: deleting %v, phase %s; want kept and bound", c.Name, c.DeletionTimestamp != nil, c.Status.Phase)
		}
	}
	if _, err := linClient.LinV1().Installations(ns).Get(ctx, "demo", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Installation still there: %v", err)
	}
}
