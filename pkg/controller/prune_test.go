package controller

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"lin.dev/lin-operator/pkg/resources"
)

func TestSyncRemovesTheLabelsAndAnnotationsRemovedFromTheSpecOnly(t *testing.T) {
	f := newFixture(t)
	inst := newInstallation()
	inst.Spec.Service.Labels = map[string]string{"tier": "front", "exposure": "public"}
	inst.Spec.Service.Annotations = map[string]string{"example.com/a": "1", "example.com/b": "2"}
	inst.Spec.Pod.Annotations = map[string]string{"example.com/scrape": "true", "example.com/port": "9100"}
	f.seedInSync(inst)
	// Other tools added their own, which stay.
	svc := f.live.Services[1]
	svc.Labels["team"] = "web"
	svc.Annotations["cloud.example.com/lb"] = "internal"
	for _, sts := range f.live.StatefulSets {
		sts.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] = "2026-01-01T00:00:00Z"
	}
	inst.Spec.Service.Labels = map[string]string{"tier": "front"}
	inst.Spec.Service.Annotations = nil
	inst.Spec.Pod.Annotations = map[string]string{"example.com/scrape": "true"}
	inst.Generation = 2

	actions := f.run(inst, false)
	checkActions(t, actions, updateStatus, action{"update", "services", "", "demo"}, updateShard0, updateShard1)
	got := object[*corev1.Service](t, actions[1])
	for k, want := range map[string]bool{"tier": true, "team": true, "exposure": false} {
		if _, ok := got.Labels[k]; ok != want {
			t.Errorf("Service label %s present: %v, want %v", k, ok, want)
		}
	}
	for k, want := range map[string]bool{"cloud.example.com/lb": true, "example.com/a": false, "example.com/b": false,
		resources.AnnotationSpecAnnotations: false, resources.AnnotationSpecLabels: true} {
		if _, ok := got.Annotations[k]; ok != want {
			t.Errorf("Service annotation %s present: %v, want %v", k, ok, want)
		}
	}
	tmpl := object[*appsv1.StatefulSet](t, actions[2]).Spec.Template.Annotations
	for k, want := range map[string]bool{"example.com/scrape": true, "example.com/port": false, "kubectl.kubernetes.io/restartedAt": true} {
		if _, ok := tmpl[k]; ok != want {
			t.Errorf("pod template annotation %s present: %v, want %v", k, ok, want)
		}
	}
}

func TestAnUpdateKeepsTheLastAppliedCopyOfWhoeverAppliedTheChild(t *testing.T) {
	f := newFixture(t)
	inst := newInstallation()
	f.seedInSync(inst)
	// Someone ran kubectl apply on the client Service and the config.
	const applied = `{"apiVersion":"v1","kind":"Service","metadata":{"annotations":{"team":"web"}}}`
	f.live.Services[1].Annotations[lastApplied] = applied
	f.live.ConfigMaps[0].Annotations = map[string]string{lastApplied: applied}
	inst.Spec.Service.Labels = map[string]string{"tier": "front"}
	inst.Spec.Config = map[string]string{"app.conf": "level=debug\n"}
	inst.Generation = 2

	updated := 0
	for _, a := range f.run(inst, false) {
		if a.GetVerb() != "update" || a.GetSubresource() != "" || a.GetResource().Resource == "statefulsets" {
			continue
		}
		updated++
		obj := object[runtime.Object](t, a).(metav1.Object)
		if got := obj.GetAnnotations()[lastApplied]; got != applied {
			t.Errorf("update of %s %s: %s is %q, want it kept", a.GetResource().Resource, obj.GetName(), lastApplied, got)
		}
	}
	if updated != 2 {
		t.Errorf("%d updates of the Service and the ConfigMap, want 2", updated)
	}
}
