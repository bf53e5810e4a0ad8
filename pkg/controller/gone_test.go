package controller

import (
	"testing"

	"k8s.io/client-go/tools/cache"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
)

func TestSyncOfAnInstallationGoneFromTheServerStopsAtTheStatusWrite(t *testing.T) {
	f := newFixture(t)
	inst := newInstallation()
	f.installations = append(f.installations, inst)
	f.controller = f.newController()
	// The cache still holds it, as after a reconnect when the Installations'
	// watch comes back later than the children's.
	gvr := linv1.SchemeGroupVersion.WithResource("installations")
	if err := f.linClient.Tracker().Delete(gvr, inst.Namespace, inst.Name); err != nil {
		t.Fatal(err)
	}

	// A gone Installation is not an error to retry.
	checkActions(t, f.rerun(inst, false), updateStatus, createShard0, createConfig, createTopology, createHeadless, createClientSvc, createShard1,
		createBudget0, createBudget1)
	// The garbage collector deletes the children it just made; their events
	// wake the sync again, which now makes nothing.
	checkActions(t, f.rerun(inst, false))

	// Once the cache shows the deletion, the Installation is forgotten.
	f.controller.observeDeletion(cache.DeletedFinalStateUnknown{Key: "ns/demo", Obj: inst})
	if f.controller.deletions.pending(inst.UID) {
		t.Error("the Installation is still expected to go after its delete event")
	}
}
