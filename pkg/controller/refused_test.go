package controller

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func TestRefusedPodsNamesTheShardAndTheRefusalUntilAPodIsCreated(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)
	shard := func(uid string, want, have int32) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "demo-" + uid, UID: types.UID(uid)},
			Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(want)}, Status: appsv1.StatefulSetStatus{Replicas: have}}
	}
	event := func(reason string, at time.Duration) *corev1.Event {
		return &corev1.Event{Reason: reason, Message: reason + " message", LastTimestamp: metav1.NewTime(t0.Add(at))}
	}
	refused := event(reasonFailedCreate, 2*time.Second)
	for _, tc := range []struct {
		name   string
		live   []*appsv1.StatefulSet
		events []*corev1.Event
		want   string
	}{
		{"every pod there", []*appsv1.StatefulSet{shard("0", 2, 2), shard("1", 2, 2)}, []*corev1.Event{refused}, ""},
		{"pods missing, no event", []*appsv1.StatefulSet{nil, shard("1", 2, 0)}, nil, ""},
		{"pods missing, refused", []*appsv1.StatefulSet{shard("0", 2, 2), shard("1", 2, 0)}, []*corev1.Event{refused},
			"shard 1: 2 of 2 pods are missing; StatefulSet demo-1 cannot create them: FailedCreate message"},
		{"refused after a pod was created", []*appsv1.StatefulSet{shard("0", 2, 1)},
			[]*corev1.Event{event(reasonSuccessfulCreate, time.Second), refused}, "shard 0: 1 of 2"},
		{"a pod created after the refusal", []*appsv1.StatefulSet{shard("0", 2, 1)},
			[]*corev1.Event{refused, event(reasonSuccessfulCreate, 3*time.Second)}, ""},
		{"created in the same second as refused", []*appsv1.StatefulSet{shard("0", 2, 1)},
			[]*corev1.Event{refused, event(reasonSuccessfulCreate, 2*time.Second)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := refusedPods(tc.live, func(types.UID) []*corev1.Event { return tc.events })
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v, want none", err)
			case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
				t.Errorf("refused: %v, want %q", err, tc.want)
			}
		})
	}
}

func TestLastSeenTakesTheLatestOfAnEventsTimes(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)
	e := &corev1.Event{LastTimestamp: metav1.NewTime(t0), EventTime: metav1.NewMicroTime(t0.Add(time.Second)),
		Series: &corev1.EventSeries{LastObservedTime: metav1.NewMicroTime(t0.Add(2 * time.Second))}}
	if got := lastSeen(e); !got.Equal(t0.Add(2 * time.Second)) {
		t.Errorf("lastSeen = %v, want the series' %v", got, t0.Add(2*time.Second))
	}
}
