package controller

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestHoldsAllowsServerDefaultsAndNoAddedItems(t *testing.T) {
	desired := corev1.Container{Name: "app", Image: "example.com/app:1",
		Env:       []corev1.EnvVar{{Name: "A", Value: "1"}},
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}}
	for _, tc := range []struct {
		name  string
		live  func(*corev1.Container)
		holds bool
	}{
		{"the same", func(*corev1.Container) {}, true},
		{"server defaults in fields desired leaves empty", func(c *corev1.Container) {
			c.ImagePullPolicy, c.TerminationMessagePath = corev1.PullIfNotPresent, "/dev/termination-log"
			c.SecurityContext = &corev1.SecurityContext{}
		}, true},
		{"a quantity written another way", func(c *corev1.Container) {
			c.Resources.Requests[corev1.ResourceMemory] = resource.MustParse("1024Mi")
		}, true},
		{"an env var added", func(c *corev1.Container) { c.Env = append(c.Env, corev1.EnvVar{Name: "B"}) }, false},
		{"an env var changed", func(c *corev1.Container) { c.Env[0].Value = "2" }, false},
		{"a request added", func(c *corev1.Container) {
			c.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1")
		}, false},
		{"a list desired has none of", func(c *corev1.Container) { c.Args = []string{"--debug"} }, false},
		{"a field desired sets, changed", func(c *corev1.Container) { c.Image = "example.com/app:2" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live := desired.DeepCopy()
			tc.live(live)
			if got := holds(reflect.ValueOf(desired), reflect.ValueOf(*live)); got != tc.holds {
				t.Errorf("holds = %v, want %v", got, tc.holds)
			}
		})
	}
	withProbe := desired.DeepCopy()
	withProbe.ReadinessProbe = &corev1.Probe{PeriodSeconds: 5}
	if holds(reflect.ValueOf(*withProbe), reflect.ValueOf(desired)) {
		t.Error("a probe that desired sets and live lacks holds")
	}
	live := withProbe.DeepCopy()
	live.ReadinessProbe.TimeoutSeconds, live.ReadinessProbe.FailureThreshold = 1, 3
	if !holds(reflect.ValueOf(*withProbe), reflect.ValueOf(*live)) {
		t.Error("a probe with the server's defaults does not hold")
	}
}
