package controller

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// ReasonPodsRefused is the Degraded reason when the API server refuses the
// pods that a shard's StatefulSet creates: Pod Security admission, a quota,
// a LimitRange, a webhook. The StatefulSet itself was accepted, so only the
// StatefulSet controller's events say why its pods are missing.
const ReasonPodsRefused = "PodsRefused"

// The events of the StatefulSet controller on a pod it created or could not.
const (
	reasonFailedCreate     = "FailedCreate"
	reasonSuccessfulCreate = "SuccessfulCreate"
)

// statefulSetEvents selects the events about StatefulSets, of which the
// operator reads the two above: a field selector cannot ask for two reasons.
const statefulSetEvents = "involvedObject.kind=StatefulSet"

// byInvolvedUID names the index of events by the UID of the object they are
// about, where a sync finds those of its StatefulSets.
const byInvolvedUID = "byInvolvedUID"

// newEventInformer returns the constructor of the informer of events about
// StatefulSets in ns, for a shared informer factory's InformerFor.
func newEventInformer(ns string) func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer {
	return func(client kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return coreinformers.NewFilteredEventInformer(client, ns, resync,
			cache.Indexers{byInvolvedUID: involvedUID},
			func(o *metav1.ListOptions) { o.FieldSelector = statefulSetEvents })
	}
}

// involvedUID is the index function of byInvolvedUID.
func involvedUID(obj any) ([]string, error) {
	if e, ok := obj.(*corev1.Event); ok {
		return []string{string(e.InvolvedObject.UID)}, nil
	}
	return nil, nil
}

// eventsAbout returns the cached events about the object with uid.
func eventsAbout(events cache.Indexer, uid types.UID) []*corev1.Event {
	return indexed[*corev1.Event](events, byInvolvedUID, string(uid))
}

// refusedPods returns why the pods of the first shard that lacks some are
// refused, or nil: a shard lacks pods for a refusal when the StatefulSet
// controller's latest word on creating its pods is a FailedCreate, not a
// SuccessfulCreate after it. A refusal that a fix of the spec ends is so
// answered by the first pod created. events returns those about a UID.
func refusedPods(live []*appsv1.StatefulSet, events func(types.UID) []*corev1.Event) error {
	for i, sts := range live {
		if sts == nil || sts.Spec.Replicas == nil || sts.Status.Replicas >= *sts.Spec.Replicas {
			continue
		}
		var failed *corev1.Event
		var failedAt, createdAt time.Time
		for _, e := range events(sts.UID) {
			at := lastSeen(e)
			switch e.Reason {
			case reasonFailedCreate:
				if failed == nil || at.After(failedAt) {
					failed, failedAt = e, at
				}
			case reasonSuccessfulCreate:
				if at.After(createdAt) {
					createdAt = at
				}
			}
		}
		if failed != nil && failedAt.After(createdAt) {
			return fmt.Errorf("shard %d: %d of %d pods are missing; StatefulSet %s cannot create them: %s",
				i, *sts.Spec.Replicas-sts.Status.Replicas, *sts.Spec.Replicas, sts.Name, failed.Message)
		}
	}
	return nil
}

// lastSeen is when an event last happened, by whichever of its times the
// recorder set.
func lastSeen(e *corev1.Event) time.Time {
	t := e.LastTimestamp.Time
	if e.Series != nil && e.Series.LastObservedTime.After(t) {
		t = e.Series.LastObservedTime.Time
	}
	if e.EventTime.After(t) {
		t = e.EventTime.Time
	}
	return t
}

// withRefusedPods is out as status reports it: Degraded with
// ReasonPodsRefused when the sync itself succeeded but a shard's pods are
// refused. The sync's own result is unchanged: there is nothing to retry,
// and the events and the StatefulSets' status wake it again.
func withRefusedPods(out outcome, live []*appsv1.StatefulSet, l *listers) outcome {
	if out.err != nil {
		return out
	}
	if err := refusedPods(live, func(uid types.UID) []*corev1.Event { return eventsAbout(l.events, uid) }); err != nil {
		out.reason, out.err = ReasonPodsRefused, err
	}
	return out
}
