package apps

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/controller"
	"lin.dev/lin-operator/test/harness"
	"lin.dev/lin-operator/test/node"
)

// shardAppName is examples/shardapp.yaml's name.
const shardAppName = "shardapp"

// startShardApp creates examples/shardapp.yaml, changed by edit, in ns,
// where an operator runs, and returns it once Ready.
func startShardApp(t *testing.T, ns string, edit func(*linv1.Installation)) *linv1.Installation {
	t.Helper()
	began := time.Now()
	createExample(t, ns, "shardapp.yaml", edit)
	inst := waitRolledOut(t, ns, shardAppName)
	t.Logf("examples/shardapp.yaml: %d shards of %d, %s pods Ready %v after the create",
		len(inst.Status.Shards), *inst.Spec.Replicas, inst.Status.Ready, time.Since(began).Round(100*time.Millisecond))
	return inst
}

// shardClient is a client of the shardapp in ns through its client Service.
func shardClient(t *testing.T, ns string) shardKV {
	return shardKV{base: serviceURL(t, ns, shardAppName, 8080), client: newHTTPClient()}
}

// operatorIn runs the operator on a namespace of its own and returns it.
func operatorIn(t *testing.T) string {
	t.Helper()
	ns := harness.Namespace(t, cluster.Client)
	harness.StartOperator(t, cluster.Config, harness.Options{Namespaces: []string{ns}})
	return ns
}

// shardOrder fails the test unless the shards were replaced in order, each
// after the one before had all its pods Ready again, and logs when each
// shard's rollout began and ended.
func shardOrder(t *testing.T, events []podEvent) {
	t.Helper()
	type span struct{ first, last time.Duration }
	spans := map[int]*span{}
	for _, e := range events {
		parts := strings.Split(e.Pod, "-")
		shard, _ := strconv.Atoi(parts[len(parts)-2])
		s, ok := spans[shard]
		if !ok {
			s = &span{first: e.At}
			spans[shard] = s
		}
		s.last = e.At
	}
	var b strings.Builder
	for shard := 0; spans[shard] != nil; shard++ {
		fmt.Fprintf(&b, " shard %d +%.1fs..+%.1fs;", shard, spans[shard].first.Seconds(), spans[shard].last.Seconds())
		if next := spans[shard+1]; next != nil && next.first < spans[shard].last {
			t.Errorf("shard %d began at +%v, before shard %d was done at +%v", shard+1, next.first, shard, spans[shard].last)
		}
	}
	t.Logf("shard by shard:%s", b.String())
}

// TestShardAppRollingChangesUnderLoad changes the config, then the image,
// of the sharded application of 3 shards of 2 while a client writes through
// the client Service: the shards roll one after the other (ShardByShard),
// each pod after the one before is Ready, and the client sees no failure
// and loses nothing.
func TestShardAppRollingChangesUnderLoad(t *testing.T) {
	ns := operatorIn(t)
	inst := startShardApp(t, ns, nil)
	l := startLoad(t, shardClient(t, ns), "roll")
	waitAcknowledged(t, l, 20)
	shardOrder(t, rollChange(t, inst, "shardapp config change", func(i *linv1.Installation) {
		i.Spec.Config = map[string]string{"rollout-note": "a file whose change rolls the pods"}
	}))
	shardOrder(t, rollChange(t, inst, "shardapp image change", func(i *linv1.Installation) { i.Spec.Image = node.ShardAppImageV2 }))
	l.finish(t, "shardapp client through both rollouts")
}

// condition returns the Installation's condition of type typ, or nil.
func condition(t *testing.T, ns, name, typ string) *metav1.Condition {
	t.Helper()
	inst, err := lin().LinV1().Installations(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return meta.FindStatusCondition(inst.Status.Conditions, typ)
}

// TestShardAppCrashingReleaseStallsOneShard rolls out an image whose process
// exits at once, under OrderedReady, the default pod management policy. The
// first shard's first rolled pod crash-loops for real, the rollout holds
// there and, after progressDeadlineSeconds, the Installation says
// RolloutStalled; every other pod keeps running and the client sees no
// failure. Going back to the good image heals it: the operator deletes the
// crash-looping pod, which the StatefulSet would wait for forever, and the
// Installation is Ready again with no other pod restarted.
func TestShardAppCrashingReleaseStallsOneShard(t *testing.T) {
	const deadline = 20
	ns := operatorIn(t)
	startShardApp(t, ns, func(i *linv1.Installation) {
		i.Spec.Rollout.ProgressDeadlineSeconds = ptr.To[int32](deadline)
		i.Spec.PodManagementPolicy = linv1.OrderedReadyPodManagement
	})
	l := startLoad(t, shardClient(t, ns), "crash")
	waitAcknowledged(t, l, 20)
	before := runs(t, ns, shardAppName)

	began := time.Now()
	harness.EditInstallation(t, lin(), ns, shardAppName, func(i *linv1.Installation) { i.Spec.Image = node.CrashImage })
	harness.Eventually(t, timeout, "Progressing=False, RolloutStalled", func(context.Context) (bool, error) {
		c := condition(t, ns, shardAppName, linv1.ConditionProgressing)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != controller.ReasonRolloutStalled {
			return false, fmt.Errorf("Progressing is %+v", c)
		}
		return true, nil
	})
	stalled := time.Since(began)
	c := condition(t, ns, shardAppName, linv1.ConditionProgressing)
	t.Logf("crash: RolloutStalled %v after the image change (progressDeadlineSeconds %d): %s",
		stalled.Round(100*time.Millisecond), deadline, c.Message)
	// status.rollout.since is stamped to the second.
	if early := deadline*time.Second - time.Second; stalled < early {
		t.Errorf("RolloutStalled %v after the image change, before the deadline of %ds", stalled, deadline)
	}

	// StatefulSets replace the highest ordinal first.
	// Between two back-offs the container runs for a moment.
	rolled := shardAppName + "-0-1"
	harness.Eventually(t, timeout, rolled+" in CrashLoopBackOff", func(context.Context) (bool, error) {
		p := pods(t, ns, shardAppName)[rolled]
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff" {
				t.Logf("crash: %s in CrashLoopBackOff after %d restarts", rolled, cs.RestartCount)
				return true, nil
			}
		}
		return false, fmt.Errorf("containers: %+v", p.Status.ContainerStatuses)
	})
	crashing := runs(t, ns, shardAppName)
	if changed := changedRuns(before, crashing); len(changed) != 1 || !strings.HasPrefix(changed[0], rolled+" ") {
		t.Errorf("the stalled rollout must change only %s, changed: %v", rolled, changed)
	}

	reverted := time.Now()
	harness.EditInstallation(t, lin(), ns, shardAppName, func(i *linv1.Installation) { i.Spec.Image = node.ShardAppImage })
	// While the pod is replaced, and for minReadySeconds after.
	harness.Eventually(t, timeout, "Progressing=True, RollingOut, after the image went back", func(context.Context) (bool, error) {
		c := condition(t, ns, shardAppName, linv1.ConditionProgressing)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != "RollingOut" {
			return false, fmt.Errorf("Progressing is %+v", c)
		}
		return true, nil
	})
	waitRolledOut(t, ns, shardAppName)
	t.Logf("crash: Ready again %v after the image went back", time.Since(reverted).Round(100*time.Millisecond))
	after := runs(t, ns, shardAppName)
	if changed := changedRuns(before, after); len(changed) != 1 || !strings.HasPrefix(changed[0], rolled+" ") {
		t.Errorf("going back to the image the pods ran must restart only %s, changed: %v", rolled, changed)
	}
	if after[rolled].UID == crashing[rolled].UID {
		t.Errorf("%s is still the crash-looping pod", rolled)
	}
	forcedRollbackOf(t, ns, rolled)
	l.finish(t, "shardapp client through the crash-looping release")
}

// shardStatus is GET /status of examples/shardapp.
type shardStatus struct {
	Pod     string `json:"pod"`
	Shard   int    `json:"shard"`
	Shards  []int  `json:"shards"`
	Entries int    `json:"entries"`
}

// statusOf asks a pod of the shardapp for its view of the cluster.
func statusOf(ctx context.Context, t *testing.T, ns, pod string) (shardStatus, error) {
	var st shardStatus
	data, err := do(ctx, newHTTPClient(), http.MethodGet, fmt.Sprintf("http://%s:8080/status", podIP(t, ns, pod)), nil)
	if err != nil {
		return st, err
	}
	return st, json.Unmarshal(data, &st)
}

// waitTopology waits until every pod of before sees shards shards of
// replicas each in its mounted topology.json, and returns how long that
// took after since.
func waitTopology(t *testing.T, ns string, before map[string]containerRun, shards, replicas int, since time.Time) time.Duration {
	t.Helper()
	want := slices.Repeat([]int{replicas}, shards)
	harness.Eventually(t, timeout, fmt.Sprintf("every pod to see %d shards of %d", shards, replicas), func(ctx context.Context) (bool, error) {
		for pod := range before {
			st, err := statusOf(ctx, t, ns, pod)
			if err != nil {
				return false, err
			}
			if !slices.Equal(st.Shards, want) {
				return false, fmt.Errorf("%s sees %v", pod, st.Shards)
			}
		}
		return true, nil
	})
	return time.Since(since)
}

// TestShardAppScalingRestartsNothing grows the replicas, then the shards,
// of the sharded application while a client writes: no running pod
// restarts, each reads the new topology.json from its mounted file within
// kubelet's sync period, and the new shard takes its keys.
func TestShardAppScalingRestartsNothing(t *testing.T) {
	ns := operatorIn(t)
	startShardApp(t, ns, func(i *linv1.Installation) { i.Spec.Shards, i.Spec.Replicas = ptr.To[int32](2), ptr.To[int32](2) })
	l := startLoad(t, shardClient(t, ns), "scale")
	waitAcknowledged(t, l, 20)
	before := runs(t, ns, shardAppName)

	for _, step := range []struct {
		what             string
		shards, replicas int
		edit             func(*linv1.Installation)
	}{
		{"2x2 to 2x3", 2, 3, func(i *linv1.Installation) { i.Spec.Replicas = ptr.To[int32](3) }},
		{"2x3 to 3x3", 3, 3, func(i *linv1.Installation) { i.Spec.Shards = ptr.To[int32](3) }},
	} {
		began := time.Now()
		harness.EditInstallation(t, lin(), ns, shardAppName, step.edit)
		seen := waitTopology(t, ns, before, step.shards, step.replicas, began)
		waitRolledOut(t, ns, shardAppName)
		t.Logf("scale: %s: every running pod read the new topology %v after the edit (kubelet syncs every 5 s); "+
			"the new pods Ready and available (minReadySeconds %d) after %v", step.what,
			seen.Round(100*time.Millisecond), minReadySeconds, time.Since(began).Round(100*time.Millisecond))
	}
	if changed := changedRuns(before, runs(t, ns, shardAppName)); len(changed) > 0 {
		t.Errorf("scaling restarted pods: %v", changed)
	}

	// The new shard's pods hold the keys written to it since.
	harness.Eventually(t, timeout, "the new shard to take keys", func(ctx context.Context) (bool, error) {
		for o := range 3 {
			pod := fmt.Sprintf("%s-2-%d", shardAppName, o)
			st, err := statusOf(ctx, t, ns, pod)
			if err != nil {
				return false, err
			}
			if st.Entries == 0 {
				return false, fmt.Errorf("%s holds no keys", pod)
			}
		}
		return true, nil
	})
	l.finish(t, "shardapp client through the scaling")
}
