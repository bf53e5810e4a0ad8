package controller

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/resources"
)

// change is what one write of a sync did to a child; the zero value: nothing.
type change struct {
	created    bool
	kind, name string
	// stored is the child as the API server stored it.
	stored metav1.Object
}

// writtenShards returns live, the cached StatefulSet of each shard of
// inst, with each one that changes wrote in the place of its cached copy:
// the API server's answer is newer than the cache, so status computed from
// it is what the next sync, once the cache has caught up, computes too, and
// is not written twice.
func writtenShards(inst *linv1.Installation, live []*appsv1.StatefulSet, changes []change) []*appsv1.StatefulSet {
	written := map[string]*appsv1.StatefulSet{}
	for _, ch := range changes {
		if sts, ok := ch.stored.(*appsv1.StatefulSet); ok {
			written[sts.Name] = sts
		}
	}
	out := slices.Clone(live)
	for i := range out {
		if sts, ok := written[resources.StatefulSetName(inst, int32(i))]; ok {
			out[i] = sts
		}
	}
	return out
}

// recordChanges records one Normal event that sums up what a sync created
// and updated, if anything: one event per sync rather than one per child
// costs the API server a request per sync, and `kubectl describe` still
// tells what the operator did. The reason is Created when the sync created
// anything, Updated otherwise.
func (c *Controller) recordChanges(inst *linv1.Installation, changes []change) {
	created, updated := summarizeChanges(changes, true), summarizeChanges(changes, false)
	switch {
	case created != "" && updated != "":
		c.recorder.Eventf(inst, corev1.EventTypeNormal, "Created", "Created %s; updated %s", created, updated)
	case created != "":
		c.recorder.Eventf(inst, corev1.EventTypeNormal, "Created", "Created %s", created)
	case updated != "":
		c.recorder.Eventf(inst, corev1.EventTypeNormal, "Updated", "Updated %s", updated)
	}
}

// summarizedNames is the most names of one kind a summary lists; beyond it
// names the first and the last, so that the message of 64 shards stays short.
const summarizedNames = 4

// summarizeChanges writes the changes that created (or updated, when created is
// false) children, by kind in the order the kinds first come, as
// "2 ConfigMaps (a-config, a-topology), 1 StatefulSet (a-0)"; "" for none.
func summarizeChanges(changes []change, created bool) string {
	var kinds []string
	names := map[string][]string{}
	for _, ch := range changes {
		if ch.kind == "" || ch.created != created {
			continue
		}
		if _, ok := names[ch.kind]; !ok {
			kinds = append(kinds, ch.kind)
		}
		names[ch.kind] = append(names[ch.kind], ch.name)
	}
	parts := make([]string, 0, len(kinds))
	for _, kind := range kinds {
		n := names[kind]
		// Shorter first, so that a-2 comes before a-10.
		slices.SortFunc(n, func(a, b string) int { return cmp.Or(cmp.Compare(len(a), len(b)), strings.Compare(a, b)) })
		list := strings.Join(n, ", ")
		if len(n) > summarizedNames {
			list = n[0] + " … " + n[len(n)-1]
		}
		plural := kind + "s"
		if len(n) == 1 {
			plural = kind
		}
		parts = append(parts, fmt.Sprintf("%d %s (%s)", len(n), plural, list))
	}
	return strings.Join(parts, ", ")
}
