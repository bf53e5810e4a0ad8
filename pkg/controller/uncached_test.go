package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"lin.dev/lin-operator/pkg/resources"
)

func TestSyncTakesItsOwnChildThatTheCacheDoesNotShowYet(t *testing.T) {
	f := newFixture(t)
	inst := newInstallation()
	f.seedInSync(inst)
	// Made by the last sync; its event has not reached the cache.
	own := f.live.PodDisruptionBudgets[0]
	f.live.PodDisruptionBudgets = f.live.PodDisruptionBudgets[1:]
	f.uncached = append(f.uncached, own)

	checkActions(t, f.run(inst, false), createBudget0)
	if ev := f.events(); len(ev) != 0 {
		t.Errorf("events = %q, want none: the budget is the Installation's and matches", ev)
	}
}

func TestSyncRestoresTheLabelsOfItsOwnChildThatLeftTheCache(t *testing.T) {
	f := newFixture(t)
	inst := newInstallation()
	f.seedInSync(inst)
	// `kubectl label configmap demo-config app.kubernetes.io/managed-by-`
	// takes it out of the label-filtered cache; its owner reference stays.
	own := f.live.ConfigMaps[0]
	f.live.ConfigMaps = f.live.ConfigMaps[1:]
	delete(own.Labels, resources.LabelManagedBy)
	f.uncached = append(f.uncached, own)

	actions := f.run(inst, false)
	checkActions(t, actions, createConfig, updateConfig)
	if got := object[*corev1.ConfigMap](t, actions[1]).Labels[resources.LabelManagedBy]; got != resources.ManagedByValue {
		t.Errorf("label %s = %q after the update, want %q", resources.LabelManagedBy, got, resources.ManagedByValue)
	}
}
