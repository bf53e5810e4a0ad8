package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/resources"
)

// ReasonForcedRollback is the reason of the event raised for each pod that
// the operator deletes because a rollout leaves it behind (see stalePods).
const ReasonForcedRollback = "ForcedRollback"

// settleTime is how long a pod must have been not Ready before the forced
// rollback deletes it. The caches of pods and of StatefulSets follow two
// watches, and for a moment either may be ahead of the other: a pod that the
// StatefulSet has just made at a revision its cached status does not show
// yet, or one whose readiness blinks while the StatefulSet replaces another,
// must not be taken for one left behind.
const settleTime = 10 * time.Second

// stalePod is a pod that a rollout leaves behind, and why it cannot serve.
type stalePod struct {
	pod *corev1.Pod
	// why says why the pod is not Ready, from its status.
	why string
}

// stalePods returns the pods of a shard's StatefulSet that the operator
// deletes now, so that the StatefulSet makes them again at its update
// revision: a pod that runs another revision than the update revision, and
// is not Ready. Such a pod is what a rollout that was set back, or replaced
// by another, leaves behind (it runs neither the current nor the update
// revision), or a pod of the release before that never became Ready (a
// first release that never ran, then fixed). Under OrderedReady the
// StatefulSet controller waits for every pod, in ordinal order, to become
// Ready before it replaces or makes any after it, which a crash-looping or
// unschedulable pod never does (Kubernetes calls the way out "forced
// rollback", and leaves it to a person); so the lowest such pod goes first,
// the one in the way. Under Parallel the StatefulSet controller would
// replace the pod anyway, highest ordinal first, and so does the operator.
//
// A Ready pod is never one, nor one not Ready for less than settleTime. A
// pod of the current revision that only fails its readiness (no container
// waiting on an error, none stopped, scheduled) is one only once it has not
// been Ready for the progress deadline: until then the rollout may yet reach
// it. Nor is any pod one while the StatefulSet's status describes an older
// spec: its revisions are then not yet those of the spec, and a pod just
// made at the new revision would look stale. stalePods also returns when a
// pod not Ready too short a time becomes one (zero for none). At most
// maxUnavailable pods of the shard are away at once: a pod being deleted
// (deleting reports a deletion the cache does not show yet), one made at the
// update revision and not Ready yet, and a missing pod that the StatefulSet
// is making count against it.
func stalePods(sts *appsv1.StatefulSet, pods []*corev1.Pod, deleting func(*corev1.Pod) bool, deadline time.Duration,
	now time.Time) ([]stalePod, time.Duration) {
	s := sts.Status
	if s.ObservedGeneration < sts.Generation || s.UpdateRevision == "" {
		return nil, 0
	}
	replicas := ptr.Deref(sts.Spec.Replicas, 1)
	byOrdinal := make([]*corev1.Pod, replicas)
	for _, p := range pods {
		if i, ok := podOrdinal(sts.Name, p.Name); ok && i < replicas && metav1.IsControlledBy(p, sts) {
			byOrdinal[i] = p
		}
	}
	ordered := sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement
	room := maxUnavailable(sts, replicas)
	var stale []stalePod
	var recheck time.Duration
	allReady := true // every pod below the one looked at is Ready
	for _, p := range byOrdinal {
		switch rev := podRevision(p); {
		case p == nil:
			// The StatefulSet makes it now, unless OrderedReady holds it
			// behind a pod below that is not Ready: that one is in the way.
			if !ordered || allReady {
				room--
			}
		case p.DeletionTimestamp != nil || deleting(p):
			room--
		case isPodReady(p):
		case rev == s.UpdateRevision:
			room--
		default:
			why, hard := failure(p)
			wait := settleTime
			if rev == s.CurrentRevision && !hard {
				// Only failing its readiness, on the revision the rollout
				// has yet to reach: stuck only once the rollout stalled.
				wait = deadline
			}
			if left := wait - now.Sub(notReadySince(p)); left > 0 {
				recheck = shortest(recheck, left)
				break
			}
			stale = append(stale, stalePod{pod: p, why: why})
		}
		allReady = allReady && p != nil && p.DeletionTimestamp == nil && isPodReady(p)
	}
	if !ordered {
		// As the StatefulSet controller replaces pods: highest ordinal first.
		slices.Reverse(stale)
	}
	return stale[:min(max(int(room), 0), len(stale))], recheck
}

// shortest returns the shorter of two waits, where zero is none.
func shortest(a, b time.Duration) time.Duration {
	if a == 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

// notReadySince is when a pod's Ready condition last turned, or when the pod
// was made if it has none yet.
func notReadySince(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time
		}
	}
	return p.CreationTimestamp.Time
}

// podOrdinal returns the ordinal of a pod named after the StatefulSet sts.
func podOrdinal(sts, pod string) (int32, bool) {
	rest, ok := strings.CutPrefix(pod, sts+"-")
	if !ok {
		return 0, false
	}
	i, err := strconv.ParseInt(rest, 10, 32)
	return int32(i), err == nil && i >= 0
}

// podRevision is the StatefulSet revision a pod was made from; "" for none.
func podRevision(p *corev1.Pod) string {
	if p == nil {
		return ""
	}
	return p.Labels[appsv1.ControllerRevisionHashLabelKey]
}

// maxUnavailable is how many pods of a StatefulSet's replicas may be away
// at once in its rolling update, at least one, as its controller counts it.
func maxUnavailable(sts *appsv1.StatefulSet, replicas int32) int32 {
	ru := sts.Spec.UpdateStrategy.RollingUpdate
	if ru == nil || ru.MaxUnavailable == nil {
		return 1
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, int(replicas), false)
	if err != nil || n < 1 {
		return 1
	}
	return int32(n)
}

// isPodReady reports whether a pod's Ready condition is True.
func isPodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// failure says, from a pod's status, why it is not Ready, and whether that
// is a hard failure: a container waiting (CrashLoopBackOff,
// ImagePullBackOff) or stopped with an error, or a pod that cannot be
// scheduled, rather than only a readiness that does not pass (yet).
func failure(p *corev1.Pod) (string, bool) {
	for _, cs := range slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses) {
		switch st := cs.State; {
		case st.Waiting != nil && st.Waiting.Reason != "" && st.Waiting.Reason != "ContainerCreating" && st.Waiting.Reason != "PodInitializing":
			return fmt.Sprintf("container %s is waiting: %s", cs.Name, st.Waiting.Reason), true
		case st.Terminated != nil && st.Terminated.ExitCode != 0:
			return fmt.Sprintf("container %s exited with code %d (%s)", cs.Name, st.Terminated.ExitCode, st.Terminated.Reason), true
		}
	}
	var ready *corev1.PodCondition
	for i, c := range p.Status.Conditions {
		switch {
		case c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse:
			return fmt.Sprintf("pod is %s: %s: %s", p.Status.Phase, c.Reason, c.Message), true
		case c.Type == corev1.PodReady:
			ready = &p.Status.Conditions[i]
		}
	}
	if ready != nil && ready.Message != "" {
		return fmt.Sprintf("pod is %s, not Ready: %s", p.Status.Phase, ready.Message), false
	}
	return fmt.Sprintf("pod is %s, not Ready", p.Status.Phase), false
}

// rollBack deletes the pods of each shard that a rollout leaves behind (see
// stalePods), with an event each, and returns when the sync must look again:
// when a pod not Ready too short a time becomes one, a second after a pod
// that had changed since the cache showed it, or after a write of the
// operator's own to a StatefulSet that the cache does not show yet; zero for
// never. live holds each shard's StatefulSet as the sync left it.
func (c *Controller) rollBack(ctx context.Context, inst *linv1.Installation, l *listers, live []*appsv1.StatefulSet) (time.Duration, error) {
	var recheck time.Duration
	var errs []error
	now := time.Now()
	for _, sts := range live {
		if sts == nil || c.leaving(sts) {
			continue
		}
		pods := l.podsOf(sts.UID)
		if c.echoes.awaiting(sts.UID) {
			// Its echo wakes nothing (see echoes), so look again when a pod
			// could be one; not after every write of a StatefulSet, which
			// would cost a second sync of each new or edited Installation.
			if slices.ContainsFunc(pods, func(p *corev1.Pod) bool { return !isPodReady(p) }) {
				recheck = shortest(recheck, time.Second)
			}
			continue
		}
		stale, after := stalePods(sts, pods, func(p *corev1.Pod) bool { return c.deletions.pending(p.UID) },
			resources.ProgressDeadline(inst), now)
		recheck = shortest(recheck, after)
		for _, s := range stale {
			changed, err := c.deleteStalePod(ctx, inst, sts, s)
			if changed {
				recheck = shortest(recheck, time.Second)
			}
			errs = append(errs, err)
		}
	}
	return recheck, errors.Join(errs...)
}

// deleteStalePod deletes a stale pod, only if it is still as the cache showed
// it (its UID and resourceVersion as preconditions), so that a pod that has
// become Ready since is never deleted; it reports whether it had changed.
func (c *Controller) deleteStalePod(ctx context.Context, inst *linv1.Installation, sts *appsv1.StatefulSet, s stalePod) (bool, error) {
	p := s.pod
	err := c.kubeClient.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: ptr.To(p.UID), ResourceVersion: ptr.To(p.ResourceVersion)},
	})
	switch {
	case apierrors.IsNotFound(err):
		// Gone already: the StatefulSet controller may replace it too.
		return false, nil
	case apierrors.IsConflict(err):
		return true, nil
	case err != nil:
		return false, writeError("deleting", "Pod", p.Name, err)
	}
	c.deletions.expect(p.UID)
	c.recorder.Eventf(inst, corev1.EventTypeNormal, ReasonForcedRollback,
		"Deleted pod %s, not Ready (%s), of revision %s, which is not the update revision of StatefulSet %s (current %s, update %s): it is made again at the update revision",
		p.Name, s.why, podRevision(p), sts.Name, sts.Status.CurrentRevision, sts.Status.UpdateRevision)
	return false, nil
}
