package controller

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	core "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/resources"
)

// grownFixture seeds one shard of two pods with 1Gi claims, in sync, and
// returns the Installation with storage.size grown to 2Gi.
func grownFixture(t *testing.T) (*fixture, *linv1.Installation) {
	f := newFixture(t)
	inst := newInstallation()
	inst.Spec.Shards = ptr.To[int32](1)
	inst.Spec.Storage = &linv1.StorageSpec{Size: resource.MustParse("1Gi"), ReclaimPolicy: linv1.ReclaimRetain}
	f.seedInSync(inst)
	for ordinal := range 2 {
		f.uncached = append(f.uncached, &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("data-demo-0-%d", ordinal), Namespace: "ns",
				Labels: resources.ShardLabels(inst, 0)},
			Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
		})
	}
	// A claim of the same labels that the StatefulSet did not make, with no
	// request at all, is left alone (and does not crash the sync).
	f.uncached = append(f.uncached, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "someone-elses", Namespace: "ns", Labels: resources.ShardLabels(inst, 0)}})
	inst.Spec.Storage.Size = resource.MustParse("2Gi")
	inst.Generation = 2
	return f, inst
}

func TestSyncGrowsTheClaimsBeforeItRecreatesTheStatefulSet(t *testing.T) {
	f, inst := grownFixture(t)
	actions := f.run(inst, false)
	checkActions(t, actions, updateStatus,
		action{"update", "persistentvolumeclaims", "", "data-demo-0-0"},
		action{"update", "persistentvolumeclaims", "", "data-demo-0-1"},
		action{"delete", "statefulsets", "", "demo-0"})
	for _, a := range actions[1:3] {
		claim := object[*corev1.PersistentVolumeClaim](t, a)
		if got := claim.Spec.Resources.Requests[corev1.ResourceStorage]; got.Cmp(resource.MustParse("2Gi")) != 0 {
			t.Errorf("claim %s requests %s, want 2Gi", claim.Name, got.String())
		}
	}
	if opts := actions[3].(core.DeleteAction).GetDeleteOptions(); ptr.Deref(opts.PropagationPolicy, "") != metav1.DeletePropagationOrphan {
		t.Errorf("the StatefulSet is deleted with propagation %v, want Orphan: its pods must keep running", opts.PropagationPolicy)
	}
}

func TestSyncLeavesTheStatefulSetWhenAClaimCannotGrow(t *testing.T) {
	f, inst := grownFixture(t)
	f.controller = f.newController()
	refusal := apierrors.NewForbidden(schema.GroupResource{Resource: "persistentvolumeclaims"}, "data-demo-0-0",
		fmt.Errorf("only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize"))
	f.kubeClient.PrependReactor("update", "persistentvolumeclaims", func(core.Action) (bool, runtime.Object, error) {
		return true, nil, refusal
	})
	actions := f.rerun(inst, true)
	checkActions(t, actions, updateStatus,
		action{"update", "persistentvolumeclaims", "", "data-demo-0-0"},
		action{"update", "persistentvolumeclaims", "", "data-demo-0-1"})
	c := apimeta.FindStatusCondition(statusOf(t, actions[0]).Conditions, linv1.ConditionDegraded)
	if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "storageclass that provisions the pvc must support resize") {
		t.Errorf("Degraded condition = %+v, want the API server's refusal", c)
	}
}
