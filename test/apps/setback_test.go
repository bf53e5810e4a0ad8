package apps

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/controller"
	"lin.dev/lin-operator/test/harness"
	"lin.dev/lin-operator/test/node"
)

// badRelease is a change of the spec whose rolled pod never becomes Ready.
type badRelease struct {
	name string
	edit func(*linv1.Installation)
	// failing reports whether a pod fails as this release makes it.
	failing func(corev1.Pod) bool
}

// The bad releases, one for each way a pod can be not Ready.
var (
	crashLooping = badRelease{"a crash-looping release", func(i *linv1.Installation) { i.Spec.Image = node.CrashImage },
		waitingFor("CrashLoopBackOff")}
	neverReady = badRelease{"a release whose readiness never passes",
		func(i *linv1.Installation) { i.Spec.ReadinessProbe.HTTPGet.Path = "/never-ready" }, runningNotReady}
	missingImage = badRelease{"an image that does not exist",
		func(i *linv1.Installation) { i.Spec.Image = "lin.dev/shardapp:missing" }, waitingFor("ErrImagePull", "ImagePullBackOff")}
	unschedulable = badRelease{"a pod no node can take", func(i *linv1.Installation) {
		i.Spec.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1000")
	}, notScheduled}
)

// waitingFor reports whether a pod has a container waiting for one of reasons.
func waitingFor(reasons ...string) func(corev1.Pod) bool {
	return func(p corev1.Pod) bool {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Waiting != nil && slices.Contains(reasons, cs.State.Waiting.Reason) {
				return true
			}
		}
		return false
	}
}

// runningNotReady reports whether a pod's containers have run for a few
// readiness probes (one a second) and it is not Ready.
func runningNotReady(p corev1.Pod) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running == nil || time.Since(cs.State.Running.StartedAt.Time) < 3*time.Second {
			return false
		}
	}
	return len(p.Status.ContainerStatuses) > 0 && !podReady(&p)
}

// notScheduled reports whether the scheduler found no node for a pod.
func notScheduled(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

// TestBadReleasesSetBackHeal rolls out bad releases to the sharded
// application, 1 shard of 2, under each pod management policy, while a
// client writes, and sets each back: the pod the bad release left behind
// is replaced, by the operator where the StatefulSet controller would wait
// for it to become Ready (OrderedReady), and the Installation is Ready again
// with the other replica never restarted and the client losing nothing.
func TestBadReleasesSetBackHeal(t *testing.T) {
	for _, tc := range []struct {
		policy linv1.PodManagementPolicy
		cases  [][]badRelease
	}{
		{linv1.OrderedReadyPodManagement, [][]badRelease{{neverReady}, {missingImage}, {unschedulable}, {crashLooping, missingImage}}},
		{linv1.ParallelPodManagement, [][]badRelease{{crashLooping}}},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			ns := operatorIn(t)
			startShardApp(t, ns, func(i *linv1.Installation) {
				i.Spec.Shards, i.Spec.Replicas, i.Spec.PodManagementPolicy = ptr.To[int32](1), ptr.To[int32](2), tc.policy
			})
			l := startLoad(t, shardClient(t, ns), "setback")
			waitAcknowledged(t, l, 20)
			for _, releases := range tc.cases {
				setBack(t, ns, tc.policy, releases)
			}
			l.finish(t, fmt.Sprintf("setback: %s: shardapp client through every release set back", tc.policy))
		})
	}
	t.Run("a first release that never ran, fixed", firstReleaseFixed)
}

// firstReleaseFixed creates the sharded application, 1 shard of 2 under
// OrderedReady, with an image that does not exist, and then fixes the
// image: its first pod, which never ran and is of the StatefulSet's current
// revision, is replaced by the operator, which the StatefulSet controller
// would wait for forever, and the Installation becomes Ready.
func firstReleaseFixed(t *testing.T) {
	ns := operatorIn(t)
	createExample(t, ns, "shardapp.yaml", func(i *linv1.Installation) {
		i.Spec.Shards, i.Spec.Replicas, i.Spec.PodManagementPolicy = ptr.To[int32](1), ptr.To[int32](2), linv1.OrderedReadyPodManagement
		missingImage.edit(i)
	})
	first := shardAppName + "-0-0"
	harness.Eventually(t, timeout, first+" failing to pull its image", func(context.Context) (bool, error) {
		if p := pods(t, ns, shardAppName)[first]; !missingImage.failing(p) {
			return false, fmt.Errorf("%s: %+v", first, p.Status)
		}
		return true, nil
	})
	fixed := time.Now()
	harness.EditInstallation(t, lin(), ns, shardAppName, func(i *linv1.Installation) { i.Spec.Image = node.ShardAppImage })
	waitRolledOut(t, ns, shardAppName)
	took := time.Since(fixed)
	deleted := forcedRollbackOf(t, ns, first)
	t.Logf("setback: OrderedReady: a first release that never ran: Ready %v after the image was fixed (minReadySeconds %d, both pods made in turn); the operator's %s events:\n  %s",
		took.Round(100*time.Millisecond), minReadySeconds, controller.ReasonForcedRollback, strings.Join(deleted, "\n  "))
}

// setBack rolls out releases one on top of the other, each until the pod it
// rolled fails as it should, then sets the spec back to what it was, and
// checks that the Installation heals with only the failing pods replaced and
// that the operator raised an event for each pod it deleted.
func setBack(t *testing.T, ns string, policy linv1.PodManagementPolicy, releases []badRelease) {
	t.Helper()
	var names []string
	for _, r := range releases {
		names = append(names, r.name)
	}
	what := fmt.Sprintf("setback: %s: %s", policy, strings.Join(names, ", then "))
	good, err := lin().LinV1().Installations(ns).Get(context.Background(), shardAppName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before, events := runs(t, ns, shardAppName), forcedRollbacks(t, ns)
	// StatefulSets replace the highest ordinal first.
	rolled, kept := shardAppName+"-0-1", shardAppName+"-0-0"
	seen := map[string]bool{before[rolled].UID: true}
	var stale []string // the revisions of the pods the bad releases left behind
	for _, r := range releases {
		harness.EditInstallation(t, lin(), ns, shardAppName, r.edit)
		harness.Eventually(t, timeout, fmt.Sprintf("%s: %s rolled and failing", what, rolled), func(context.Context) (bool, error) {
			p, ok := pods(t, ns, shardAppName)[rolled]
			if !ok || seen[string(p.UID)] || !r.failing(p) {
				return false, fmt.Errorf("%s: %+v", rolled, p.Status)
			}
			seen[string(p.UID)] = true
			stale = append(stale, p.Labels[appsv1.ControllerRevisionHashLabelKey])
			return true, nil
		})
	}
	reverted := time.Now()
	harness.EditInstallation(t, lin(), ns, shardAppName, func(i *linv1.Installation) { i.Spec = good.Spec })
	waitRolledOut(t, ns, shardAppName)
	took := time.Since(reverted)

	after := runs(t, ns, shardAppName)
	if seen[after[rolled].UID] {
		t.Errorf("%s: %s is still a pod of a bad release", what, rolled)
	}
	if after[kept] != before[kept] {
		t.Errorf("%s: %s restarted: %+v -> %+v", what, kept, before[kept], after[kept])
	}
	// The recorder counts an event that repeats on the event before.
	var deleted []string
	for m, n := range forcedRollbacks(t, ns) {
		if n > events[m] {
			deleted = append(deleted, m)
		}
	}
	for _, rev := range stale {
		if !slices.ContainsFunc(deleted, func(m string) bool { return strings.Contains(m, "of revision "+rev+",") }) &&
			policy == linv1.OrderedReadyPodManagement {
			t.Errorf("%s: no %s event for %s of revision %s; the new events: %q", what, controller.ReasonForcedRollback, rolled, rev, deleted)
		}
	}
	t.Logf("%s: Ready again %v after the spec was set back (minReadySeconds %d); the operator's new %s events: %d\n  %s",
		what, took.Round(100*time.Millisecond), minReadySeconds, controller.ReasonForcedRollback, len(deleted), strings.Join(deleted, "\n  "))
}

// forcedRollbackOf fails the test unless the operator's ForcedRollback
// events on the shardapp Installation in ns are one, of pod, and returns
// their messages.
func forcedRollbackOf(t *testing.T, ns, pod string) []string {
	t.Helper()
	deleted := slices.Collect(maps.Keys(forcedRollbacks(t, ns)))
	if len(deleted) != 1 || !strings.HasPrefix(deleted[0], "Deleted pod "+pod+",") {
		t.Errorf("the operator's %s events are %q, want one, of %s", controller.ReasonForcedRollback, deleted, pod)
	}
	return deleted
}

// forcedRollbacks returns how many times each message of the operator's
// ForcedRollback events on the shardapp Installation in ns was recorded.
func forcedRollbacks(t *testing.T, ns string) map[string]int32 {
	t.Helper()
	list, err := cluster.Client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.kind=Installation,involvedObject.name=" + shardAppName + ",reason=" + controller.ReasonForcedRollback,
	})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int32{}
	for _, e := range list.Items {
		out[e.Message] += max(e.Count, 1)
	}
	return out
}
