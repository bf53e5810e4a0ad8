package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/operator"
	"lin.dev/lin-operator/pkg/resources"
	"lin.dev/lin-operator/test/harness"
)

// setup makes a namespace and runs an operator watching only it.
func setup(t *testing.T, opts harness.Options) (string, *harness.Operator) {
	ns := harness.Namespace(t, testEnv.Client)
	opts.Namespaces = []string{ns}
	return ns, harness.StartOperator(t, testEnv.Config, opts)
}

// childWrites are the writes an operator made to anything but Installations
// and events.
func childWrites(counts map[string]int) map[string]int {
	w := harness.Writes(counts)
	for k := range w {
		if strings.HasSuffix(k, " installations/status") {
			delete(w, k)
		}
	}
	return w
}

func TestConfigAndImageEditsRollEveryPod(t *testing.T) {
	ns, _ := setup(t, harness.Options{})
	inst := createReady(t, newInstallation(ns, "demo", 2, 2, ""))
	log := watchStatus(t, ns, "demo")

	for _, tc := range []struct {
		what   string
		change func(*linv1.Installation)
	}{
		{"config", func(i *linv1.Installation) { i.Spec.Config["app.conf"] = "level=debug\n" }},
		{"image", func(i *linv1.Installation) { i.Spec.Image = "example.com/app:2" }},
	} {
		before := podUIDs(t, ns, "demo")
		edit(t, ns, "demo", tc.change)
		inst = waitPhase(t, ns, "demo", linv1.PhaseReady)
		after := podUIDs(t, ns, "demo")
		if n := replaced(before, after); n != 4 || len(after) != 4 {
			t.Errorf("%s edit: %d of %d pods replaced, %d pods now; want all 4 replaced", tc.what, n, len(before), len(after))
		}
		checkRollout(t, log.rollout(inst.Generation), 4)
	}
	if inst.Status.ConfigHash != resources.ConfigHash(inst) {
		t.Errorf("configHash = %q, want %q", inst.Status.ConfigHash, resources.ConfigHash(inst))
	}
}

func TestScalingRestartsNoRunningPod(t *testing.T) {
	ns, _ := setup(t, harness.Options{})
	createReady(t, newInstallation(ns, "demo", 1, 2, ""))
	before := podUIDs(t, ns, "demo")

	edit(t, ns, "demo", func(i *linv1.Installation) {
		i.Spec.Replicas = ptr.To[int32](3)
		i.Spec.Shards = ptr.To[int32](2)
	})
	inst := waitPhase(t, ns, "demo", linv1.PhaseReady)
	after := podUIDs(t, ns, "demo")
	if n := replaced(before, after); n != 0 || len(after) != 6 || inst.Status.Ready != "6/6" {
		t.Errorf("%d running pods restarted, pods now %v, ready %s; want none restarted and 6/6", n, names(after), inst.Status.Ready)
	}
	topo, err := testEnv.Client.CoreV1().ConfigMaps(ns).Get(context.Background(), "demo-topology", metav1.GetOptions{})
	if err != nil || strings.Count(topo.Data[resources.HostsFile], "\n") != 6 || !strings.Contains(topo.Data[resources.HostsFile], "demo-1-2.demo-headless") {
		t.Errorf("topology after scaling: %q, %v", topo.Data[resources.HostsFile], err)
	}
}

func TestFewerShardsFollowTheReclaimPolicy(t *testing.T) {
	ns, _ := setup(t, harness.Options{})
	harness.CreateVolumes(t, testEnv.Client, harness.Volumes{Prefix: ns, Count: 4})
	createReady(t, newInstallation(ns, "keep", 2, 1, linv1.ReclaimRetain))
	createReady(t, newInstallation(ns, "drop", 2, 1, linv1.ReclaimDelete))

	for _, name := range []string{"keep", "drop"} {
		edit(t, ns, name, func(i *linv1.Installation) { i.Spec.Shards = ptr.To[int32](1) })
	}
	for _, name := range []string{"keep", "drop"} {
		waitPhase(t, ns, name, linv1.PhaseReady)
		harness.Eventually(t, timeout, "StatefulSet "+name+"-1 to be deleted", func(ctx context.Context) (bool, error) {
			_, err := testEnv.Client.AppsV1().StatefulSets(ns).Get(ctx, name+"-1", metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	}
	harness.Eventually(t, timeout, "the removed shard's claim under Delete to go", func(ctx context.Context) (bool, error) {
		return !claimExists(t, ns, "data-drop-1-0"), nil
	})
	// The operator never deletes a claim itself: claims go only through the
	// StatefulSet controller, as the retention policy says. So what keeps
	// data-keep-1-0 is the policy the operator rendered, Retain, on the
	// StatefulSet it deleted; Delete there would have taken the claim.
	for _, name := range []string{"data-keep-0-0", "data-keep-1-0", "data-drop-0-0"} {
		if !claimExists(t, ns, name) {
			t.Errorf("claim %s is gone; want it kept", name)
		}
	}
}

func TestStopKeepsEverythingAndStartReusesTheClaims(t *testing.T) {
	ns, _ := setup(t, harness.Options{})
	harness.CreateVolumes(t, testEnv.Client, harness.Volumes{Prefix: ns, Count: 2})
	createReady(t, newInstallation(ns, "demo", 1, 2, linv1.ReclaimRetain))
	claims := claimUIDs(t, ns)

	edit(t, ns, "demo", func(i *linv1.Installation) { i.Spec.Stop = true })
	stopped := waitPhase(t, ns, "demo", linv1.PhaseStopped)
	if pods := podUIDs(t, ns, "demo"); len(pods) != 0 || stopped.Status.Replicas != 0 {
		t.Errorf("stopped, yet pods %v, status.replicas %d", names(pods), stopped.Status.Replicas)
	}
	ctx := context.Background()
	for _, name := range []string{"demo-config", "demo-topology"} {
		if _, err := testEnv.Client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("ConfigMap %s: %v", name, err)
		}
	}
	for _, name := range []string{"demo", "demo-headless"} {
		if _, err := testEnv.Client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("Service %s: %v", name, err)
		}
	}
	if got := claimUIDs(t, ns); !equalUIDs(got, claims) {
		t.Errorf("claims changed while stopped: %v, want %v", got, claims)
	}

	edit(t, ns, "demo", func(i *linv1.Installation) { i.Spec.Stop = false })
	waitPhase(t, ns, "demo", linv1.PhaseReady)
	if got := claimUIDs(t, ns); !equalUIDs(got, claims) {
		t.Errorf("claims after start: %v, want the old ones %v", got, claims)
	}
	pods, err := testEnv.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "lin.dev/installation=demo"})
	if err != nil || len(pods.Items) != 2 {
		t.Fatalf("pods after start: %v", err)
	}
	for _, p := range pods.Items {
		if want := "data-" + p.Name; volumeClaim(&p) != want {
			t.Errorf("pod %s mounts claim %q, want its old %q", p.Name, volumeClaim(&p), want)
		}
	}
}

// equalUIDs reports whether two name-to-UID maps are the same.
func equalUIDs(a, b map[string]types.UID) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestPausedMakesNoWritesToChildren(t *testing.T) {
	ns, op := setup(t, harness.Options{})
	createReady(t, newInstallation(ns, "demo", 1, 1, ""))
	edit(t, ns, "demo", func(i *linv1.Installation) { i.Spec.Paused = true })
	waitPhase(t, ns, "demo", linv1.PhasePaused)

	before := op.Requests.Snapshot()
	edit(t, ns, "demo", func(i *linv1.Installation) {
		i.Spec.Image = "example.com/app:2"
		i.Spec.Replicas = ptr.To[int32](2)
		i.Spec.Config["new.conf"] = "x"
	})
	harness.Eventually(t, timeout, "status to observe the edit", func(ctx context.Context) (bool, error) {
		inst, err := linClient.LinV1().Installations(ns).Get(ctx, "demo", metav1.GetOptions{})
		return err == nil && inst.Status.ObservedGeneration == inst.Generation && inst.Status.Phase == linv1.PhasePaused, err
	})
	// The deletion's event makes a reconcile: once it has run, the operator
	// has seen everything it must leave alone.
	seen := op.Reconciles.Snapshot(ns, "demo")
	ctx := context.Background()
	if err := testEnv.Client.CoreV1().ConfigMaps(ns).Delete(ctx, "demo-topology", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	op.Reconciles.WaitForMore(t, timeout, ns, seen, 1)
	if w := childWrites(op.Requests.Since(before)); len(w) > 0 {
		t.Errorf("paused, the operator wrote %s", harness.Format(w))
	}
	if _, err := testEnv.Client.CoreV1().ConfigMaps(ns).Get(ctx, "demo-topology", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("paused, the deleted topology ConfigMap came back: %v", err)
	}

	edit(t, ns, "demo", func(i *linv1.Installation) { i.Spec.Paused = false })
	inst := waitPhase(t, ns, "demo", linv1.PhaseReady)
	sts, err := testEnv.Client.AppsV1().StatefulSets(ns).Get(ctx, "demo-0", metav1.GetOptions{})
	if err != nil || *sts.Spec.Replicas != 2 || sts.Spec.Template.Spec.Containers[0].Image != "example.com/app:2" || inst.Status.Ready != "2/2" {
		t.Errorf("after unpausing: %v, ready %s", err, inst.Status.Ready)
	}
	if _, err := testEnv.Client.CoreV1().ConfigMaps(ns).Get(ctx, "demo-topology", metav1.GetOptions{}); err != nil {
		t.Errorf("after unpausing, no topology ConfigMap: %v", err)
	}
}

func TestImmutableFieldChangeRecreatesTheStatefulSetsOnce(t *testing.T) {
	ns, op := setup(t, harness.Options{})
	harness.CreateVolumes(t, testEnv.Client, harness.Volumes{Prefix: ns, Count: 4})
	inst := newInstallation(ns, "demo", 2, 2, linv1.ReclaimRetain)
	inst.Spec.PodManagementPolicy = linv1.OrderedReadyPodManagement
	createReady(t, inst)
	pods, claims := podUIDs(t, ns, "demo"), claimUIDs(t, ns)
	ctx := context.Background()
	oldSets, err := testEnv.Client.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	log := watchStatus(t, ns, "demo")
	before := op.Requests.Snapshot()

	edit(t, ns, "demo", func(i *linv1.Installation) { i.Spec.PodManagementPolicy = linv1.ParallelPodManagement })
	harness.Eventually(t, timeout, "both StatefulSets to be recreated Parallel", func(ctx context.Context) (bool, error) {
		sets, err := testEnv.Client.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(sets.Items) != 2 {
			return false, err
		}
		for i, s := range sets.Items {
			if s.UID == oldSets.Items[i].UID || s.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
				return false, nil
			}
		}
		return true, nil
	})
	waitPhase(t, ns, "demo", linv1.PhaseReady)
	// A loop would delete again on a later reconcile: make two and wait for them.
	seen := op.Reconciles.Snapshot(ns, "demo")
	for i := range 2 {
		harness.EditInstallation(t, linClient, ns, "demo", func(inst *linv1.Installation) {
			metav1.SetMetaDataAnnotation(&inst.ObjectMeta, "test.lin.dev/nudge", fmt.Sprint(i))
		})
	}
	op.Reconciles.WaitForMore(t, timeout, ns, seen, 2)
	if n := op.Requests.Since(before)["delete statefulsets"]; n != 2 {
		t.Errorf("the operator deleted StatefulSets %d times, want once each (2)", n)
	}
	if got := podUIDs(t, ns, "demo"); replaced(pods, got) != 0 || len(got) != 4 {
		t.Errorf("pods restarted: before %v, after %v", pods, got)
	}
	if got := claimUIDs(t, ns); !equalUIDs(got, claims) {
		t.Errorf("claims changed: %v, want %v", got, claims)
	}
	if !log.saw(linv1.ConditionProgressing, "Recreating") {
		t.Error("status never said Recreating")
	}
	events, err := testEnv.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=Recreating"})
	if err != nil || len(events.Items) != 2 {
		t.Errorf("Recreating events: %d, %v; want one per StatefulSet", len(events.Items), err)
	}
}

func TestRestartAndResyncMakeNoWritesAndRestartNoPod(t *testing.T) {
	ns, op := setup(t, harness.Options{})
	createReady(t, newInstallation(ns, "demo", 2, 2, ""))
	pods := podUIDs(t, ns, "demo")
	// The recorder sends events in the background: wait until the last of
	// the creation's events has arrived.
	events := settledEvents(t, ns)
	op.Stop()

	restarted := harness.StartOperator(t, testEnv.Config, harness.Options{Namespaces: []string{ns}, ResyncPeriod: time.Second})
	synced := restarted.Requests.Snapshot()
	// The first reconcile may come from the restart's own list; three more
	// are resyncs.
	restarted.Reconciles.WaitForMore(t, timeout, ns, restarted.Reconciles.Snapshot(ns, "demo"), 4)
	if w := harness.Writes(restarted.Requests.Since(synced)); len(w) > 0 {
		t.Errorf("after a restart and three resyncs, the operator wrote %s", harness.Format(w))
	}
	if got := podUIDs(t, ns, "demo"); replaced(pods, got) != 0 {
		t.Errorf("pods restarted: before %v, after %v", pods, got)
	}
	if after := operatorEvents(t, ns); after != events {
		t.Errorf("the operator's events grew from %d to %d over the restart and resyncs", events, after)
	}
}

// operatorEvents counts the events the operator recorded in ns.
func operatorEvents(t *testing.T, ns string) int {
	t.Helper()
	list, err := testEnv.Client.CoreV1().Events(ns).List(context.Background(),
		metav1.ListOptions{FieldSelector: "source=" + operator.Component})
	if err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}

// settledEvents waits until the operator's events in ns stop growing for a
// second, and returns their count.
func settledEvents(t *testing.T, ns string) int {
	t.Helper()
	last, stable := -1, 0
	harness.Eventually(t, timeout, "the operator's events to settle", func(context.Context) (bool, error) {
		n := operatorEvents(t, ns)
		if n == last {
			stable++
		} else {
			last, stable = n, 0
		}
		return stable >= 10, nil // a second without a new one, at 100ms a poll
	})
	return last
}

func TestOneUnreconcilableInstallationDoesNotHoldBackTwentyGoodOnes(t *testing.T) {
	ns, op := setup(t, harness.Options{})
	ctx := context.Background()
	bad := newInstallation(ns, "bad", 1, 1, "")
	bad.Spec.Config = map[string]string{"big.bin": strings.Repeat("x", resources.MaxConfigMapSize+1)}
	if _, err := linClient.LinV1().Installations(ns).Create(ctx, bad, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := range 20 {
		inst := newInstallation(ns, "good-"+string(rune('a'+i)), 1, 1, "")
		if _, err := linClient.LinV1().Installations(ns).Create(ctx, inst, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 20 {
		waitPhase(t, ns, "good-"+string(rune('a'+i)), linv1.PhaseReady)
	}
	t.Logf("20 good Installations Ready after %s beside a Degraded one", time.Since(start).Round(time.Millisecond))

	got := waitPhase(t, ns, "bad", linv1.PhaseDegraded)
	c := apimeta.FindStatusCondition(got.Status.Conditions, linv1.ConditionDegraded)
	if c == nil || c.Reason != "InvalidSpec" || !strings.Contains(c.Message, "spec.config") {
		t.Errorf("Degraded condition = %+v, want InvalidSpec naming spec.config", c)
	}
	for _, kind := range []string{"ConfigMap", "StatefulSet"} {
		var err error
		if kind == "ConfigMap" {
			_, err = testEnv.Client.CoreV1().ConfigMaps(ns).Get(ctx, "bad-config", metav1.GetOptions{})
		} else {
			_, err = testEnv.Client.AppsV1().StatefulSets(ns).Get(ctx, "bad-0", metav1.GetOptions{})
		}
		if !apierrors.IsNotFound(err) {
			t.Errorf("%s of the unreconcilable Installation exists: %v", kind, err)
		}
	}
	// An InvalidSpec sync writes nothing but its status, so writes cannot
	// show a loop: its reconciles can. It has one, for its creation: the
	// event of its own status write is an echo, which wakes no sync. The
	// workqueue's backoff (5 ms, doubling) would have retried it about ten
	// times by now.
	op.Reconciles.WaitForMore(t, timeout, ns, map[string]int{"bad": 0}, 1)
	if n := op.Reconciles.Count(ns, "bad"); n > 2 {
		t.Errorf("a permanent failure is retried: %d reconciles in the %s since its creation", n, time.Since(start).Round(time.Millisecond))
	}
}
