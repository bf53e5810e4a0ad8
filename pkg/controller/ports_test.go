package controller

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"lin.dev/lin-operator/pkg/resources"
)

// deleteClientSvc is the deletion of the client Service.
var deleteClientSvc = action{"delete", "services", "", "demo"}

func TestSyncOfAnInstallationWithoutPortsMakesNoClientService(t *testing.T) {
	f := newFixture(t)
	inst := newInstallation()
	inst.Spec.Ports = nil
	f.installations = append(f.installations, inst)

	actions := f.run(inst, false)
	checkActions(t, actions, updateStatus, createShard0, createConfig, createTopology, createHeadless, createShard1,
		createBudget0, createBudget1)
	if headless := object[*corev1.Service](t, actions[4]); len(headless.Spec.Ports) != 0 || headless.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("headless Service spec = %+v, want no ports and cluster IP None", headless.Spec)
	}
	if st := statusOf(t, actions[0]); st.Endpoint != "" {
		t.Errorf("status.endpoint = %q, want empty: there is no client Service", st.Endpoint)
	}
}

func TestSyncDeletesTheClientServiceWhenThePortsAreRemoved(t *testing.T) {
	f := newFixture(t)
	inst := newInstallation()
	f.seedInSync(inst)
	inst.Spec.Ports = nil
	inst.Generation++

	actions := f.run(inst, false)
	got := summarize(actions)
	if !slices.Contains(got, deleteClientSvc) {
		t.Fatalf("actions %v, want the client Service deleted", got)
	}
	if i := slices.Index(got, deleteClientSvc); i != len(got)-1 {
		t.Errorf("actions %v: the client Service is deleted before the other children are written", got)
	}
	if st := statusOf(t, actions[0]); st.Endpoint != "" {
		t.Errorf("status.endpoint = %q, want empty", st.Endpoint)
	}
	if ev := f.events(); !slices.Contains(ev, "Normal Deleted Deleted Service demo: spec.ports has none, so there is no client Service") {
		t.Errorf("events = %q, want one for the deleted client Service", ev)
	}

	// The next sync sees the Service going and does not delete it again.
	if again := summarize(f.rerun(inst, false)); slices.Contains(again, deleteClientSvc) {
		t.Errorf("actions of the next sync %v delete the client Service again", again)
	}
}

func TestSyncLeavesAServiceItDoesNotControlWhenThereAreNoPorts(t *testing.T) {
	f := newFixture(t)
	inst := newInstallation()
	inst.Spec.Ports = nil
	f.seedInSync(inst)
	// Someone else's Service of the client Service's name.
	f.live.Services = append(f.live.Services, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: resources.ClientServiceName(inst), Namespace: inst.Namespace, UID: "uid-theirs"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "web", Port: 80}}},
	})

	checkActions(t, f.run(inst, false))
}
