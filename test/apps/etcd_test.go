package apps

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/test/harness"
	"lin.dev/lin-operator/test/node"
)

// etcdName is the name that examples/etcd.yaml's peer list assumes.
const etcdName = "etcd"

// startEtcd runs the operator on a namespace of its own, creates
// examples/etcd.yaml there, and returns the namespace once the three
// members are Ready.
func startEtcd(t *testing.T) (string, *linv1.Installation) {
	t.Helper()
	ns := harness.Namespace(t, cluster.Client)
	harness.StartOperator(t, cluster.Config, harness.Options{Namespaces: []string{ns}})
	began := time.Now()
	createExample(t, ns, "etcd.yaml", nil)
	inst := waitRolledOut(t, ns, etcdName)
	t.Logf("examples/etcd.yaml: %s members Ready, and available (minReadySeconds %d), %v after the create",
		inst.Status.Ready, minReadySeconds, time.Since(began).Round(100*time.Millisecond))
	return ns, inst
}

// etcdClient is a client of the etcd Installation in ns through its client
// Service.
func etcdClient(t *testing.T, ns string) etcdKV {
	return etcdKV{base: serviceURL(t, ns, etcdName, 2379), client: newHTTPClient()}
}

// waitAcknowledged waits until the load has n acknowledged writes.
func waitAcknowledged(t *testing.T, l *load, n int) {
	t.Helper()
	harness.Eventually(t, 30*time.Second, fmt.Sprintf("%d acknowledged writes", n), func(context.Context) (bool, error) {
		if got := l.acknowledged(); got < n {
			return false, fmt.Errorf("%d acknowledged", got)
		}
		return true, nil
	})
}

// rollChange makes one change to an Installation while its client writes,
// waits until every pod was replaced and the Installation is rolled out,
// checks that the pods went one at a time, and returns the timeline.
func rollChange(t *testing.T, inst *linv1.Installation, what string, edit func(*linv1.Installation)) []podEvent {
	t.Helper()
	before := runs(t, inst.Namespace, inst.Name)
	tl := startTimeline(t, inst)
	began := time.Now()
	harness.EditInstallation(t, lin(), inst.Namespace, inst.Name, edit)
	waitReplaced(t, inst.Namespace, inst.Name, before)
	t.Logf("%s: rolled out in %v", what, time.Since(began).Round(100*time.Millisecond))
	return replacedOneAtATime(t, tl, what)
}

// waitReplaced waits until every pod of before has been replaced and the
// Installation is rolled out.
func waitReplaced(t *testing.T, ns, name string, before map[string]containerRun) {
	t.Helper()
	harness.Eventually(t, timeout, "every pod of "+name+" to be replaced", func(context.Context) (bool, error) {
		after := runs(t, ns, name)
		for pod, r := range before {
			if after[pod].UID == r.UID {
				return false, fmt.Errorf("pod %s not replaced yet", pod)
			}
		}
		return true, nil
	})
	waitRolledOut(t, ns, name)
}

// TestEtcdRollingChangesUnderLoad changes the config, then the image, of a
// 3-member etcd while a client writes every 20-50 ms through the client
// Service: each member is replaced after the one before is Ready on etcd's
// /readyz, the quorum holds, and the client sees no failure and loses
// nothing.
func TestEtcdRollingChangesUnderLoad(t *testing.T) {
	ns, inst := startEtcd(t)
	l := startLoad(t, etcdClient(t, ns), "etcd")
	waitAcknowledged(t, l, 20)
	rollChange(t, inst, "etcd config change", func(i *linv1.Installation) {
		i.Spec.Config = map[string]string{"rollout-note": "a file whose change rolls the members"}
	})
	rollChange(t, inst, "etcd image change", func(i *linv1.Installation) { i.Spec.Image = node.EtcdImageRetagged })
	l.finish(t, "etcd client through both rollouts")
}

// etcdMembers returns etcd's member IDs by member name.
func etcdMembers(t *testing.T, base string) map[string]string {
	t.Helper()
	var resp struct {
		Members []struct {
			ID   string `json:"ID"`
			Name string `json:"name"`
		} `json:"members"`
	}
	harness.Eventually(t, 30*time.Second, "etcd's member list", func(ctx context.Context) (bool, error) {
		data, err := do(ctx, newHTTPClient(), http.MethodPost, base+"/v3/cluster/member/list", []byte("{}"))
		if err != nil {
			return false, err
		}
		return true, json.Unmarshal(data, &resp)
	})
	out := map[string]string{}
	for _, m := range resp.Members {
		out[m.Name] = m.ID
	}
	return out
}

// claimUIDs returns the UID of the claim of each pod of an Installation.
func claimUIDs(t *testing.T, ns, name string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for podName, p := range pods(t, ns, name) {
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim == nil {
				continue
			}
			pvc, err := cluster.Client.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), v.PersistentVolumeClaim.ClaimName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			out[podName] = string(pvc.UID)
		}
	}
	return out
}

// TestEtcdDrainKeepsQuorum drains the node under a 3-member etcd while a
// client writes: the PodDisruptionBudget lets exactly one member go, the
// drain waits on the others until its timeout, and the writes go on with
// two members. After the uncordon the member comes back on its own claim
// with its member ID, which it keeps only with the data it had, and catches
// up with what was written while it was away.
func TestEtcdDrainKeepsQuorum(t *testing.T) {
	ns, _ := startEtcd(t)
	client := etcdClient(t, ns)
	members, claims, before := etcdMembers(t, client.base), claimUIDs(t, ns, etcdName), runs(t, ns, etcdName)
	l := startLoad(t, client, "drain")
	waitAcknowledged(t, l, 20)

	t.Cleanup(func() {
		if _, err := cluster.Kubectl(context.Background(), "uncordon", node.Name); err != nil {
			t.Error(err)
		}
	})
	ackedBefore, began := l.acknowledged(), time.Now()
	// Only the Installation's pods: the pods of the tests before may still
	// be terminating in their namespaces.
	out, err := cluster.Kubectl(context.Background(), "drain", node.Name, "--ignore-daemonsets", "--delete-emptydir-data",
		"--pod-selector", "lin.dev/installation="+etcdName, "--timeout", "20s")
	drained := time.Since(began)
	if err == nil {
		t.Fatalf("the drain evicted every member within its timeout; the PodDisruptionBudget must hold two:\n%s", out)
	}
	if !strings.Contains(err.Error(), "disruption budget") {
		t.Errorf("the drain did not wait on the disruption budget: %v\n%s", err, out)
	}
	after := runs(t, ns, etcdName)
	evicted := changedRuns(before, after)
	if len(evicted) != 1 {
		t.Fatalf("the drain took %d members, want exactly 1: %v", len(evicted), evicted)
	}
	evictedPod := strings.Fields(evicted[0])[0]
	ackedDuring := l.acknowledged() - ackedBefore
	t.Logf("drain: gave up after %v with %s evicted and the other two held by the budget; %d writes acknowledged meanwhile",
		drained.Round(100*time.Millisecond), evictedPod, ackedDuring)
	if ackedDuring == 0 {
		t.Error("no write was acknowledged while the drain ran")
	}

	uncordoned := time.Now()
	if _, err := cluster.Kubectl(context.Background(), "uncordon", node.Name); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, timeout, evictedPod+" to be Ready", func(context.Context) (bool, error) {
		p, ok := pods(t, ns, etcdName)[evictedPod]
		return ok && podReady(&p), nil
	})
	ready := time.Since(uncordoned)
	waitRolledOut(t, ns, etcdName)
	t.Logf("drain: %s Ready again %v after the uncordon, available (minReadySeconds %d) after %v", evictedPod,
		ready.Round(100*time.Millisecond), minReadySeconds, time.Since(uncordoned).Round(100*time.Millisecond))
	if now := claimUIDs(t, ns, etcdName); now[evictedPod] != claims[evictedPod] {
		t.Errorf("%s came back on claim %s, not on its own %s", evictedPod, now[evictedPod], claims[evictedPod])
	}
	if now := etcdMembers(t, client.base); now[evictedPod] != members[evictedPod] || len(now) != 3 {
		t.Errorf("members after the drain %v, before %v: %s must keep its ID", now, members, evictedPod)
	}
	// Its own copy, read without the leader, has the newest write.
	newest, value := l.latest()
	member := fmt.Sprintf("http://%s:2379", podIP(t, ns, evictedPod))
	harness.Eventually(t, 30*time.Second, evictedPod+" to catch up", func(ctx context.Context) (bool, error) {
		got, err := etcdRange(ctx, newHTTPClient(), member, newest, true)
		if err != nil {
			return false, err
		}
		if got != value {
			return false, fmt.Errorf("%s = %q on %s, want %q", newest, got, evictedPod, value)
		}
		return true, nil
	})
	l.finish(t, "etcd client through the drain")
}
