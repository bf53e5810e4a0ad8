package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/resources"
)

// sync reconciles the Installation named by key and writes its status. A
// returned error is retried with backoff; a permanent failure is reported in
// status and an event, and returns nil.
func (c *Controller) sync(ctx context.Context, key cache.ObjectName) error {
	l := c.listersFor(key.Namespace)
	if l == nil {
		return nil
	}
	inst, err := l.installations.Installations(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		// Garbage collection removes the children through their owner references.
		c.statusWrites.forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	inst = c.statusWrites.latest(inst)
	if inst.DeletionTimestamp != nil || c.deletions.pending(inst.UID) {
		// Being deleted, or gone already though the cache still holds it.
		return nil
	}

	out := c.reconcile(ctx, inst, l)
	now := metav1.Now()
	status := computeStatus(inst, c.liveShards(inst, l), out, c.clusterDomain, now)
	if stall, left := stalled(status.Rollout, resources.ProgressDeadline(inst), now); status.Rollout != nil && !stall {
		// Nothing may happen until the deadline passes; look again then.
		c.queue.AddAfter(key, left)
	}
	if err := c.updateStatus(ctx, inst, status); err != nil {
		if apierrors.IsNotFound(err) {
			// The Installation is gone and its delete event is on the way.
			// Until it comes, the garbage collector's deletions of the
			// children wake this sync, which must not make them again.
			c.deletions.expect(inst.UID)
			return nil
		}
		return errors.Join(out.err, err)
	}
	if out.err != nil && out.permanent {
		klog.FromContext(ctx).Info("Installation cannot be reconciled until its spec changes",
			"installation", key, "reason", out.reason, "err", out.err)
		return nil
	}
	return out.err
}

// reconcile renders the children of inst and, unless it is paused, makes the
// live ones match, then removes the StatefulSets of shards that are gone. It
// goes on past a failed child, so that one conflict does not hold the others
// back, and writes nothing for a spec that cannot be rendered whole.
func (c *Controller) reconcile(ctx context.Context, inst *linv1.Installation, l *listers) outcome {
	desired, err := resources.NewChildren(inst, c.clusterDomain)
	if err != nil {
		return newOutcome(nil, err)
	}
	out := newOutcome(desired, nil)
	if inst.Spec.Paused {
		return out
	}
	// The shards that must wait for their turn in a rollout are written with
	// the pod template they have; status still compares with desired.
	live := c.liveShards(inst, l)
	plan := planRollout(resources.RolloutStrategy(inst), desired.StatefulSets, live)
	out.rolling = plan.rolling
	written := *desired
	written.StatefulSets = heldBack(desired.StatefulSets, live, plan)
	if err := c.preflight(ctx, inst, l, &written); err != nil {
		out.err = err
		out.reason, out.permanent = classify(err)
		return out
	}
	var errs []error
	for _, cm := range desired.ConfigMaps {
		_, err := apply(ctx, c, inst, c.configMapChild(l), cm)
		errs = append(errs, err)
	}
	for _, svc := range desired.Services {
		_, err := apply(ctx, c, inst, c.serviceChild(l), svc)
		errs = append(errs, err)
	}
	for _, sts := range written.StatefulSets {
		recreated, err := c.applyStatefulSet(ctx, inst, l, sts)
		if recreated {
			out.recreated = append(out.recreated, sts.Name)
		}
		errs = append(errs, err)
	}
	for _, pdb := range desired.PodDisruptionBudgets {
		_, err := apply(ctx, c, inst, c.budgetChild(l), pdb)
		errs = append(errs, err)
	}
	errs = append(errs, c.deleteRemovedShards(ctx, inst, l), c.deleteRemovedBudgets(ctx, inst, l))
	out.err = errors.Join(errs...)
	out.reason, out.permanent = classify(out.err)
	return out
}

// heldBack returns the StatefulSets to write: the desired one of each shard
// that the plan lets proceed, and for the others the desired one with the
// pod template they have.
func heldBack(desired, live []*appsv1.StatefulSet, plan rolloutPlan) []*appsv1.StatefulSet {
	out := make([]*appsv1.StatefulSet, len(desired))
	for i, d := range desired {
		out[i] = d
		if !plan.proceed[i] {
			out[i] = resources.HoldTemplate(d, live[i])
		}
	}
	return out
}

// preflight sends every create and update that this sync is about to make as
// a server-side dry run, and returns the API server's refusals, if any: then
// the sync writes nothing, so that a spec the schema accepts but whose
// children the API server refuses (a pod label that is no label, say) leaves
// no child half-made. Any other failure of a trial is left for the real
// write to meet and report. A lone write needs no trial: it is all or nothing
// by itself.
func (c *Controller) preflight(ctx context.Context, inst *linv1.Installation, l *listers, desired *resources.Children) error {
	var trials []func() error
	for _, cm := range desired.ConfigMaps {
		trials = append(trials, trial(ctx, c, inst, c.configMapChild(l), cm))
	}
	for _, svc := range desired.Services {
		trials = append(trials, trial(ctx, c, inst, c.serviceChild(l), svc))
	}
	for _, sts := range desired.StatefulSets {
		live, err := l.statefulSets.StatefulSets(sts.Namespace).Get(sts.Name)
		if err == nil && metav1.IsControlledBy(live, inst) && (c.leaving(live) || immutableChanged(sts, live)) {
			// applyStatefulSet waits for it or recreates it; nothing to try.
			continue
		}
		trials = append(trials, trial(ctx, c, inst, c.statefulSetChild(l), sts))
	}
	for _, pdb := range desired.PodDisruptionBudgets {
		trials = append(trials, trial(ctx, c, inst, c.budgetChild(l), pdb))
	}
	trials = slices.DeleteFunc(trials, func(f func() error) bool { return f == nil })
	if len(trials) < 2 {
		return nil
	}
	var refusals []error
	for _, try := range trials {
		var se *syncError
		if err := try(); errors.As(err, &se) && se.reason == ReasonApplyFailed && se.permanent {
			refusals = append(refusals, err)
		}
	}
	return errors.Join(refusals...)
}

// applyStatefulSet applies one shard's StatefulSet, recreating it when a field
// that cannot change in place must change (after raising the claims' storage
// requests, when that field is the storage size); it reports whether it did. A
// StatefulSet on its way out is left to go: the next sync creates it anew.
func (c *Controller) applyStatefulSet(ctx context.Context, inst *linv1.Installation, l *listers, desired *appsv1.StatefulSet) (bool, error) {
	live, err := l.statefulSets.StatefulSets(desired.Namespace).Get(desired.Name)
	if err == nil && metav1.IsControlledBy(live, inst) {
		if c.leaving(live) {
			return false, nil
		}
		if immutableChanged(desired, live) {
			if onlyClaimsGrow(desired, live) {
				// Claims first: a refusal leaves the StatefulSet as it is.
				if err := c.growClaims(ctx, inst, desired, live); err != nil {
					return false, err
				}
			}
			err := c.recreateStatefulSet(ctx, inst, l, desired, live)
			return err == nil, err
		}
	}
	_, err = apply(ctx, c, inst, c.statefulSetChild(l), desired)
	return false, err
}

// deleteRemovedShards deletes the StatefulSets that inst controls for shards
// beyond spec.shards. Their claims follow the retention policy that
// storage.reclaimPolicy set on them: kept under Retain, deleted under Delete.
func (c *Controller) deleteRemovedShards(ctx context.Context, inst *linv1.Installation, l *listers) error {
	keep := func(shard int32) bool { return shard < resources.Shards(inst) }
	return deleteRemoved(ctx, c, inst, l.setsByOwner, keep, c.statefulSetChild(l), ptr.To(metav1.DeletePropagationBackground))
}

// deleteRemovedBudgets deletes the PodDisruptionBudgets that inst controls
// for shards beyond spec.shards, or all of them when spec.disruption.enabled
// is false.
func (c *Controller) deleteRemovedBudgets(ctx context.Context, inst *linv1.Installation, l *listers) error {
	keep := func(shard int32) bool { return resources.DisruptionBudgets(inst) && shard < resources.Shards(inst) }
	return deleteRemoved(ctx, c, inst, l.budgetsByOwner, keep, c.budgetChild(l), nil)
}

// deleteRemoved deletes, with an event each, the children of index that inst
// controls and whose shard keep no longer keeps, except those already going;
// propagation, when set, says what becomes of their dependents.
func deleteRemoved[T metav1.Object](ctx context.Context, c *Controller, inst *linv1.Installation, index cache.Indexer,
	keep func(shard int32) bool, k child[T], propagation *metav1.DeletionPropagation) error {
	objs, err := removed[T](index, inst, keep)
	if err != nil {
		return err
	}
	var errs []error
	for _, o := range objs {
		if c.leaving(o) {
			continue
		}
		if err := deleteChild(ctx, c, k, o, propagation); err != nil {
			errs = append(errs, err)
			continue
		}
		c.recorder.Eventf(inst, corev1.EventTypeNormal, "Deleted", "Deleted %s %s, which the spec no longer has", k.kind, o.GetName())
	}
	return errors.Join(errs...)
}

// removed returns the objects of an index by controller (byController) that
// inst controls and whose shard keep no longer keeps.
func removed[T metav1.Object](index cache.Indexer, inst *linv1.Installation, keep func(shard int32) bool) ([]T, error) {
	objs, err := index.ByIndex(byController, string(inst.UID))
	if err != nil {
		return nil, err
	}
	var out []T
	for _, obj := range objs {
		o, ok := obj.(T)
		if !ok || !metav1.IsControlledBy(o, inst) {
			continue
		}
		if shard, err := strconv.ParseInt(o.GetLabels()[resources.LabelShard], 10, 32); err == nil && !keep(int32(shard)) {
			out = append(out, o)
		}
	}
	// By name, so that the deletions and their events come in one order.
	slices.SortFunc(out, func(a, b T) int { return strings.Compare(a.GetName(), b.GetName()) })
	return out, nil
}

// leaving reports whether a child is being deleted, by this controller (its
// cache may not show it yet) or by anyone.
func (c *Controller) leaving(o metav1.Object) bool {
	return o.GetDeletionTimestamp() != nil || c.deletions.pending(o.GetUID())
}

// deleteChild deletes o, if it is still the object the cache holds, and
// remembers the deletion until the cache sees it.
func deleteChild[T metav1.Object](ctx context.Context, c *Controller, k child[T], o T, propagation *metav1.DeletionPropagation) error {
	err := k.delete(ctx, o.GetNamespace(), o.GetName(), metav1.DeleteOptions{
		PropagationPolicy: propagation,
		Preconditions:     &metav1.Preconditions{UID: ptr.To(o.GetUID())},
	})
	switch {
	case apierrors.IsNotFound(err):
		// Gone already: its delete event is on the way, or was seen.
		return nil
	case err != nil:
		return writeError("deleting", k.kind, o.GetName(), err)
	}
	c.deletions.expect(o.GetUID())
	return nil
}

// liveShards returns the cached StatefulSet of each shard that inst controls,
// nil where there is none.
func (c *Controller) liveShards(inst *linv1.Installation, l *listers) []*appsv1.StatefulSet {
	shards := make([]*appsv1.StatefulSet, resources.Shards(inst))
	for i := range shards {
		sts, err := l.statefulSets.StatefulSets(inst.Namespace).Get(resources.StatefulSetName(inst, int32(i)))
		if err == nil && metav1.IsControlledBy(sts, inst) {
			shards[i] = sts
		}
	}
	return shards
}

// updateStatus writes status when it differs from the cached one, on a copy:
// the cached object is shared and never changed. It records a Warning event
// when the Degraded condition turns true or changes its reason, and not on
// every retry.
func (c *Controller) updateStatus(ctx context.Context, inst *linv1.Installation, status linv1.InstallationStatus) error {
	if equalStatus(inst.Status, status) {
		return nil
	}
	if d := warningNews(inst.Status, status); d != nil {
		c.recorder.Event(inst, corev1.EventTypeWarning, d.Reason, d.Message)
	}
	updated := inst.DeepCopy()
	updated.Status = status
	written, err := c.linClient.LinV1().Installations(inst.Namespace).UpdateStatus(ctx, updated,
		metav1.UpdateOptions{FieldManager: FieldManager})
	if err != nil {
		return fmt.Errorf("updating status: %w", err)
	}
	c.statusWrites.record(inst.ResourceVersion, written)
	return nil
}
