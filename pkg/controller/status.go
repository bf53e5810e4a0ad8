package controller

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/resources"
)

// outcome is what one sync found and did, as status reports it.
type outcome struct {
	// desired are the children the spec renders; nil when it cannot be rendered.
	desired *resources.Children
	// recreated names the StatefulSets deleted to change an immutable field.
	recreated []string
	// changes are the writes the sync made.
	changes []change
	// reason is the Degraded reason; empty when the sync succeeded.
	reason string
	// permanent failures are not retried until the spec changes.
	permanent bool
	// err is the cause, whose text becomes the Degraded message.
	err error
	// rolling is the shard a rollout is at (rolloutPlan.rolling); -1: none.
	rolling int
	// again is set when the sync's own writes let a shard proceed that its
	// rollout plan held back (see heldBack).
	again bool
	// recheck is when to look again at the pods that a rollout leaves
	// behind (see rollBack); zero for never.
	recheck time.Duration
}

// newOutcome is the outcome of a sync that rendered desired and failed with err.
func newOutcome(desired *resources.Children, err error) outcome {
	reason, permanent := classify(err)
	return outcome{desired: desired, reason: reason, permanent: permanent, err: err, rolling: -1}
}

// ReasonRolloutStalled is the reason of Progressing=False when the rolling
// shard has not run its new pods Ready within the progress deadline.
const ReasonRolloutStalled = "RolloutStalled"

// computeStatus derives the status of inst from its live shard StatefulSets
// (nil where missing) and the sync's outcome. It is pure: now is the time a
// condition that changes status is stamped with; a condition that keeps its
// status keeps its time.
func computeStatus(inst *linv1.Installation, live []*appsv1.StatefulSet, out outcome,
	clusterDomain string, now metav1.Time) linv1.InstallationStatus {
	st := linv1.InstallationStatus{
		ObservedGeneration: inst.Generation,
		Selector:           resources.Selector(inst),
		Endpoint:           resources.Endpoint(inst, clusterDomain),
		ConfigHash:         inst.Status.ConfigHash,
		Conditions:         append([]metav1.Condition(nil), inst.Status.Conditions...),
	}
	want := resources.DesiredReplicas(inst)
	rolledOut := true
	for i, sts := range live {
		shard := linv1.ShardStatus{Index: int32(i), StatefulSetName: resources.StatefulSetName(inst, int32(i))}
		if sts != nil {
			shard.Replicas = sts.Status.Replicas
			shard.ReadyReplicas = sts.Status.ReadyReplicas
			if out.desired != nil && templateObserved(sts, out.desired.StatefulSets[i]) {
				shard.UpdatedReplicas = sts.Status.UpdatedReplicas
			}
		}
		if i == 0 || shard.Replicas < st.Replicas {
			st.Replicas = shard.Replicas
		}
		st.ReadyReplicas += shard.ReadyReplicas
		st.UpdatedReplicas += shard.UpdatedReplicas
		st.Shards = append(st.Shards, shard)
		rolledOut = rolledOut && out.desired != nil && shardRolledOut(sts, out.desired.StatefulSets[i], want)
	}
	total := want * int32(len(live))
	st.Ready = fmt.Sprintf("%d/%d", st.ReadyReplicas, total)
	if rolledOut {
		st.ConfigHash = resources.ConfigHash(inst)
	} else {
		st.Rollout = rolloutStatus(inst, out.rolling, now)
	}
	st.Phase = phase(inst, rolledOut, st.ReadyReplicas, out.reason)
	setConditions(&st, inst, rolledOut, total, out, now)
	return st
}

// FirstStatus is the status that the first sync of inst writes, once it has
// created desired, its children, with stored, the StatefulSets as the API
// server stored them. The benchmark's floor writes it, so that the floor
// writes what the operator does.
func FirstStatus(inst *linv1.Installation, desired *resources.Children, stored []*appsv1.StatefulSet,
	clusterDomain string, now metav1.Time) linv1.InstallationStatus {
	out := newOutcome(desired, nil)
	none := make([]*appsv1.StatefulSet, len(desired.StatefulSets))
	out.rolling = planRollout(resources.RolloutStrategy(inst), desired.StatefulSets, none).rolling
	return computeStatus(inst, stored, out, clusterDomain, now)
}

// shardRolledOut reports whether a shard's StatefulSet is the one the spec
// renders, its controller has seen that version, and all its pods run it and
// are available.
func shardRolledOut(live, desired *appsv1.StatefulSet, want int32) bool {
	return live != nil && sameRendering(desired, live) && runsAll(live, want)
}

// templateObserved reports whether the StatefulSet's controller has seen the
// pod template the spec renders. Until then its updatedReplicas counts pods
// of an older template, so they do not count as updated.
func templateObserved(live, desired *appsv1.StatefulSet) bool {
	return live.Status.ObservedGeneration >= live.Generation &&
		equality.Semantic.DeepDerivative(desired.Spec.Template, live.Spec.Template)
}

// phase sums up the state in one word; the rules are in docs/status.md.
func phase(inst *linv1.Installation, rolledOut bool, ready int32, degraded string) linv1.Phase {
	switch {
	case inst.Spec.Paused:
		return linv1.PhasePaused
	case degraded != "":
		return linv1.PhaseDegraded
	case rolledOut && inst.Spec.Stop:
		return linv1.PhaseStopped
	case rolledOut:
		return linv1.PhaseReady
	case ready == 0 && (inst.Status.Phase == "" || inst.Status.Phase == linv1.PhasePending):
		return linv1.PhasePending
	default:
		return linv1.PhaseProgressing
	}
}

// setConditions sets Ready, Progressing and Degraded. apimeta.SetStatusCondition
// moves lastTransitionTime only when a condition's status changes.
func setConditions(st *linv1.InstallationStatus, inst *linv1.Installation, rolledOut bool, total int32, out outcome, now metav1.Time) {
	set := func(typ string, ok bool, reason, message string) {
		status := metav1.ConditionFalse
		if ok {
			status = metav1.ConditionTrue
		}
		apimeta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason,
			Message: message, ObservedGeneration: inst.Generation, LastTransitionTime: now})
	}
	counts := fmt.Sprintf("%d/%d pods ready, %d updated", st.ReadyReplicas, total, st.UpdatedReplicas)
	switch {
	case inst.Spec.Paused:
		set(linv1.ConditionReady, rolledOut && !inst.Spec.Stop, "Paused", "The operator writes nothing to the children while spec.paused is set; "+counts)
		set(linv1.ConditionProgressing, false, "Paused", "spec.paused is set")
	case len(out.recreated) > 0:
		set(linv1.ConditionReady, false, "Recreating", counts)
		set(linv1.ConditionProgressing, true, "Recreating", fmt.Sprintf(
			"StatefulSets %s deleted, keeping their pods and claims, to change a field that cannot change in place; they are created again",
			strings.Join(out.recreated, ", ")))
	case rolledOut && inst.Spec.Stop:
		set(linv1.ConditionReady, false, "Stopped", "spec.stop is set: every shard runs zero pods")
		set(linv1.ConditionProgressing, false, "Stopped", "Every shard is scaled to zero")
	case rolledOut:
		set(linv1.ConditionReady, true, "AllReplicasReady", counts)
		set(linv1.ConditionProgressing, false, "RolloutComplete", counts)
	case st.Rollout != nil:
		set(linv1.ConditionReady, false, "ReplicasNotReady", counts)
		r, deadline := st.Rollout, resources.ProgressDeadline(inst)
		if stall, _ := stalled(r, deadline, now); stall {
			set(linv1.ConditionProgressing, false, ReasonRolloutStalled, fmt.Sprintf(
				"Shard %d has not run its new pods Ready within spec.rollout.progressDeadlineSeconds (%v); the rollout holds there "+
					"and the shards after it keep their pods until the spec changes; %s", r.Shard, deadline, counts))
		} else {
			set(linv1.ConditionProgressing, true, "RollingOut", fmt.Sprintf("Rolling out shard %d of %d%s; %s",
				r.Shard, len(st.Shards), waiting(inst), counts))
		}
	default:
		set(linv1.ConditionReady, false, "ReplicasNotReady", counts)
		set(linv1.ConditionProgressing, true, "RollingOut", counts)
	}
	if out.reason != "" {
		set(linv1.ConditionDegraded, true, out.reason, out.err.Error())
	} else {
		set(linv1.ConditionDegraded, false, "AsExpected", "The children match the spec")
	}
}

// waiting says what the other shards do while one rolls.
func waiting(inst *linv1.Installation) string {
	if resources.RolloutStrategy(inst) == linv1.RolloutShardByShard {
		return " (ShardByShard: the shards after it wait)"
	}
	return ""
}

// equalStatus reports whether two statuses say the same.
func equalStatus(a, b linv1.InstallationStatus) bool {
	return equality.Semantic.DeepEqual(a, b)
}

// warningNews returns the condition of next that deserves a Warning event:
// Degraded when it turned true or changed its reason since prev, else
// Progressing when it turned to RolloutStalled; nil when there is none.
func warningNews(prev, next linv1.InstallationStatus) *metav1.Condition {
	if n := news(prev, next, linv1.ConditionDegraded, metav1.ConditionTrue); n != nil {
		return n
	}
	if n := news(prev, next, linv1.ConditionProgressing, metav1.ConditionFalse); n != nil && n.Reason == ReasonRolloutStalled {
		return n
	}
	return nil
}

// news returns the condition typ of next when it has status and prev had
// not that status with that reason, and nil otherwise.
func news(prev, next linv1.InstallationStatus, typ string, status metav1.ConditionStatus) *metav1.Condition {
	n := apimeta.FindStatusCondition(next.Conditions, typ)
	if n == nil || n.Status != status {
		return nil
	}
	p := apimeta.FindStatusCondition(prev.Conditions, typ)
	if p != nil && p.Status == status && p.Reason == n.Reason {
		return nil
	}
	return n
}
