package controller

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	core "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

// A pod's state in a forced rollback table. One not Ready has not been
// since fixedNow.
type podAs struct {
	rev   string // its controller-revision-hash; "" for no pod at that ordinal
	ready bool
	gone  bool // being deleted
	soft  bool // not Ready only for its readiness: running, no container waiting
}

// The progress deadline of the tables, and the time they look at the pods:
// a minute after the failing ones turned not Ready.
const tableDeadline = 10 * time.Minute

var tableNow = fixedNow.Add(time.Minute)

// The revisions of the tables: the StatefulSet's current and update
// revision, and two that a rollout left behind.
const (
	revA = "demo-0-aaa"
	revB = "demo-0-bbb"
	revC = "demo-0-ccc"
)

// shardWith returns a shard's StatefulSet at current and update revision,
// under OrderedReady, and a pod per entry of as, controlled by it.
func shardWith(current, update string, maxUnavailable *intstr.IntOrString, as ...podAs) (*appsv1.StatefulSet, []*corev1.Pod) {
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-0", Namespace: "ns", UID: "uid-sts", Generation: 2},
		Spec:       appsv1.StatefulSetSpec{Replicas: ptr.To(int32(len(as))), PodManagementPolicy: appsv1.OrderedReadyPodManagement},
		Status:     appsv1.StatefulSetStatus{ObservedGeneration: 2, CurrentRevision: current, UpdateRevision: update},
	}
	if maxUnavailable != nil {
		sts.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{MaxUnavailable: maxUnavailable}
	}
	var pods []*corev1.Pod
	for i, a := range as {
		if a.rev != "" {
			pods = append(pods, podOf(sts, i, a))
		}
	}
	return sts, pods
}

// podOf returns the pod of sts at ordinal i, as a describes it.
func podOf(sts *appsv1.StatefulSet, i int, a podAs) *corev1.Pod {
	name := fmt.Sprintf("%s-%d", sts.Name, i)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: sts.Namespace, UID: types.UID("uid-" + name), ResourceVersion: "7",
			Labels:          map[string]string{appsv1.ControllerRevisionHashLabelKey: a.rev},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(sts, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady,
			Status: corev1.ConditionFalse, LastTransitionTime: fixedNow}}},
	}
	switch {
	case a.ready:
		p.Status.Conditions[0].Status = corev1.ConditionTrue
	case a.soft:
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	default:
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", RestartCount: 4,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s"}}}}
	}
	if a.gone {
		p.DeletionTimestamp = &fixedNow
	}
	return p
}

func TestStalePods(t *testing.T) {
	ready := func(rev string) podAs { return podAs{rev: rev, ready: true} }
	failing := func(rev string) podAs { return podAs{rev: rev} }
	two := ptr.To(intstr.FromInt32(2))
	const ordered, parallel = appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement
	for _, tc := range []struct {
		name            string
		policy          appsv1.PodManagementPolicyType
		current, update string
		maxUnavailable  *intstr.IntOrString
		pods            []podAs
		want            []string
	}{
		{"set back: the crash-looping pod of the bad release", ordered, revA, revA, nil, []podAs{ready(revA), failing(revB)}, []string{"demo-0-1"}},
		{"rolling on top of a bad release", ordered, revA, revC, nil, []podAs{ready(revA), failing(revB)}, []string{"demo-0-1"}},
		{"a Ready pod of an old revision is the StatefulSet's to replace", ordered, revA, revA, nil, []podAs{ready(revA), ready(revB)}, nil},
		{"a failing pod of the update revision is the rollout's own", ordered, revA, revB, nil, []podAs{ready(revA), failing(revB)}, nil},
		{"a first release that never ran, fixed: the pods after it were never made", ordered, revA, revB, nil,
			[]podAs{failing(revA), {}, {}}, []string{"demo-0-0"}},
		{"a failing pod of the current revision in a rollout", ordered, revA, revB, nil, []podAs{failing(revA), ready(revA)}, []string{"demo-0-0"}},
		{"OrderedReady: one at a time, the lowest first, which is in the way", ordered, revA, revA, nil,
			[]podAs{ready(revA), failing(revB), failing(revB)}, []string{"demo-0-1"}},
		{"Parallel: one at a time, the highest first", parallel, revA, revA, nil,
			[]podAs{ready(revA), failing(revB), failing(revB)}, []string{"demo-0-2"}},
		{"as many as maxUnavailable", ordered, revA, revA, two, []podAs{failing(revB), failing(revB), ready(revA)}, []string{"demo-0-0", "demo-0-1"}},
		{"a percentage of maxUnavailable rounds down, to at least one", ordered, revA, revA, ptr.To(intstr.FromString("10%")),
			[]podAs{failing(revB), failing(revB), ready(revA)}, []string{"demo-0-0"}},
		{"a replaced pod not Ready yet takes the room", ordered, revA, revA, nil, []podAs{failing(revA), failing(revB)}, nil},
		{"a pod being deleted takes the room", ordered, revA, revA, nil, []podAs{failing(revB), {rev: revA, ready: true, gone: true}}, nil},
		{"OrderedReady: a missing pod being made takes the room", ordered, revA, revA, nil, []podAs{ready(revA), {}, failing(revB)}, nil},
		{"OrderedReady: a missing pod held behind the failing one does not", ordered, revA, revA, nil,
			[]podAs{failing(revB), {}}, []string{"demo-0-0"}},
		{"Parallel: a missing pod is being made and takes the room", parallel, revA, revA, nil, []podAs{failing(revB), {}}, nil},
		{"the one being deleted is not deleted again", ordered, revA, revA, nil, []podAs{ready(revA), {rev: revB, gone: true}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sts, pods := shardWith(tc.current, tc.update, tc.maxUnavailable, tc.pods...)
			sts.Spec.PodManagementPolicy = tc.policy
			var got []string
			stale, _ := stalePods(sts, pods, func(*corev1.Pod) bool { return false }, tableDeadline, tableNow)
			for _, s := range stale {
				got = append(got, s.pod.Name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("stale pods %v, want %v", got, tc.want)
			}
		})
	}
}

func TestStalePodsWaitForTheStatefulSetsStatusAndItsOwnPods(t *testing.T) {
	stale := []podAs{{rev: revA, ready: true}, {rev: revB}}
	none := func(*corev1.Pod) bool { return false }
	count := func(sts *appsv1.StatefulSet, pods []*corev1.Pod, deleting func(*corev1.Pod) bool) int {
		got, _ := stalePods(sts, pods, deleting, tableDeadline, tableNow)
		return len(got)
	}
	sts, pods := shardWith(revA, revA, nil, stale...)
	if n := count(sts, pods, none); n != 1 {
		t.Fatalf("the case itself: %d stale pods, want 1", n)
	}
	sts.Generation = 3 // its status describes the spec before
	if n := count(sts, pods, none); n != 0 {
		t.Errorf("with a status of an older generation: %d stale pods, want none", n)
	}
	sts, pods = shardWith(revA, revA, nil, stale...)
	if n := count(sts, pods, func(p *corev1.Pod) bool { return p.Name == "demo-0-1" }); n != 0 {
		t.Errorf("with its deletion on the way: %d stale pods, want none", n)
	}
	other, _ := shardWith(revA, revA, nil, stale...)
	other.UID = "uid-another"
	if n := count(other, pods, none); n != 0 {
		t.Errorf("with pods another StatefulSet controls: %d stale pods, want none", n)
	}
	sts, pods = shardWith(revA, revA, nil, stale...)
	sts.Spec.Replicas = ptr.To[int32](1) // demo-0-1 is being scaled away
	if n := count(sts, pods, none); n != 0 {
		t.Errorf("with the pod beyond spec.replicas: %d stale pods, want none", n)
	}
}

func TestStalePodsWaitForAPodToSettle(t *testing.T) {
	none := func(*corev1.Pod) bool { return false }
	for _, tc := range []struct {
		name            string
		current, update string
		pod             podAs
		notReadyFor     time.Duration
		want            bool
		recheck         time.Duration
	}{
		{"left behind, not Ready a moment: maybe a pod made before the cache shows its revision", revA, revA, podAs{rev: revB}, 4 * time.Second, false, 6 * time.Second},
		{"left behind, not Ready for the settle time", revA, revA, podAs{rev: revB}, settleTime, true, 0},
		{"left behind, only its readiness failing, settled", revA, revA, podAs{rev: revB, soft: true}, settleTime, true, 0},
		{"current revision, crash-looping, settled", revA, revB, podAs{rev: revA}, settleTime, true, 0},
		{"current revision, only its readiness failing: the rollout may yet reach it", revA, revB, podAs{rev: revA, soft: true}, time.Minute, false, tableDeadline - time.Minute},
		{"current revision, only its readiness failing past the progress deadline", revA, revB, podAs{rev: revA, soft: true}, tableDeadline, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sts, pods := shardWith(tc.current, tc.update, nil, podAs{rev: tc.current, ready: true}, tc.pod)
			stale, recheck := stalePods(sts, pods, none, tableDeadline, fixedNow.Add(tc.notReadyFor))
			if got := len(stale) == 1; got != tc.want || recheck != tc.recheck {
				t.Errorf("stale: %v, look again after %v; want %v, %v", got, recheck, tc.want, tc.recheck)
			}
		})
	}
}

func TestFailureSaysWhy(t *testing.T) {
	waiting := func(reason string) corev1.PodStatus {
		return corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "app",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}}}
	}
	for _, tc := range []struct {
		name   string
		status corev1.PodStatus
		want   string
		hard   bool
	}{
		{"crash loop", waiting("CrashLoopBackOff"), "container app is waiting: CrashLoopBackOff", true},
		{"no image", waiting("ErrImagePull"), "container app is waiting: ErrImagePull", true},
		{"exited", corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "app",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3, Reason: "Error"}}}}},
			"container app exited with code 3 (Error)", true},
		{"unschedulable", corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled,
			Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/1 nodes are available: 1 Insufficient memory."}}},
			"pod is Pending: Unschedulable: 0/1 nodes are available: 1 Insufficient memory.", true},
		{"readiness failing", corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady,
			Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: "containers with unready status: [app]"}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}},
			"pod is Running, not Ready: containers with unready status: [app]", false},
		{"still starting", waiting("ContainerCreating"), "pod is Pending, not Ready", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, p := range []*corev1.Pod{{Status: tc.status}, slimPod(&corev1.Pod{Status: tc.status})} {
				if got, hard := failure(p); got != tc.want || hard != tc.hard {
					t.Errorf("failure = %q, %v; want %q, %v", got, hard, tc.want, tc.hard)
				}
			}
		})
	}
}

// seedStalePod puts inst in sync in the fixture with its shard 0 set back to
// its current revision, and a pod of each revision: demo-0-0 of the current
// one, Ready, and demo-0-1 of the bad release, crash-looping.
func (f *fixture) seedStalePod() {
	f.seedStalePodIn(0)
}

// seedStalePodIn is seedStalePod with the pods in shard, and the other
// shards' pods all of their current revision and Ready.
func (f *fixture) seedStalePodIn(shard int) {
	inst := newInstallation()
	f.seedInSync(inst)
	for i, sts := range f.live.StatefulSets {
		sts.Status.CurrentRevision, sts.Status.UpdateRevision = revA, revA
		second := podAs{rev: revA, ready: true}
		if i == shard {
			second = podAs{rev: revB}
		}
		f.pods = append(f.pods, podOf(sts, 0, podAs{rev: revA, ready: true}), podOf(sts, 1, second))
	}
}

func TestSyncDeletesThePodThatARolloutLeftBehind(t *testing.T) {
	f := newFixture(t)
	f.seedStalePod()
	inst := f.installations[0]

	actions := f.run(inst, false)
	checkActions(t, actions, action{"delete", "pods", "", "demo-0-1"})
	pre := actions[0].(core.DeleteActionImpl).DeleteOptions.Preconditions
	if pre == nil || ptr.Deref(pre.UID, "") != "uid-demo-0-1" || ptr.Deref(pre.ResourceVersion, "") != "7" {
		t.Errorf("the deletion's preconditions are %+v, want the pod's UID and resourceVersion as cached", pre)
	}
	events := f.events()
	want := "Normal ForcedRollback Deleted pod demo-0-1, not Ready (container app is waiting: CrashLoopBackOff), of revision demo-0-bbb, " +
		"which is not the update revision of StatefulSet demo-0 (current demo-0-aaa, update demo-0-aaa): it is made again at the update revision"
	if !slices.Contains(events, want) {
		t.Errorf("events %q, want %q", events, want)
	}
	// The cache still shows the pod: it is not deleted twice.
	checkActions(t, f.rerun(inst, false))
}

func TestSyncDeletesThePodLeftBehindInAnyShard(t *testing.T) {
	// Under ShardByShard, the rollout that was set back may have reached
	// any shard.
	f := newFixture(t)
	f.seedStalePodIn(1)
	checkActions(t, f.run(f.installations[0], false), action{"delete", "pods", "", "demo-1-1"})
}

func TestSyncRetriesWhenTheStalePodChanged(t *testing.T) {
	f := newFixture(t)
	f.seedStalePod()
	inst := f.installations[0]
	f.controller = f.newController()
	f.kubeClient.PrependReactor("delete", "pods", func(core.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "demo-0-1", fmt.Errorf("precondition failed"))
	})
	checkActions(t, f.rerun(inst, false), action{"delete", "pods", "", "demo-0-1"})
	if events := f.events(); len(events) != 0 {
		t.Errorf("events %q, want none for a pod not deleted", events)
	}
	// A second later, not at once: the cache may take a while to show the
	// pod as it is now.
	recheck, err := f.controller.rollBack(t.Context(), inst, f.controller.listersFor("ns"), f.live.StatefulSets)
	if err != nil || recheck != time.Second {
		t.Errorf("rollBack = %v, %v; want a look again after 1s", recheck, err)
	}
}

func TestSyncLeavesStalePodsAlone(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(f *fixture)
	}{
		{"paused", func(f *fixture) { f.installations[0].Spec.Paused = true }},
		{"the sync rolls the shard itself", func(f *fixture) {
			f.installations[0].Spec.Image = "example.com/app:2"
			f.installations[0].Generation++
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.seedStalePod()
			tc.edit(f)
			for _, a := range summarize(f.run(f.installations[0], false)) {
				if a.resource == "pods" {
					t.Errorf("%v, want no pod deleted", a)
				}
			}
		})
	}
}

func TestPodHandlerWakesTheInstallationOfAStalePodOnly(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  podAs
		want bool
	}{
		{"not Ready, of another revision", podAs{rev: revB}, true},
		{"Ready", podAs{rev: revB, ready: true}, false},
		{"not Ready, of the update revision", podAs{rev: revA}, false},
		{"being deleted", podAs{rev: revB, gone: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.seedStalePod()
			c := f.newController()
			p := podOf(f.live.StatefulSets[0], 1, tc.pod)
			c.podHandler(c.listersFor("ns").statefulSets).OnAdd(p, false)
			if got := c.queue.Len() == 1; got != tc.want {
				t.Errorf("queued: %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPodHandlerWakesTheInstallationWhenAPodTurnsReadyWhilePodsAreReplaced(t *testing.T) {
	for _, tc := range []struct {
		name      string
		replacing bool
		want      bool
	}{
		{"while pods are replaced", true, true},
		{"with every pod on the update revision", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.seedStalePod()
			sts := f.live.StatefulSets[0]
			if tc.replacing {
				sts.Status.UpdatedReplicas = 1
			}
			c := f.newController()
			before, after := podOf(sts, 0, podAs{rev: revA}), podOf(sts, 0, podAs{rev: revA, ready: true})
			after.ResourceVersion = "8"
			c.podHandler(c.listersFor("ns").statefulSets).OnUpdate(before, after)
			if got := c.queue.Len() == 1; got != tc.want {
				t.Errorf("queued: %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSlimPodKeepsWhatTheRuleReads(t *testing.T) {
	sts, pods := shardWith(revA, revA, nil, podAs{rev: revA, ready: true}, podAs{rev: revB})
	p := pods[1]
	p.Spec = corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.com/app:1"}}}
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}
	p.CreationTimestamp = metav1.NewTime(fixedNow.Add(-time.Hour))
	cached, err := Transform(p.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	slim := cached.(*corev1.Pod)
	if len(slim.Spec.Containers) != 0 || slim.ManagedFields != nil {
		t.Errorf("the cached pod keeps its spec or managedFields: %+v", slim)
	}
	if !slim.CreationTimestamp.Equal(&p.CreationTimestamp) || !notReadySince(slim).Equal(notReadySince(p)) {
		t.Errorf("the slimmed pod was made %v and not Ready since %v; want %v and %v", slim.CreationTimestamp,
			notReadySince(slim), p.CreationTimestamp, notReadySince(p))
	}
	got, _ := stalePods(sts, []*corev1.Pod{pods[0], slim}, func(*corev1.Pod) bool { return false }, tableDeadline, tableNow)
	if len(got) != 1 || got[0].pod.UID != p.UID || got[0].pod.ResourceVersion != p.ResourceVersion || !strings.Contains(got[0].why, "CrashLoopBackOff") {
		t.Errorf("the slimmed pod gives %+v, want it stale as the whole pod is", got)
	}
}

func TestSyncWaitsForTheEchoOfItsStatefulSetWrite(t *testing.T) {
	f := newFixture(t)
	f.seedStalePod()
	inst := f.installations[0]
	f.controller = f.newController()
	// A write of the shard's StatefulSet was answered and its event has not
	// come: the cached status may describe the template before it.
	f.controller.echoes.written[f.live.StatefulSets[0].UID] = "99"
	checkActions(t, f.rerun(inst, false))
	// The echo, when it comes, wakes nothing (see echoes): the sync looks
	// again by itself.
	if recheck, err := f.controller.rollBack(t.Context(), inst, f.controller.listersFor("ns"), f.live.StatefulSets); err != nil || recheck != time.Second {
		t.Errorf("rollBack = %v, %v; want a look again after 1s", recheck, err)
	}
	delete(f.controller.echoes.written, f.live.StatefulSets[0].UID)
	checkActions(t, f.rerun(inst, false), action{"delete", "pods", "", "demo-0-1"})
}

func TestSyncDoesNotLookAgainAfterAStatefulSetWriteWhenEveryPodIsReady(t *testing.T) {
	f := newFixture(t)
	inst := newInstallation()
	f.seedInSync(inst)
	sts := f.live.StatefulSets[0]
	f.pods = []*corev1.Pod{podOf(sts, 0, podAs{rev: sts.Status.UpdateRevision, ready: true})}
	f.controller = f.newController()
	f.controller.echoes.written[sts.UID] = "99"
	if recheck, err := f.controller.rollBack(t.Context(), inst, f.controller.listersFor("ns"), f.live.StatefulSets); err != nil || recheck != 0 {
		t.Errorf("rollBack = %v, %v; want no second look: the echo of a write must cost no sync", recheck, err)
	}
}
