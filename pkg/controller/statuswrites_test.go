package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
)

func TestSyncOnACacheThatMissedItsOwnStatusWriteWritesNothing(t *testing.T) {
	f := newFixture(t)
	inst := newInstallation()
	f.seedInSync(inst)
	inst.Status = linv1.InstallationStatus{}

	checkActions(t, f.run(inst, false), updateStatus)
	// The cache still holds the Installation as it was before the write, as
	// it does when the children's events wake a sync before the status event.
	checkActions(t, f.rerun(inst, false))
}

func TestStatusWritesHoldAWriteUntilTheCacheMovesPastIt(t *testing.T) {
	installation := func(rv string, generation int64) *linv1.Installation {
		return &linv1.Installation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "demo", ResourceVersion: rv},
			Status: linv1.InstallationStatus{ObservedGeneration: generation}}
	}
	before, written := installation("1", 0), installation("2", 1)
	for _, tc := range []struct {
		name   string
		record bool
		cached *linv1.Installation
		want   *linv1.Installation
	}{
		{name: "nothing written", cached: before, want: before},
		{name: "cache before the write", record: true, cached: before, want: written},
		{name: "cache at the write", record: true, cached: written, want: written},
		{name: "cache past the write", record: true, cached: installation("3", 0), want: installation("3", 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newStatusWrites()
			if tc.record {
				w.record(before.ResourceVersion, written)
			}
			if got := w.latest(tc.cached); got.ResourceVersion != tc.want.ResourceVersion {
				t.Errorf("latest = version %s, want %s", got.ResourceVersion, tc.want.ResourceVersion)
			}
			// Once the cache has moved on, the write is forgotten.
			if got := w.latest(before); tc.cached != before && got != before {
				t.Errorf("after the cache moved on, latest = version %s, want the cached one", got.ResourceVersion)
			}
		})
	}

	w := newStatusWrites()
	w.record(before.ResourceVersion, written)
	w.forget(cache.MetaObjectToName(written))
	if got := w.latest(before); got != before {
		t.Errorf("after forget, latest = version %s, want the cached one", got.ResourceVersion)
	}
}
