package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/test/harness"
)

// storageClass creates a StorageClass for pre-made volumes that allows
// expansion or not, deleted when the test ends.
func storageClass(t *testing.T, name string, expandable bool) {
	t.Helper()
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name},
		Provisioner: "kubernetes.io/no-provisioner", AllowVolumeExpansion: ptr.To(expandable)}
	if _, err := testEnv.Client.StorageV1().StorageClasses().Create(context.Background(), sc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = testEnv.Client.StorageV1().StorageClasses().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// claimRequests returns the storage each claim of ns requests, by name.
func claimRequests(t *testing.T, ns string) map[string]string {
	t.Helper()
	claims, err := testEnv.Client.CoreV1().PersistentVolumeClaims(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range claims.Items {
		q := c.Spec.Resources.Requests[corev1.ResourceStorage]
		out[c.Name] = q.String()
	}
	return out
}

// TestStorageGrowsWithoutARestart grows storage.size of an Installation whose
// StorageClass allows expansion: every claim's request is raised, the
// StatefulSets get the new claim template by the orphan-and-recreate path,
// no pod restarts, and a pod added by scaling up gets the new size. Under a
// StorageClass that does not allow expansion the API server refuses the
// claims: the Installation says so in Degraded and nothing else changes.
func TestStorageGrowsWithoutARestart(t *testing.T) {
	ns, _ := setup(t, harness.Options{})
	grow, fixed := ns+"-grow", ns+"-fixed"
	storageClass(t, grow, true)
	storageClass(t, fixed, false)
	harness.CreateVolumes(t, testEnv.Client, harness.Volumes{Prefix: grow, Count: 6, Size: "10Gi", StorageClass: grow})
	harness.CreateVolumes(t, testEnv.Client, harness.Volumes{Prefix: fixed, Count: 2, Size: "10Gi", StorageClass: fixed})
	for name, class := range map[string]string{"grows": grow, "fixed": fixed} {
		inst := newInstallation(ns, name, 2, 2, linv1.ReclaimRetain)
		if name == "fixed" {
			inst.Spec.Shards = ptr.To[int32](1)
		}
		inst.Spec.Storage.StorageClassName = ptr.To(class)
		createReady(t, inst)
	}
	pods, before := podUIDs(t, ns, "grows"), claimRequests(t, ns)

	for _, name := range []string{"grows", "fixed"} {
		edit(t, ns, name, func(i *linv1.Installation) { i.Spec.Storage.Size = resource.MustParse("2Gi") })
	}
	harness.Eventually(t, timeout, "the StatefulSets of grows to claim 2Gi", func(ctx context.Context) (bool, error) {
		for shard := range 2 {
			sts, err := testEnv.Client.AppsV1().StatefulSets(ns).Get(ctx, fmt.Sprintf("grows-%d", shard), metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if got := sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]; got.String() != "2Gi" {
				return false, nil
			}
		}
		return true, nil
	})
	waitPhase(t, ns, "grows", linv1.PhaseReady)
	after := claimRequests(t, ns)
	raised := 0
	for claim, was := range before {
		want := was
		if strings.HasPrefix(claim, "data-grows-") {
			want, raised = "2Gi", raised+1
		}
		if after[claim] != want {
			t.Errorf("claim %s requests %s, want %s", claim, after[claim], want)
		}
	}
	if got := podUIDs(t, ns, "grows"); replaced(pods, got) != 0 {
		t.Errorf("pods restarted: before %v, after %v", pods, got)
	}

	degraded := waitCondition(t, ns, "fixed", linv1.ConditionDegraded, metav1.ConditionTrue, "ApplyFailed")
	c := apimeta.FindStatusCondition(degraded.Status.Conditions, linv1.ConditionDegraded)
	t.Logf("fixed: %s", c.Message)
	if !strings.Contains(c.Message, "PersistentVolumeClaim") {
		t.Errorf("Degraded message %q does not name the claim", c.Message)
	}
	sts, err := testEnv.Client.AppsV1().StatefulSets(ns).Get(context.Background(), "fixed-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]; got.String() != "1Gi" {
		t.Errorf("fixed-0 claims %s, want its 1Gi kept while the claims cannot grow", got.String())
	}

	edit(t, ns, "grows", func(i *linv1.Installation) { i.Spec.Replicas = ptr.To[int32](3) })
	waitPhase(t, ns, "grows", linv1.PhaseReady)
	scaled := claimRequests(t, ns)
	if scaled["data-grows-0-2"] != "2Gi" || scaled["data-grows-1-2"] != "2Gi" {
		t.Errorf("claims of the pods added by scaling: %v, want 2Gi", scaled)
	}

	// The reclaim policy changes in place: the StatefulSets are updated, not
	// recreated.
	set, err := testEnv.Client.AppsV1().StatefulSets(ns).Get(context.Background(), "grows-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	edit(t, ns, "grows", func(i *linv1.Installation) { i.Spec.Storage.ReclaimPolicy = linv1.ReclaimDelete })
	harness.Eventually(t, timeout, "grows-0 to delete its claims with it", func(ctx context.Context) (bool, error) {
		s, err := testEnv.Client.AppsV1().StatefulSets(ns).Get(ctx, "grows-0", metav1.GetOptions{})
		return err == nil && s.UID == set.UID &&
			s.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted == appsv1.DeletePersistentVolumeClaimRetentionPolicyType, err
	})
	t.Logf("%d claims raised to 2Gi, 0 pods restarted, new pods' claims 2Gi; reclaimPolicy changed in place", raised)
}
