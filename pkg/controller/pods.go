package controller

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// The operator watches the pods of its StatefulSets for one thing: to find
// the pods that a rollout leaves behind and that the StatefulSet controller
// will not replace (see stalePods). Their cache holds each pod slimmed to
// what that needs.

// slimPod returns the part of a pod that stalePods and failure read: its
// identity, labels, owner, creation and deletion, and its phase, conditions
// and container states. The spec, the largest part, is dropped.
func slimPod(p *corev1.Pod) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: p.Name, Namespace: share(p.Namespace), UID: p.UID, ResourceVersion: p.ResourceVersion,
			Labels: p.Labels, OwnerReferences: p.OwnerReferences, CreationTimestamp: p.CreationTimestamp,
			DeletionTimestamp: p.DeletionTimestamp,
		},
		Status: corev1.PodStatus{
			Phase:                 p.Status.Phase,
			Conditions:            slimConditions(p.Status.Conditions),
			InitContainerStatuses: slimContainers(p.Status.InitContainerStatuses),
			ContainerStatuses:     slimContainers(p.Status.ContainerStatuses),
		},
	}
}

// slimConditions keeps a pod's Ready and PodScheduled conditions.
func slimConditions(cs []corev1.PodCondition) []corev1.PodCondition {
	var out []corev1.PodCondition
	for _, c := range cs {
		if c.Type == corev1.PodReady || c.Type == corev1.PodScheduled {
			out = append(out, corev1.PodCondition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message,
				LastTransitionTime: c.LastTransitionTime})
		}
	}
	return out
}

// slimContainers keeps each container's name and why it waits or stopped.
func slimContainers(cs []corev1.ContainerStatus) []corev1.ContainerStatus {
	var out []corev1.ContainerStatus
	for _, c := range cs {
		s := corev1.ContainerStatus{Name: c.Name}
		if w := c.State.Waiting; w != nil {
			s.State.Waiting = &corev1.ContainerStateWaiting{Reason: w.Reason}
		}
		if t := c.State.Terminated; t != nil {
			s.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: t.ExitCode, Reason: t.Reason}
		}
		out = append(out, s)
	}
	return out
}

// podsOf returns the cached pods whose controller is the StatefulSet with uid.
func (l *listers) podsOf(uid types.UID) []*corev1.Pod {
	return indexed[*corev1.Pod](l.pods, byController, string(uid))
}

// podHandler wakes the Installation of a pod that a rollout may leave
// behind: one that is not Ready and runs another revision than its
// StatefulSet's update revision, as statefulSets, the cache of StatefulSets,
// holds it. While a shard rolls, a pod that turns Ready or goes wakes it
// too: that may free the room the next one waits for, and the StatefulSet's
// own status change, which says the same, may have come before the pod's.
func (c *Controller) podHandler(statefulSets statefulSetLister) cache.ResourceEventHandler {
	handle := func(old, obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		before, _ := old.(*corev1.Pod)
		turned := before == nil || isPodReady(before) != isPodReady(p)
		if isPodReady(p) && !turned {
			// Most events: a Ready pod's status; no need to decode its
			// StatefulSet from the cache.
			return
		}
		sts, ok := c.podOwner(statefulSets, p)
		if !ok {
			return
		}
		stale := !isPodReady(p) && p.DeletionTimestamp == nil && podRevision(p) != sts.Status.UpdateRevision
		if stale || (turned && replacingPods(sts)) {
			c.handleChild(sts)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { handle(nil, obj) },
		UpdateFunc: func(old, obj any) {
			if !sameResourceVersion(old, obj) {
				handle(old, obj)
			}
		},
		DeleteFunc: func(obj any) {
			c.observeDeletion(obj)
			handle(nil, unwrapTombstone(obj))
		},
	}
}

// podOwner returns the cached StatefulSet that controls p.
func (c *Controller) podOwner(statefulSets statefulSetLister, p *corev1.Pod) (*appsv1.StatefulSet, bool) {
	ref := metav1.GetControllerOf(p)
	if ref == nil || ref.Kind != "StatefulSet" {
		return nil, false
	}
	sts, err := statefulSets.Get(p.Namespace, ref.Name)
	return sts, err == nil && sts.UID == ref.UID
}

// replacingPods reports whether some pod of a StatefulSet runs another
// revision than its update revision.
func replacingPods(sts *appsv1.StatefulSet) bool {
	s := sts.Status
	return s.CurrentRevision != s.UpdateRevision || s.UpdatedReplicas < s.Replicas
}
