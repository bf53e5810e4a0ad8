package controller

import (
	"strings"
	"testing"

	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
)

func TestSyncRepairsADriftedBudgetAndKeepsForeignLabels(t *testing.T) {
	f := newFixture(t)
	inst := newInstallation()
	want := f.seedInSync(inst)
	pdb := f.live.PodDisruptionBudgets[1]
	pdb.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(3))
	pdb.Labels["team"] = "storage"

	actions := f.run(inst, false)
	checkActions(t, actions, action{"update", "poddisruptionbudgets", "", "demo-1"})
	got := object[*policyv1.PodDisruptionBudget](t, actions[0])
	if !equality.Semantic.DeepEqual(got.Spec, want.PodDisruptionBudgets[1].Spec) || got.Labels["team"] != "storage" {
		t.Errorf("updated budget: spec %+v, labels %v; want spec %+v and the label team kept",
			got.Spec, got.Labels, want.PodDisruptionBudgets[1].Spec)
	}
}

func TestSyncMaxUnavailableEditUpdatesOnlyTheBudgets(t *testing.T) {
	f := newFixture(t)
	inst := newInstallation()
	f.seedInSync(inst)
	inst.Spec.Disruption.MaxUnavailable = ptr.To(intstr.FromString("50%"))
	inst.Generation = 2

	actions := f.run(inst, false)
	checkActions(t, actions, updateStatus,
		action{"update", "poddisruptionbudgets", "", "demo-0"}, action{"update", "poddisruptionbudgets", "", "demo-1"})
	if got := object[*policyv1.PodDisruptionBudget](t, actions[1]).Spec.MaxUnavailable; got.String() != "50%" {
		t.Errorf("maxUnavailable = %v, want 50%%", got)
	}
}

func TestSyncDisabledBudgetsAreDeletedOnce(t *testing.T) {
	f := newFixture(t)
	inst := newInstallation()
	f.seedInSync(inst)
	inst.Spec.Disruption.Enabled = ptr.To(false)
	inst.Generation = 2

	checkActions(t, f.run(inst, false), updateStatus, deleteBudget0, deleteBudget1)
	// The cache still holds them until their delete events come.
	checkActions(t, f.rerun(inst, false))
	if ev := f.events(); len(ev) != 2 || ev[0] != "Normal Deleted Deleted PodDisruptionBudget demo-0, which the spec no longer has" {
		t.Errorf("events = %q, want two Normal Deleted", ev)
	}
}

func TestSyncLeavesAForeignBudgetAlone(t *testing.T) {
	f := newFixture(t)
	inst := newInstallation()
	f.seedInSync(inst)
	foreign := f.live.PodDisruptionBudgets[0]
	foreign.OwnerReferences = nil
	foreign.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(0))

	actions := f.run(inst, true)
	checkActions(t, actions, updateStatus)
	c := apimeta.FindStatusCondition(statusOf(t, actions[0]).Conditions, linv1.ConditionDegraded)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != ReasonResourceConflict ||
		!strings.Contains(c.Message, "PodDisruptionBudget demo-0") {
		t.Errorf("Degraded condition %+v, want a ResourceConflict naming PodDisruptionBudget demo-0", c)
	}
	// Disabling budgets deletes the Installation's own, and not the foreign one.
	// A new resourceVersion, as the API server gives an edit: the sync
	// reads this, not the object its own status write returned.
	inst.Spec.Disruption.Enabled = ptr.To(false)
	inst.Generation, inst.ResourceVersion = 2, "2"
	checkActions(t, f.rerun(inst, false), updateStatus, deleteBudget1)
}
