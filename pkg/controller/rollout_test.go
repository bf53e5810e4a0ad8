package controller

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/resources"
)

// shardAs is a shard's live StatefulSet in a rollout table: whether it was
// written from the desired spec, and whether it has settled.
type shardAs struct{ current, settled bool }

var (
	done    = &shardAs{current: true, settled: true}   // rolled out to the desired spec
	rolling = &shardAs{current: true, settled: false}  // replacing its pods with it
	old     = &shardAs{current: false, settled: true}  // serving the old template
	broken  = &shardAs{current: false, settled: false} // not Ready on an old template
)

// liveShard renders a live StatefulSet as the table row describes it.
func liveShard(desired *appsv1.StatefulSet, as *shardAs) *appsv1.StatefulSet {
	if as == nil {
		return nil
	}
	l := desired.DeepCopy()
	if !as.current {
		l.Annotations[resources.AnnotationSpecHash] = "older"
	}
	l.Generation = 1
	l.Status = appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 2,
		CurrentRevision: "r1", UpdateRevision: "r1"}
	if !as.settled {
		l.Status.UpdateRevision, l.Status.ReadyReplicas = "r2", 1
	}
	l.Status.AvailableReplicas = l.Status.ReadyReplicas
	return l
}

func TestPlanRollout(t *testing.T) {
	for _, tc := range []struct {
		name     string
		strategy linv1.RolloutStrategy
		live     []*shardAs
		proceed  string
		rolling  int
	}{
		{"in sync", "", []*shardAs{done, done, done}, "yyy", -1},
		{"new Installation", "", []*shardAs{nil, nil, nil}, "yyy", 0},
		{"an edit starts with shard 0", "", []*shardAs{old, old, old}, "ynn", 0},
		{"shard 0 rolling, the others wait", "", []*shardAs{rolling, old, old}, "ynn", 0},
		{"shard 0 done, shard 1 next", "", []*shardAs{done, old, old}, "yyn", 1},
		{"shard 1 rolling", "", []*shardAs{done, rolling, old}, "yyn", 1},
		{"last shard", "", []*shardAs{done, done, old}, "yyy", 2},
		{"an edit while shard 1 rolls: shard 1 takes it, shard 0 waits", "", []*shardAs{old, broken, old}, "nyn", 1},
		{"a broken shard gets the fix first", "", []*shardAs{old, old, broken}, "nny", 2},
		{"a new shard is made at once", "", []*shardAs{rolling, old, nil}, "yny", 0},
		{"AllShards", linv1.RolloutAllShards, []*shardAs{old, old, old}, "yyy", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst := newInstallation()
			inst.Spec.Shards = ptr.To(int32(len(tc.live)))
			desired := render(t, inst).StatefulSets
			live := make([]*appsv1.StatefulSet, len(desired))
			for i := range desired {
				live[i] = liveShard(desired[i], tc.live[i])
			}
			p := planRollout(tc.strategy, desired, live)
			got := ""
			for _, ok := range p.proceed {
				got += map[bool]string{true: "y", false: "n"}[ok]
			}
			if got != tc.proceed || p.rolling != tc.rolling {
				t.Errorf("proceed %s, rolling %d; want %s, %d", got, p.rolling, tc.proceed, tc.rolling)
			}
		})
	}
}

// TestShardWithMinReadySecondsSettlesWhenAvailable: with a minReadySeconds,
// a shard whose pods are all Ready is not settled until they are available,
// so the rollout does not go on to the next shard before that.
func TestShardWithMinReadySecondsSettlesWhenAvailable(t *testing.T) {
	inst := newInstallation()
	inst.Spec.Shards = ptr.To[int32](2)
	inst.Spec.Rollout.MinReadySeconds = 10
	desired := render(t, inst).StatefulSets
	first := liveShard(desired[0], done)
	first.Status.AvailableReplicas = 1
	live := []*appsv1.StatefulSet{first, liveShard(desired[1], old)}
	if p := planRollout("", desired, live); p.proceed[1] || p.rolling != 0 {
		t.Errorf("shard 0 Ready but 1 of 2 pods available: proceed %v, rolling %d; want shard 1 to wait", p.proceed, p.rolling)
	}
	first.Status.AvailableReplicas = 2
	if p := planRollout("", desired, live); !p.proceed[1] || p.rolling != 1 {
		t.Errorf("shard 0 available: proceed %v, rolling %d; want shard 1 to go", p.proceed, p.rolling)
	}
	if got := desired[0].Spec.MinReadySeconds; got != 10 {
		t.Errorf("the StatefulSet's minReadySeconds is %d, want spec.rollout.minReadySeconds, 10", got)
	}
}

func TestRolloutStatusKeepsItsClockForOneShardAndGeneration(t *testing.T) {
	then, now := metav1.NewTime(fixedNow.Add(-time.Minute)), fixedNow
	inst := newInstallation()
	inst.Status = linv1.InstallationStatus{ObservedGeneration: 1, Rollout: &linv1.RolloutStatus{Shard: 1, Since: then}}
	for _, tc := range []struct {
		rolling    int
		generation int64
		want       *linv1.RolloutStatus
	}{
		{-1, 1, nil},
		{1, 1, &linv1.RolloutStatus{Shard: 1, Since: then}},
		{2, 1, &linv1.RolloutStatus{Shard: 2, Since: now}},
		{1, 2, &linv1.RolloutStatus{Shard: 1, Since: now}},
	} {
		inst.Generation = tc.generation
		got := rolloutStatus(inst, tc.rolling, now)
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("shard %d at generation %d: %v, want %v", tc.rolling, tc.generation, got, tc.want)
		}
	}
	// A restart of the rolling shard asked after its rollout began starts
	// its clock again; one asked before, or of another shard, does not.
	inst.Generation = 1
	for _, tc := range []struct {
		annotations map[string]string
		want        *linv1.RolloutStatus
	}{
		{map[string]string{resources.ShardRestartAnnotation(1): fixedNow.Add(-time.Second).Format(time.RFC3339Nano)}, &linv1.RolloutStatus{Shard: 1, Since: now}},
		{map[string]string{resources.AnnotationRestartedAt: fixedNow.Add(-time.Hour).Format(time.RFC3339Nano)}, &linv1.RolloutStatus{Shard: 1, Since: then}},
		{map[string]string{resources.ShardRestartAnnotation(2): fixedNow.Format(time.RFC3339Nano)}, &linv1.RolloutStatus{Shard: 1, Since: then}},
	} {
		inst.Annotations = tc.annotations
		if got := rolloutStatus(inst, 1, now); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("restarts %v: %v, want %v", tc.annotations, got, tc.want)
		}
	}
	if s, left := stalled(&linv1.RolloutStatus{Since: then}, 30*time.Second, now); !s || left > 0 {
		t.Errorf("a minute into a 30s deadline: stalled %v, %v left", s, left)
	}
	if s, left := stalled(&linv1.RolloutStatus{Since: then}, 2*time.Minute, now); s || left != time.Minute {
		t.Errorf("a minute into a 2m deadline: stalled %v, %v left", s, left)
	}
}

func TestAChangeThatReplacesNoPodLetsTheHeldShardGoInASecondSync(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*linv1.Installation)
		again bool
	}{
		// Shard 0 settles as soon as it is written; no event but the echo
		// of that write would wake the sync that lets shard 1 go.
		{"the StatefulSets' labels", func(i *linv1.Installation) {
			i.Spec.StatefulSets = &linv1.ObjectLabels{Labels: map[string]string{"tier": "data"}}
		}, true},
		// Shard 0's pods are replaced: the StatefulSet controller's status
		// updates wake the syncs that follow.
		{"the pods' labels", func(i *linv1.Installation) { i.Spec.Pod.Labels = map[string]string{"team": "data"} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			inst := newInstallation()
			f.seedInSync(inst)
			tc.edit(inst)
			inst.Generation++
			f.run(inst, false)
			if got := f.controller.queue.Len(); got != map[bool]int{true: 1}[tc.again] {
				t.Errorf("the sync queued itself %d times, want %d", got, map[bool]int{true: 1}[tc.again])
			}
		})
	}
}
