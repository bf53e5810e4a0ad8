// Package plugin is the kubectl plugin kubectl-lin: it reads an Installation
// and its children in one go and renders them, and changes the spec fields
// that day-2 chores need. cmd/kubectl-lin wires it to kubectl's flags.
package plugin

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/client/clientset/versioned"
	"lin.dev/lin-operator/pkg/resources"
)

// Clients are what the plugin talks to the API server with.
type Clients struct {
	// Kube reads the children and events, and the cluster's version.
	Kube kubernetes.Interface
	// Lin reads and patches Installations.
	Lin versioned.Interface
}

// Snapshot is one Installation and its children, as read at one moment.
type Snapshot struct {
	// Installation is the Installation itself.
	Installation *linv1.Installation `json:"installation"`
	// StatefulSets are its shards'.
	StatefulSets []appsv1.StatefulSet `json:"statefulSets"`
	// Pods are the pods of every shard.
	Pods []corev1.Pod `json:"pods"`
	// Claims are the pods' PersistentVolumeClaims.
	Claims []corev1.PersistentVolumeClaim `json:"claims"`
	// Budgets are the shards' PodDisruptionBudgets.
	Budgets []policyv1.PodDisruptionBudget `json:"podDisruptionBudgets"`
	// Services are the client and headless Services.
	Services []corev1.Service `json:"services"`
	// Events are about the Installation and its children, oldest first.
	Events []corev1.Event `json:"events"`
}

// Gather reads the Installation namespace/name and its children: one GET,
// five LISTs of the namespace by the Installation's label, and one LIST of
// the namespace's events.
func Gather(ctx context.Context, c Clients, namespace, name string) (*Snapshot, error) {
	inst, err := c.Lin.LinV1().Installations(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, explain(err, "read", installationName(namespace, name))
	}
	s := &Snapshot{Installation: inst}
	opts := metav1.ListOptions{LabelSelector: labels.SelectorFromSet(resources.SelectorLabels(inst)).String()}
	sets, err := c.Kube.AppsV1().StatefulSets(namespace).List(ctx, opts)
	if err != nil {
		return nil, explain(err, "read", "StatefulSets")
	}
	pods, err := c.Kube.CoreV1().Pods(namespace).List(ctx, opts)
	if err != nil {
		return nil, explain(err, "read", "pods")
	}
	claims, err := c.Kube.CoreV1().PersistentVolumeClaims(namespace).List(ctx, opts)
	if err != nil {
		return nil, explain(err, "read", "PersistentVolumeClaims")
	}
	budgets, err := c.Kube.PolicyV1().PodDisruptionBudgets(namespace).List(ctx, opts)
	if err != nil {
		return nil, explain(err, "read", "PodDisruptionBudgets")
	}
	services, err := c.Kube.CoreV1().Services(namespace).List(ctx, opts)
	if err != nil {
		return nil, explain(err, "read", "Services")
	}
	events, err := c.Kube.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, explain(err, "read", "events")
	}
	s.StatefulSets, s.Pods, s.Claims = sets.Items, pods.Items, claims.Items
	s.Budgets, s.Services = budgets.Items, services.Items
	s.Events = s.about(events.Items)
	return s, nil
}

// about returns the events of events whose object is s's Installation or
// one of its children, oldest first.
func (s *Snapshot) about(events []corev1.Event) []corev1.Event {
	uids := map[string]bool{string(s.Installation.UID): true}
	for _, o := range s.children() {
		uids[string(o.GetUID())] = true
	}
	var out []corev1.Event
	for _, e := range events {
		if uids[string(e.InvolvedObject.UID)] {
			out = append(out, e)
		}
	}
	slices.SortStableFunc(out, func(a, b corev1.Event) int { return eventTime(a).Compare(eventTime(b).Time) })
	return out
}

// children returns the metadata of every child in s.
func (s *Snapshot) children() []metav1.Object {
	var out []metav1.Object
	for i := range s.StatefulSets {
		out = append(out, &s.StatefulSets[i])
	}
	for i := range s.Pods {
		out = append(out, &s.Pods[i])
	}
	for i := range s.Claims {
		out = append(out, &s.Claims[i])
	}
	for i := range s.Budgets {
		out = append(out, &s.Budgets[i])
	}
	for i := range s.Services {
		out = append(out, &s.Services[i])
	}
	return out
}

// eventTime is when an event last happened, whichever API wrote it.
func eventTime(e corev1.Event) metav1.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp
	case !e.EventTime.IsZero():
		return metav1.NewTime(e.EventTime.Time)
	default:
		return e.CreationTimestamp
	}
}

// explain turns an API error about what, met when it was to verb (read,
// patch) it, into one line that names what is missing or refused.
func explain(err error, verb, what string) error {
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s not found", what)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("no permission to %s %s: %v", verb, what, err)
	default:
		return fmt.Errorf("%s %s: %w", verb, what, err)
	}
}
