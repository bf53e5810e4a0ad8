package controller

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
)

// withStatus returns a copy of sts whose controller reports the given counts
// for the current generation.
func withStatus(sts *appsv1.StatefulSet, replicas, ready, updated int32, rolled bool) *appsv1.StatefulSet {
	s := sts.DeepCopy()
	s.Generation = 1
	s.Status = appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: replicas, ReadyReplicas: ready,
		UpdatedReplicas: updated, CurrentRevision: "r1", UpdateRevision: "r1"}
	if !rolled {
		s.Status.UpdateRevision = "r2"
	}
	return s
}

func TestComputeStatusPhases(t *testing.T) {
	stopped := newInstallation()
	stopped.Spec.Stop = true
	paused := newInstallation()
	paused.Spec.Paused = true
	progressing := newInstallation()
	progressing.Status.Phase = linv1.PhasePending

	for _, tc := range []struct {
		name      string
		inst      *linv1.Installation
		live      func(sets []*appsv1.StatefulSet) []*appsv1.StatefulSet
		fail      outcome
		wantPhase linv1.Phase
		wantReady string
		ready     metav1.ConditionStatus
		progress  metav1.ConditionStatus
	}{
		{"no StatefulSet yet", newInstallation(),
			func([]*appsv1.StatefulSet) []*appsv1.StatefulSet { return make([]*appsv1.StatefulSet, 2) },
			outcome{}, linv1.PhasePending, "0/4", metav1.ConditionFalse, metav1.ConditionTrue},
		{"some pods ready", progressing,
			func(s []*appsv1.StatefulSet) []*appsv1.StatefulSet {
				return []*appsv1.StatefulSet{withStatus(s[0], 2, 2, 2, true), withStatus(s[1], 1, 0, 1, true)}
			},
			outcome{}, linv1.PhaseProgressing, "2/4", metav1.ConditionFalse, metav1.ConditionTrue},
		{"rolling update", newInstallation(),
			func(s []*appsv1.StatefulSet) []*appsv1.StatefulSet {
				return []*appsv1.StatefulSet{withStatus(s[0], 2, 2, 1, false), withStatus(s[1], 2, 2, 2, true)}
			},
			outcome{}, linv1.PhaseProgressing, "4/4", metav1.ConditionFalse, metav1.ConditionTrue},
		{"all ready", newInstallation(),
			func(s []*appsv1.StatefulSet) []*appsv1.StatefulSet {
				return []*appsv1.StatefulSet{withStatus(s[0], 2, 2, 2, true), withStatus(s[1], 2, 2, 2, true)}
			},
			outcome{}, linv1.PhaseReady, "4/4", metav1.ConditionTrue, metav1.ConditionFalse},
		{"stopped", stopped,
			func(s []*appsv1.StatefulSet) []*appsv1.StatefulSet {
				return []*appsv1.StatefulSet{withStatus(s[0], 0, 0, 0, true), withStatus(s[1], 0, 0, 0, true)}
			},
			outcome{}, linv1.PhaseStopped, "0/0", metav1.ConditionFalse, metav1.ConditionFalse},
		{"stopping", stopped,
			func(s []*appsv1.StatefulSet) []*appsv1.StatefulSet {
				return []*appsv1.StatefulSet{withStatus(s[0], 1, 1, 1, true), withStatus(s[1], 0, 0, 0, true)}
			},
			outcome{}, linv1.PhaseProgressing, "1/0", metav1.ConditionFalse, metav1.ConditionTrue},
		{"paused", paused,
			func(s []*appsv1.StatefulSet) []*appsv1.StatefulSet { return s },
			outcome{}, linv1.PhasePaused, "0/4", metav1.ConditionFalse, metav1.ConditionFalse},
		{"degraded", newInstallation(),
			func(s []*appsv1.StatefulSet) []*appsv1.StatefulSet {
				return []*appsv1.StatefulSet{withStatus(s[0], 2, 2, 2, true), withStatus(s[1], 2, 2, 2, true)}
			},
			newOutcome(nil, conflictError("ConfigMap", "demo-config")),
			linv1.PhaseDegraded, "4/4", metav1.ConditionTrue, metav1.ConditionFalse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch := render(t, tc.inst)
			out := tc.fail
			out.desired = ch
			st := computeStatus(tc.inst, tc.live(ch.StatefulSets), out, clusterDomain, fixedNow)
			if st.Phase != tc.wantPhase || st.Ready != tc.wantReady {
				t.Errorf("phase %q ready %q, want %q %q", st.Phase, st.Ready, tc.wantPhase, tc.wantReady)
			}
			for typ, want := range map[string]metav1.ConditionStatus{
				linv1.ConditionReady: tc.ready, linv1.ConditionProgressing: tc.progress,
			} {
				if c := apimeta.FindStatusCondition(st.Conditions, typ); c == nil || c.Status != want || c.ObservedGeneration != 1 {
					t.Errorf("%s condition = %+v, want status %s", typ, c, want)
				}
			}
			wantDegraded := metav1.ConditionFalse
			if tc.fail.reason != "" {
				wantDegraded = metav1.ConditionTrue
			}
			if c := apimeta.FindStatusCondition(st.Conditions, linv1.ConditionDegraded); c == nil || c.Status != wantDegraded {
				t.Errorf("Degraded condition = %+v, want %s", c, wantDegraded)
			}
			if len(st.Shards) != 2 || st.Shards[1].StatefulSetName != "demo-1" {
				t.Errorf("shards = %+v", st.Shards)
			}
		})
	}
}

func TestComputeStatusMovesTransitionTimeOnlyOnChange(t *testing.T) {
	inst := newInstallation()
	ch := render(t, inst)
	ready := []*appsv1.StatefulSet{withStatus(ch.StatefulSets[0], 2, 2, 2, true), withStatus(ch.StatefulSets[1], 2, 2, 2, true)}
	notReady := []*appsv1.StatefulSet{withStatus(ch.StatefulSets[0], 2, 1, 2, true), ready[1]}

	inst.Status = computeStatus(inst, notReady, outcome{desired: ch}, clusterDomain, fixedNow)
	later := metav1.NewTime(fixedNow.Add(time.Minute))

	same := computeStatus(inst, notReady, outcome{desired: ch}, clusterDomain, later)
	if !equalStatus(inst.Status, same) {
		t.Errorf("status changed although nothing did:\n%+v\n%+v", inst.Status, same)
	}
	moved := computeStatus(inst, ready, outcome{desired: ch}, clusterDomain, later)
	c := apimeta.FindStatusCondition(moved.Conditions, linv1.ConditionReady)
	if c.Status != metav1.ConditionTrue || !c.LastTransitionTime.Equal(&later) {
		t.Errorf("Ready = %+v, want True at %v", c, later)
	}
	d := apimeta.FindStatusCondition(moved.Conditions, linv1.ConditionDegraded)
	if !d.LastTransitionTime.Equal(&fixedNow) {
		t.Errorf("Degraded moved to %v though its status stayed False", d.LastTransitionTime)
	}
	if moved.ConfigHash == "" || inst.Status.ConfigHash != "" {
		t.Errorf("configHash before rollout %q, after %q: want empty, then set", inst.Status.ConfigHash, moved.ConfigHash)
	}
}

func TestFirstStatusIsWhatTheFirstSyncWrites(t *testing.T) {
	f := newFixture(t)
	inst := newInstallation()
	f.installations = append(f.installations, inst)
	written := statusOf(t, f.run(inst, false)[0])

	desired := render(t, inst)
	var stored []*appsv1.StatefulSet
	for _, sts := range desired.StatefulSets {
		got, err := f.kubeClient.AppsV1().StatefulSets(sts.Namespace).Get(t.Context(), sts.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, got)
	}
	now := written.Conditions[0].LastTransitionTime
	if first := FirstStatus(inst, desired, stored, clusterDomain, now); !equality.Semantic.DeepEqual(first, written) {
		t.Errorf("FirstStatus = %+v\nthe first sync wrote %+v", first, written)
	}
}
