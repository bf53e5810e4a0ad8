package cluster

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/resources"
	"lin.dev/lin-operator/test/harness"
)

// timeline records, from a watch of an Installation's pods, when each pod
// that existed at the start began to go and when each pod made after it
// became Ready.
type timeline struct {
	mu    sync.Mutex
	start time.Time
	// old are the pods there at the start, by UID.
	old map[types.UID]bool
	// gone is when each old pod got its deletion timestamp (or vanished).
	gone map[types.UID]time.Time
	// ready is when each new pod first reported Ready.
	ready map[types.UID]time.Time
	// shard is the shard of every pod seen.
	shard map[types.UID]string
}

// watchPods starts a timeline of the pods of Installation name in ns, which
// ends with the test.
func watchPods(t *testing.T, ns, name string) *timeline {
	t.Helper()
	sel := metav1.ListOptions{LabelSelector: resources.LabelInstallation + "=" + name}
	pods, err := testEnv.Client.CoreV1().Pods(ns).List(context.Background(), sel)
	if err != nil {
		t.Fatal(err)
	}
	tl := &timeline{start: time.Now(), old: map[types.UID]bool{}, gone: map[types.UID]time.Time{},
		ready: map[types.UID]time.Time{}, shard: map[types.UID]string{}}
	for _, p := range pods.Items {
		tl.old[p.UID], tl.shard[p.UID] = true, p.Labels[resources.LabelShard]
	}
	sel.ResourceVersion = pods.ResourceVersion
	w, err := testEnv.Client.CoreV1().Pods(ns).Watch(context.Background(), sel)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	go func() {
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok {
				tl.record(ev.Type, p, time.Now())
			}
		}
	}()
	return tl
}

// record notes what one watch event says of a pod.
func (tl *timeline) record(typ watch.EventType, p *corev1.Pod, at time.Time) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.shard[p.UID] = p.Labels[resources.LabelShard]
	_, seen := tl.gone[p.UID]
	if tl.old[p.UID] && !seen && (typ == watch.Deleted || p.DeletionTimestamp != nil) {
		tl.gone[p.UID] = at
	}
	_, seen = tl.ready[p.UID]
	if !tl.old[p.UID] && !seen && p.DeletionTimestamp == nil && podReady(p) {
		tl.ready[p.UID] = at
	}
}

// podReady reports whether a pod's Ready condition is True.
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// interval is when one shard replaced pods: from its first old pod going to
// its last new pod becoming Ready.
type interval struct {
	from, to time.Time
	replaced int
}

// intervals returns the interval of each shard that replaced pods, by shard.
func (tl *timeline) intervals() map[string]*interval {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	out := map[string]*interval{}
	get := func(shard string) *interval {
		if out[shard] == nil {
			out[shard] = &interval{}
		}
		return out[shard]
	}
	for uid, at := range tl.gone {
		iv := get(tl.shard[uid])
		if iv.from.IsZero() || at.Before(iv.from) {
			iv.from = at
		}
		iv.replaced++
	}
	for uid, at := range tl.ready {
		if iv := get(tl.shard[uid]); at.After(iv.to) {
			iv.to = at
		}
	}
	return out
}

// describe formats the intervals for the test log, from the timeline's start.
func (tl *timeline) describe(ivs map[string]*interval, shards int) string {
	var b strings.Builder
	for s := range shards {
		if iv := ivs[fmt.Sprint(s)]; iv != nil {
			fmt.Fprintf(&b, "shard %d: %d pods replaced from %v to %v; ", s, iv.replaced,
				iv.from.Sub(tl.start).Round(time.Millisecond), iv.to.Sub(tl.start).Round(time.Millisecond))
		} else {
			fmt.Fprintf(&b, "shard %d: nothing replaced; ", s)
		}
	}
	return b.String()
}

// waitRolledOut waits until the Installation is Ready at its generation with
// every pod updated.
func waitRolledOut(t *testing.T, ns, name string, pods int32) {
	t.Helper()
	harness.Eventually(t, timeout, "the rollout to complete", func(ctx context.Context) (bool, error) {
		inst, err := linClient.LinV1().Installations(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st := inst.Status
		if st.ObservedGeneration != inst.Generation || st.Phase != linv1.PhaseReady || st.UpdatedReplicas != pods || st.Rollout != nil {
			return false, fmt.Errorf("phase %s, %d of %d pods updated, rollout %+v", st.Phase, st.UpdatedReplicas, pods, st.Rollout)
		}
		return true, nil
	})
}

func TestShardByShardReplacesTheShardsOneAfterTheOther(t *testing.T) {
	ns := harness.Namespace(t, testEnv.Client)
	harness.StartOperator(t, testEnv.Config, harness.Options{Namespaces: []string{ns}})
	createReady(t, newInstallation(ns, "demo", 3, 2, ""))
	tl := watchPods(t, ns, "demo")

	edit(t, ns, "demo", func(i *linv1.Installation) { i.Spec.Config = map[string]string{"app.conf": "level=debug\n"} })
	waitRolledOut(t, ns, "demo", 6)
	ivs := tl.intervals()
	t.Logf("ShardByShard: %s", tl.describe(ivs, 3))
	for s := range 3 {
		iv := ivs[fmt.Sprint(s)]
		if iv == nil || iv.replaced != 2 || iv.to.IsZero() {
			t.Fatalf("shard %d did not replace both its pods: %+v", s, iv)
		}
		if next := ivs[fmt.Sprint(s+1)]; next != nil && next.from.Before(iv.to) {
			t.Errorf("shard %d began replacing pods %v before shard %d had its new pods Ready",
				s+1, iv.to.Sub(next.from), s)
		}
	}
}

func TestAllShardsReplacesTheShardsTogether(t *testing.T) {
	ns := harness.Namespace(t, testEnv.Client)
	harness.StartOperator(t, testEnv.Config, harness.Options{Namespaces: []string{ns}})
	inst := newInstallation(ns, "demo", 3, 2, "")
	inst.Spec.Rollout.Strategy = linv1.RolloutAllShards
	createReady(t, inst)
	tl := watchPods(t, ns, "demo")

	edit(t, ns, "demo", func(i *linv1.Installation) { i.Spec.Image = "example.com/app:2" })
	waitRolledOut(t, ns, "demo", 6)
	ivs := tl.intervals()
	t.Logf("AllShards: %s", tl.describe(ivs, 3))
	var lastStart, firstEnd time.Time
	for s := range 3 {
		iv := ivs[fmt.Sprint(s)]
		if iv == nil || iv.replaced != 2 {
			t.Fatalf("shard %d did not replace both its pods: %+v", s, iv)
		}
		if iv.from.After(lastStart) {
			lastStart = iv.from
		}
		if firstEnd.IsZero() || iv.to.Before(firstEnd) {
			firstEnd = iv.to
		}
	}
	if !lastStart.Before(firstEnd) {
		t.Errorf("the shards did not roll together: the last began %v after the first was done", lastStart.Sub(firstEnd))
	}
}

func TestAStalledShardHoldsTheRolloutUntilTheSpecIsFixed(t *testing.T) {
	ns := harness.Namespace(t, testEnv.Client)
	harness.StartOperator(t, testEnv.Config, harness.Options{Namespaces: []string{ns}})
	inst := newInstallation(ns, "demo", 3, 2, "")
	inst.Spec.Rollout.ProgressDeadlineSeconds = ptr.To[int32](5)
	createReady(t, inst)
	before := podUIDs(t, ns, "demo")

	// New pods that no node can take: shard 0's never become Ready.
	edit(t, ns, "demo", func(i *linv1.Installation) { i.Spec.Pod.NodeSelector = map[string]string{"lin.dev/test": "nowhere"} })
	stalledInst := waitCondition(t, ns, "demo", linv1.ConditionProgressing, metav1.ConditionFalse, "RolloutStalled")
	if r := stalledInst.Status.Rollout; r == nil || r.Shard != 0 {
		t.Errorf("status.rollout = %+v, want shard 0", r)
	}
	t.Logf("stalled: %s", apimeta.FindStatusCondition(stalledInst.Status.Conditions, linv1.ConditionProgressing).Message)
	waitEvent(t, ns, "demo", "RolloutStalled")

	// Scaling while it holds reaches every shard and replaces no pod.
	edit(t, ns, "demo", func(i *linv1.Installation) { i.Spec.Replicas = ptr.To[int32](3) })
	harness.Eventually(t, timeout, "every shard to scale to 3", func(ctx context.Context) (bool, error) {
		for s := range 3 {
			sts, err := testEnv.Client.AppsV1().StatefulSets(ns).Get(ctx, fmt.Sprintf("demo-%d", s), metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if *sts.Spec.Replicas != 3 {
				return false, fmt.Errorf("%s wants %d pods", sts.Name, *sts.Spec.Replicas)
			}
		}
		return true, nil
	})
	now := podUIDs(t, ns, "demo")
	for name, uid := range before {
		if !strings.HasPrefix(name, "demo-0-") && now[name] != uid {
			t.Errorf("pod %s of a waiting shard was replaced", name)
		}
	}

	// The fix reaches the stalled shard, and the rollout completes.
	edit(t, ns, "demo", func(i *linv1.Installation) { i.Spec.Pod.NodeSelector = nil })
	waitRolledOut(t, ns, "demo", 9)
	after := podUIDs(t, ns, "demo")
	for name, uid := range before {
		if !strings.HasPrefix(name, "demo-0-") && after[name] != uid {
			t.Errorf("pod %s of a shard that kept its template was replaced", name)
		}
	}
}

// waitCondition waits until the Installation has the condition typ with
// status and reason, and returns it.
func waitCondition(t *testing.T, ns, name, typ string, status metav1.ConditionStatus, reason string) *linv1.Installation {
	t.Helper()
	var inst *linv1.Installation
	harness.Eventually(t, timeout, fmt.Sprintf("%s=%s/%s", typ, status, reason), func(ctx context.Context) (bool, error) {
		var err error
		if inst, err = linClient.LinV1().Installations(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		c := apimeta.FindStatusCondition(inst.Status.Conditions, typ)
		if c == nil || c.Status != status || c.Reason != reason {
			return false, fmt.Errorf("%s is %+v", typ, c)
		}
		return true, nil
	})
	return inst
}

// waitEvent waits for an event with reason on the Installation.
func waitEvent(t *testing.T, ns, name, reason string) {
	t.Helper()
	harness.Eventually(t, timeout, "a "+reason+" event", func(ctx context.Context) (bool, error) {
		events, err := testEnv.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.name=" + name + ",reason=" + reason})
		if err != nil {
			return false, err
		}
		return len(events.Items) > 0, nil
	})
}

// waitReplaced waits until the timeline shows, for each shard in want, that
// many old pods gone and as many new ones Ready.
func waitReplaced(t *testing.T, tl *timeline, want map[string]int) {
	t.Helper()
	harness.Eventually(t, timeout, "the pods to be replaced", func(context.Context) (bool, error) {
		tl.mu.Lock()
		ready := map[string]int{}
		for uid := range tl.ready {
			ready[tl.shard[uid]]++
		}
		tl.mu.Unlock()
		ivs := tl.intervals()
		for shard, n := range want {
			if iv := ivs[shard]; iv == nil || iv.replaced != n || ready[shard] != n {
				return false, fmt.Errorf("shard %s: %+v, %d new pods Ready, want %d of each", shard, iv, ready[shard], n)
			}
		}
		return true, nil
	})
}

// TestARestartRollsTheShardsOneAfterTheOther annotates an Installation as
// `kubectl lin restart` does: every shard's pods are replaced, a shard only
// once the one before has its new pods Ready, with no change to the spec.
// Then a restart of shard 1 alone replaces its pods and no other.
func TestARestartRollsTheShardsOneAfterTheOther(t *testing.T) {
	ns := harness.Namespace(t, testEnv.Client)
	harness.StartOperator(t, testEnv.Config, harness.Options{Namespaces: []string{ns}})
	created := createReady(t, newInstallation(ns, "demo", 3, 2, ""))
	tl := watchPods(t, ns, "demo")

	edit(t, ns, "demo", func(i *linv1.Installation) {
		i.Annotations = map[string]string{resources.AnnotationRestartedAt: "2026-12-05T10:00:00.000Z"}
	})
	waitReplaced(t, tl, map[string]int{"0": 2, "1": 2, "2": 2})
	waitRolledOut(t, ns, "demo", 6)
	ivs := tl.intervals()
	t.Logf("restart: %s", tl.describe(ivs, 3))
	for s := range 2 {
		if next := ivs[fmt.Sprint(s+1)]; next.from.Before(ivs[fmt.Sprint(s)].to) {
			t.Errorf("shard %d began replacing pods %v before shard %d had its new pods Ready", s+1, ivs[fmt.Sprint(s)].to.Sub(next.from), s)
		}
	}
	inst, err := linClient.LinV1().Installations(ns).Get(t.Context(), "demo", metav1.GetOptions{})
	if err != nil || inst.Generation != created.Generation {
		t.Errorf("the restart changed the spec: generation %d -> %d (%v)", created.Generation, inst.Generation, err)
	}

	tl = watchPods(t, ns, "demo")
	edit(t, ns, "demo", func(i *linv1.Installation) {
		i.Annotations[resources.ShardRestartAnnotation(1)] = "2026-12-05T11:00:00.000Z"
	})
	waitReplaced(t, tl, map[string]int{"1": 2})
	waitRolledOut(t, ns, "demo", 6)
	ivs = tl.intervals()
	t.Logf("restart of shard 1: %s", tl.describe(ivs, 3))
	if ivs["0"] != nil || ivs["2"] != nil {
		t.Errorf("a restart of shard 1 replaced pods of other shards: %s", tl.describe(ivs, 3))
	}
}
