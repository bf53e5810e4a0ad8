package plugin

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/resources"
)

// update rewrites the golden files: go test ./pkg/plugin -update.
var update = flag.Bool("update", false, "rewrite the golden files")

// now is the moment every golden file is rendered at.
var now = time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)

// ago is the time d before now.
func ago(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }

// midRollout is a 3-shard Installation of 2 replicas rolling a new image:
// shard 0 is done, shard 1 has one new pod of two and its second not ready,
// shard 2 waits its turn.
func midRollout() *Snapshot {
	inst := &linv1.Installation{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "shop", UID: "inst", Generation: 4, CreationTimestamp: ago(3 * time.Hour),
			Annotations: map[string]string{resources.ShardRestartAnnotation(2): "2026-12-04T09:30:00.000Z"}},
		Spec: linv1.InstallationSpec{Image: "registry.example/app:2.1", Shards: ptr.To[int32](3), Replicas: ptr.To[int32](2),
			Ports: []linv1.InstallationPort{{Name: "http", ContainerPort: 8080}}},
		Status: linv1.InstallationStatus{
			ObservedGeneration: 4, Phase: linv1.PhaseProgressing, ReadyReplicas: 5, UpdatedReplicas: 2, Ready: "5/6",
			Endpoint: "demo.shop.svc.cluster.local",
			Rollout:  &linv1.RolloutStatus{Shard: 1, Since: ago(40 * time.Second)},
			Conditions: []metav1.Condition{
				{Type: linv1.ConditionReady, Status: metav1.ConditionFalse, Reason: "RollingOut", Message: "5 of 6 pods ready, 2 up to date", LastTransitionTime: ago(2 * time.Minute)},
				{Type: linv1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: "RollingOut", Message: "shard 1 of 3: 0 of 2 pods updated", LastTransitionTime: ago(2 * time.Minute)},
				{Type: linv1.ConditionDegraded, Status: metav1.ConditionFalse, Reason: "Reconciled", LastTransitionTime: ago(3 * time.Hour)},
			},
		},
	}
	s := &Snapshot{Installation: inst}
	for shard := range int32(3) {
		label := strconv.Itoa(int(shard))
		name := resources.StatefulSetName(inst, shard)
		current, update, updated, ready := name+"-7d9f", name+"-5c4b", int32(2), int32(2)
		switch shard {
		case 1:
			// Its pod 1 is left behind by a bad release before.
			updated, ready = 0, 1
		case 2:
			update, updated = current, 2
		}
		if shard == 0 {
			current = update
		}
		s.StatefulSets = append(s.StatefulSets, appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID("sts-" + label), Labels: resources.ShardLabels(inst, shard)},
			Spec:       appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2)},
			Status: appsv1.StatefulSetStatus{Replicas: 2, ReadyReplicas: ready, UpdatedReplicas: updated,
				CurrentRevision: current, UpdateRevision: update},
		})
		allowed := int32(1)
		if shard == 1 {
			allowed = 0
		}
		s.Budgets = append(s.Budgets, policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: resources.ShardLabels(inst, shard)},
			Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed},
		})
		for ordinal := range 2 {
			pod := fmt.Sprintf("%s-%d", name, ordinal)
			claim := "data-" + pod
			isReady := !(shard == 1 && ordinal == 1)
			status := corev1.ConditionTrue
			if !isReady {
				status = corev1.ConditionFalse
			}
			revision := s.StatefulSets[shard].Status.UpdateRevision
			switch {
			case shard == 1 && ordinal == 1:
				revision = name + "-3e1a"
			case shard == 1:
				revision = s.StatefulSets[shard].Status.CurrentRevision
			}
			labels := resources.ShardLabels(inst, shard)
			labels[appsv1.ControllerRevisionHashLabelKey] = revision
			age := 3 * time.Hour
			if shard == 0 || (shard == 1 && ordinal == 1) {
				age = time.Duration(30+ordinal*60) * time.Second
			}
			s.Pods = append(s.Pods, corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: "shop", UID: types.UID(pod), Labels: labels, CreationTimestamp: ago(age)},
				Spec: corev1.PodSpec{NodeName: "node-" + strconv.Itoa(ordinal+1), Volumes: []corev1.Volume{{Name: "data",
					VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}},
				Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}},
					ContainerStatuses: []corev1.ContainerStatus{{Name: "app", RestartCount: int32(shard)}}},
			})
			s.Claims = append(s.Claims, corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: "shop"},
				Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound,
					Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}},
			})
		}
	}
	s.Services = []corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "shop"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.12",
			Ports: []corev1.ServicePort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "demo-headless", Namespace: "shop"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "None",
			Ports: []corev1.ServicePort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}}}},
	}
	s.Events = []corev1.Event{
		{InvolvedObject: corev1.ObjectReference{Kind: "Installation", Name: "demo"}, Type: corev1.EventTypeNormal, Reason: "Updated",
			Message: "Updated StatefulSets demo-0, demo-1, demo-2", LastTimestamp: ago(2 * time.Minute)},
		{InvolvedObject: corev1.ObjectReference{Kind: "StatefulSet", Name: "demo-1"}, Type: corev1.EventTypeNormal, Reason: "SuccessfulDelete",
			Message: "delete Pod demo-1-1 in StatefulSet demo-1 successful", LastTimestamp: ago(61 * time.Second)},
		{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "demo-1-1"}, Type: corev1.EventTypeWarning, Reason: "Unhealthy",
			Message: "Readiness probe failed: HTTP probe failed with statuscode: 503", LastTimestamp: ago(5 * time.Second)},
	}
	return s
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./pkg/plugin -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test ./pkg/plugin -update rewrites it); got:\n%s", path, got)
	}
}

func TestStatusOfA3ShardInstallationMidRollout(t *testing.T) {
	for _, color := range []bool{false, true} {
		var out bytes.Buffer
		if err := RenderStatus(&out, midRollout(), now, color); err != nil {
			t.Fatal(err)
		}
		name := "status.txt"
		if color {
			name = "status-color.txt"
		}
		golden(t, name, out.Bytes())
		if !color && bytes.Contains(out.Bytes(), []byte("\x1b[")) {
			t.Error("the plain status holds colour escapes")
		}
	}
	// Colour changes no column: without its escapes, it is the plain text.
	var plain, colored bytes.Buffer
	if RenderStatus(&plain, midRollout(), now, false) != nil || RenderStatus(&colored, midRollout(), now, true) != nil {
		t.Fatal("rendering failed")
	}
	if got := escapes.ReplaceAllString(colored.String(), ""); got != plain.String() {
		t.Errorf("the coloured status, without its escapes, differs from the plain one:\n%s", got)
	}
}

func TestStatusOfAnInstallationNotReconciledYet(t *testing.T) {
	inst := &linv1.Installation{ObjectMeta: metav1.ObjectMeta{Name: "new", Namespace: "shop", Generation: 1},
		Spec: linv1.InstallationSpec{Image: "app:1", Paused: true}}
	var out bytes.Buffer
	if err := RenderStatus(&out, &Snapshot{Installation: inst}, now, false); err != nil {
		t.Fatal(err)
	}
	golden(t, "status-new.txt", out.Bytes())
}

func TestListSumsUpEachInstallation(t *testing.T) {
	rolling := midRollout().Installation
	degraded := rolling.DeepCopy()
	degraded.Name, degraded.Namespace, degraded.Status.Rollout = "broken", "other", nil
	degraded.Status.Phase = linv1.PhaseDegraded
	degraded.Status.Conditions = []metav1.Condition{{Type: linv1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: "PodsRefused",
		Message: "shard 0: 1 of 1 pods are missing;\nStatefulSet broken-0 cannot create them"}}
	ready := rolling.DeepCopy()
	ready.Name, ready.Status.Rollout, ready.Status.Phase, ready.Status.ReadyReplicas = "calm", nil, linv1.PhaseReady, 6
	ready.Status.Conditions = []metav1.Condition{{Type: linv1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Ready", Message: "6 of 6 pods ready and up to date"}}
	pending := rolling.DeepCopy()
	pending.Name, pending.Generation, pending.Status = "fresh", 1, linv1.InstallationStatus{}
	var out bytes.Buffer
	if err := RenderList(&out, []linv1.Installation{*ready, *rolling, *pending, *degraded}, now, true, false); err != nil {
		t.Fatal(err)
	}
	golden(t, "list.txt", out.Bytes())
}
