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
	inst, err := c.cachedInstallation(l, key)
	if inst == nil || err != nil {
		return err
	}
	// Each shard's StatefulSet is decoded from the cache once per sync.
	live := c.liveShards(inst, l)
	out := c.reconcile(ctx, inst, l, live)
	now := metav1.Now()
	live = writtenShards(inst, live, out.changes)
	status := computeStatus(inst, live, withRefusedPods(out, live, l), c.clusterDomain, now)
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
	if out.again {
		// No event will come to say so: the echoes of the sync's own
		// writes wake nothing (see echoes).
		c.queue.Add(key)
	}
	if out.recheck > 0 {
		// A pod that a rollout leaves behind is one only after a while.
		c.queue.AddAfter(key, out.recheck)
	}
	if out.err != nil && out.permanent {
		klog.FromContext(ctx).Info("Installation cannot be reconciled until its spec changes",
			"installation", key, "reason", out.reason, "err", out.err)
		return nil
	}
	return out.err
}

// cachedInstallation returns the Installation key as the cache holds it, or
// as the sync's own last status write returned it when the cache does not
// show that yet; nil when there is nothing to reconcile: it is gone, or
// being deleted.
func (c *Controller) cachedInstallation(l *listers, key cache.ObjectName) (*linv1.Installation, error) {
	inst, err := l.installations.Installations(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		// Garbage collection removes the children through their owner references.
		c.statusWrites.forget(key)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	inst = c.statusWrites.latest(inst)
	if inst.DeletionTimestamp != nil || c.deletions.pending(inst.UID) {
		// Being deleted, or gone already though the cache still holds it.
		return nil, nil
	}
	return inst, nil
}

// reconcile renders the children of inst and, unless it is paused, makes the
// live ones match, then removes the StatefulSets of shards that are gone and
// the pods that a rollout leaves behind (see stalePods); live holds the
// cached StatefulSet of each shard (see liveShards). It goes on past a failed
// child, so that one conflict does not hold the others back, and writes
// nothing for a spec that cannot be rendered whole or that the API server
// refuses (see sendAll).
func (c *Controller) reconcile(ctx context.Context, inst *linv1.Installation, l *listers, live []*appsv1.StatefulSet) outcome {
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
	plan := planRollout(resources.RolloutStrategy(inst), desired.StatefulSets, live)
	out.rolling = plan.rolling
	ws, recreate, errs := c.planWrites(inst, l, desired, live, plan)
	changes, sent, err := c.sendAll(ctx, inst, ws)
	c.recordChanges(inst, changes)
	out.changes = changes
	errs = append(errs, err)
	if sent {
		written := writtenShards(inst, live, changes)
		out.again = len(changes) > 0 && heldBack(plan, planRollout(resources.RolloutStrategy(inst), desired.StatefulSets, written))
		errs = append(errs, c.removeAndRecreate(ctx, inst, l, recreate, &out))
		recheck, err := c.rollBack(ctx, inst, l, written)
		out.recheck = recheck
		errs = append(errs, err)
	}
	out.err = errors.Join(errs...)
	out.reason, out.permanent = classify(out.err)
	return out
}

// planWrites plans the write of each desired child that differs from the
// live one, a shard that the rollout plan holds back with the pod template
// it has, and returns them with the StatefulSets to recreate (desired and
// live) for an immutable field, and the errors of the children that could
// not be planned.
func (c *Controller) planWrites(inst *linv1.Installation, l *listers, desired *resources.Children, live []*appsv1.StatefulSet,
	plan rolloutPlan) ([]pending, [][2]*appsv1.StatefulSet, []error) {
	var ws []pending
	var errs []error
	add := func(w []pending, err error) {
		ws = w
		errs = append(errs, err)
	}
	configMaps, services, sets, budgets := c.configMapChild(l), c.serviceChild(l), shardsFrom(c.statefulSetChild(l), live), c.budgetChild(l)
	for _, cm := range desired.ConfigMaps {
		add(planWrite(ws, inst, configMaps, cm))
	}
	for _, svc := range desired.Services {
		add(planWrite(ws, inst, services, svc))
	}
	var recreate [][2]*appsv1.StatefulSet
	for _, i := range shardOrder(plan) {
		sts := desired.StatefulSets[i]
		if !plan.proceed[i] {
			sts = resources.HoldTemplate(sts, live[i])
		}
		switch {
		case live[i] != nil && c.leaving(live[i]):
			// On its way out: the next sync creates it anew.
		case live[i] != nil && immutableChanged(sts, live[i]):
			recreate = append(recreate, [2]*appsv1.StatefulSet{sts, live[i]})
		default:
			add(planWrite(ws, inst, sets, sts))
		}
	}
	for _, pdb := range desired.PodDisruptionBudgets {
		add(planWrite(ws, inst, budgets, pdb))
	}
	return ws, recreate, errs
}

// removeAndRecreate deletes the StatefulSets in recreate (desired and live)
// to be made anew, naming those it deleted in out.recreated, and the
// children of what the spec no longer has.
func (c *Controller) removeAndRecreate(ctx context.Context, inst *linv1.Installation, l *listers, recreate [][2]*appsv1.StatefulSet, out *outcome) error {
	var errs []error
	for _, r := range recreate {
		err := c.recreateStatefulSet(ctx, inst, l, r[0], r[1])
		if err == nil {
			out.recreated = append(out.recreated, r[1].Name)
		}
		errs = append(errs, err)
	}
	return errors.Join(append(errs, c.deleteRemovedShards(ctx, inst, l), c.deleteRemovedBudgets(ctx, inst, l),
		c.deleteRemovedClientService(ctx, inst, l))...)
}

// shardOrder lists the shards with those the rollout plan lets proceed
// first, so that the first StatefulSet a sync writes carries the desired pod
// template, and one the plan holds back, a pod template that the API server
// accepted before.
func shardOrder(plan rolloutPlan) []int {
	var first, then []int
	for i, proceed := range plan.proceed {
		if proceed {
			first = append(first, i)
		} else {
			then = append(then, i)
		}
	}
	return append(first, then...)
}

// sendAll sends the writes of a sync so that a spec the API server refuses
// leaves no child half-made, and with no dry run in the common case. The
// lead, the first write that holds something the CRD's schema does not check
// (a StatefulSet's pod template, most often), goes first, and the others
// follow only when it is accepted: a write that holds nothing unchecked
// cannot be refused for the spec, and one that holds the same as the lead
// stands or falls with it. Any other write that holds something unchecked (a
// Service with labels from the spec) is tried first as a server-side dry
// run, once for each thing it holds. sendAll reports what it changed,
// whether it went past the lead and its trials, and the errors.
func (c *Controller) sendAll(ctx context.Context, inst *linv1.Installation, ws []pending) ([]change, bool, error) {
	var changes []change
	lead := slices.IndexFunc(ws, func(w pending) bool { return w.unchecked() != "" })
	if lead >= 0 {
		if err := c.tryOthers(ctx, inst, ws[lead:]); err != nil {
			return nil, false, err
		}
		done, err := ws[lead].send(ctx, c, inst, false)
		if err != nil {
			return nil, false, err
		}
		changes = append(changes, done)
	}
	var errs []error
	for i, w := range ws {
		if i == lead {
			continue
		}
		done, err := w.send(ctx, c, inst, false)
		changes = append(changes, done)
		errs = append(errs, err)
	}
	return changes, true, errors.Join(errs...)
}

// tryOthers sends as a server-side dry run the first write of each
// unchecked thing that the lead, ws[0], does not hold, and returns the API
// server's refusals, if any. Any other failure of a trial is left for the
// real write to meet and report.
func (c *Controller) tryOthers(ctx context.Context, inst *linv1.Installation, ws []pending) error {
	tried := map[string]bool{ws[0].unchecked(): true}
	var refusals []error
	for _, w := range ws[1:] {
		u := w.unchecked()
		if u == "" || tried[u] {
			continue
		}
		tried[u] = true
		var se *syncError
		if _, err := w.send(ctx, c, inst, true); errors.As(err, &se) && se.reason == ReasonApplyFailed && se.permanent {
			refusals = append(refusals, err)
		}
	}
	return errors.Join(refusals...)
}

// recreateStatefulSet deletes a StatefulSet whose immutable fields must change,
// orphaning its pods and claims, so that the next sync creates it anew and it
// adopts them: no pod is stopped and no data is lost. When only the storage
// size grew, it first raises the claims' requests, which a StatefulSet never
// does; a refusal of those leaves the StatefulSet as it is. It does so only
// for a StatefulSet rendered from another spec; one rendered from this spec
// that still differs is reported, never deleted again, so this cannot loop.
func (c *Controller) recreateStatefulSet(ctx context.Context, inst *linv1.Installation, l *listers, desired, live *appsv1.StatefulSet) error {
	if sameRendering(desired, live) {
		return &syncError{reason: ReasonApplyFailed, permanent: true,
			err: fmt.Errorf("StatefulSet %s differs in an immutable field from what this spec renders, though it was made from it", live.Name)}
	}
	if onlyClaimsGrow(desired, live) {
		if err := c.growClaims(ctx, inst, desired, live); err != nil {
			return err
		}
	}
	if err := deleteChild(ctx, c, c.statefulSetChild(l), live, ptr.To(metav1.DeletePropagationOrphan)); err != nil {
		return err
	}
	c.recorder.Eventf(inst, corev1.EventTypeNormal, "Recreating",
		"Deleted StatefulSet %s, keeping its pods and claims, to change an immutable field; it is created again next", live.Name)
	return nil
}

// deleteRemovedShards deletes the StatefulSets that inst controls for shards
// beyond spec.shards. Their claims follow the retention policy that
// storage.reclaimPolicy set on them: kept under Retain, deleted under Delete.
func (c *Controller) deleteRemovedShards(ctx context.Context, inst *linv1.Installation, l *listers) error {
	keep := func(shard int32) bool { return shard < resources.Shards(inst) }
	return deleteRemoved(ctx, c, inst, l.statefulSets.ByController, keep, c.statefulSetChild(l), ptr.To(metav1.DeletePropagationBackground))
}

// deleteRemovedBudgets deletes the PodDisruptionBudgets that inst controls
// for shards beyond spec.shards, or all of them when spec.disruption.enabled
// is false.
func (c *Controller) deleteRemovedBudgets(ctx context.Context, inst *linv1.Installation, l *listers) error {
	keep := func(shard int32) bool { return resources.DisruptionBudgets(inst) && shard < resources.Shards(inst) }
	return deleteRemoved(ctx, c, inst, l.budgets.ByController, keep, c.budgetChild(l), nil)
}

// deleteRemovedClientService deletes the client Service that inst controls
// once spec.ports has none: a Service that is not headless cannot be without
// a port, and keeping one that serves nothing would only mislead.
func (c *Controller) deleteRemovedClientService(ctx context.Context, inst *linv1.Installation, l *listers) error {
	if resources.HasClientService(inst) {
		return nil
	}
	svc, err := l.services.Get(inst.Namespace, resources.ClientServiceName(inst))
	if apierrors.IsNotFound(err) || (err == nil && (!metav1.IsControlledBy(svc, inst) || c.leaving(svc))) {
		return nil
	}
	if err == nil {
		err = deleteChild(ctx, c, c.serviceChild(l), svc, nil)
	}
	if err != nil {
		return err
	}
	c.recorder.Eventf(inst, corev1.EventTypeNormal, "Deleted", "Deleted Service %s: spec.ports has none, so there is no client Service", svc.Name)
	return nil
}

// deleteRemoved deletes, with an event each, the children that inst
// controls (byController looks them up by its UID) and whose shard keep no
// longer keeps, except those already going; propagation, when set, says what
// becomes of their dependents.
func deleteRemoved[T metav1.Object](ctx context.Context, c *Controller, inst *linv1.Installation, byController func(uid string) ([]T, error),
	keep func(shard int32) bool, k child[T], propagation *metav1.DeletionPropagation) error {
	objs, err := removed(byController, inst, keep)
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

// removed returns the children that inst controls and whose shard keep no
// longer keeps.
func removed[T metav1.Object](byController func(uid string) ([]T, error), inst *linv1.Installation, keep func(shard int32) bool) ([]T, error) {
	objs, err := byController(string(inst.UID))
	if err != nil {
		return nil, err
	}
	var out []T
	for _, o := range objs {
		if !metav1.IsControlledBy(o, inst) {
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
		sts, err := l.statefulSets.Get(inst.Namespace, resources.StatefulSetName(inst, int32(i)))
		if err == nil && metav1.IsControlledBy(sts, inst) {
			shards[i] = sts
		}
	}
	return shards
}

// shardsFrom returns sets reading the StatefulSet of a shard from live,
// decoded already, and any other one from the cache: a name taken by a
// StatefulSet that the Installation does not control, say.
func shardsFrom(sets child[*appsv1.StatefulSet], live []*appsv1.StatefulSet) child[*appsv1.StatefulSet] {
	cached := sets.get
	sets.get = func(ns, name string) (*appsv1.StatefulSet, error) {
		for _, sts := range live {
			if sts != nil && sts.Name == name {
				return sts, nil
			}
		}
		return cached(ns, name)
	}
	return sets
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
	if !c.echoes.wrote(cache.MetaObjectToName(inst), written) {
		// The cache does not hold it yet.
		c.statusWrites.record(inst.ResourceVersion, written)
	}
	return nil
}
