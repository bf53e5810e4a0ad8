package controller

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/resources"
)

// rolloutPlan says which shards get the StatefulSet the spec renders now.
type rolloutPlan struct {
	// proceed is true, per shard, for a shard that gets the desired
	// StatefulSet; false for one that keeps its live pod template for now
	// (resources.HoldTemplate).
	proceed []bool
	// rolling is the lowest shard whose pods are being replaced or made, or
	// are about to be; -1 when none is.
	rolling int
}

// planRollout decides which shards get the desired StatefulSet now, from the
// desired and the live StatefulSet of each shard (nil where there is none).
// AllShards: every shard. ShardByShard: a shard that is missing, or already
// has the desired StatefulSet, proceeds. A shard that is not settled (its
// pods are being replaced, or are not all Ready) proceeds too: it is
// disrupted already, and the newest template is what can mend it, so that an
// edit during a rollout, or the fix of a stalled one, reaches it at once.
// Only when no shard is unsettled does the first shard that lacks the
// desired StatefulSet proceed; the others wait. So at most one shard
// replaces pods at a time, in shard order.
func planRollout(strategy linv1.RolloutStrategy, desired, live []*appsv1.StatefulSet) rolloutPlan {
	p := rolloutPlan{proceed: make([]bool, len(desired)), rolling: -1}
	busy := false
	for i, d := range desired {
		l := live[i]
		switch {
		case strategy == linv1.RolloutAllShards || l == nil || sameRendering(d, l):
			p.proceed[i] = true
		case !settled(l):
			p.proceed[i], busy = true, true
		}
		if l != nil && !settled(l) {
			busy = true
		}
	}
	for i, d := range desired {
		if !busy && !p.proceed[i] {
			p.proceed[i], busy = true, true
		}
		if l := live[i]; p.rolling < 0 && p.proceed[i] && (l == nil || !settled(l) || !sameRendering(d, l)) {
			p.rolling = i
		}
	}
	return p
}

// settled reports whether a StatefulSet's controller has seen its current
// spec and every pod it wants runs the current template and is available.
func settled(sts *appsv1.StatefulSet) bool {
	return runsAll(sts, ptr.Deref(sts.Spec.Replicas, 1))
}

// runsAll reports whether a StatefulSet's controller has seen its current
// spec and it runs want pods, all of its current template and available.
func runsAll(sts *appsv1.StatefulSet, want int32) bool {
	s := sts.Status
	return s.ObservedGeneration >= sts.Generation && s.Replicas == want && available(sts, want) &&
		s.UpdatedReplicas == want && (want == 0 || s.UpdateRevision == s.CurrentRevision)
}

// available reports whether want pods of a StatefulSet are Ready and, with
// a minReadySeconds, have been for that long.
func available(sts *appsv1.StatefulSet, want int32) bool {
	return sts.Status.ReadyReplicas == want && (sts.Spec.MinReadySeconds == 0 || sts.Status.AvailableReplicas == want)
}

// heldBack reports whether a shard that the plan before a sync's writes held
// back proceeds in the plan after them. A change that replaces no pod (the
// StatefulSets' labels, say) settles its shard as soon as it is written, so
// the next shard may go at once, and no event but the echo of that write
// would come to say so.
func heldBack(before, after rolloutPlan) bool {
	for i, proceed := range before.proceed {
		if !proceed && i < len(after.proceed) && after.proceed[i] {
			return true
		}
	}
	return false
}

// rolloutStatus returns status.rollout for the shard that is rolling (-1:
// none). The time it started is kept while the same shard rolls to the same
// generation of the spec, and is now otherwise, or when a restart of the
// shard was asked after it: a restart changes no generation, and restarts
// the progress deadline as a new spec would.
func rolloutStatus(inst *linv1.Installation, rolling int, now metav1.Time) *linv1.RolloutStatus {
	if rolling < 0 {
		return nil
	}
	_, restarted := resources.RestartedAt(inst, int32(rolling))
	if prev := inst.Status.Rollout; prev != nil && prev.Shard == int32(rolling) && inst.Status.ObservedGeneration == inst.Generation &&
		!restarted.After(prev.Since.Time) {
		return prev.DeepCopy()
	}
	return &linv1.RolloutStatus{Shard: int32(rolling), Since: now}
}

// stalled reports whether a rollout has gone past its progress deadline,
// and otherwise how long it has left.
func stalled(r *linv1.RolloutStatus, deadline time.Duration, now metav1.Time) (bool, time.Duration) {
	if r == nil {
		return false, 0
	}
	left := deadline - now.Sub(r.Since.Time)
	return left <= 0, left
}
