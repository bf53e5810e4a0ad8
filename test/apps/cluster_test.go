package apps

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/client/clientset/versioned"
	"lin.dev/lin-operator/pkg/resources"
	"lin.dev/lin-operator/test/harness"
)

// timeout bounds a wait for real pods: a rollout of a few pods, each
// started, probed and stopped for real.
const timeout = 3 * time.Minute

// lin is the Installation client of the cluster.
func lin() versioned.Interface {
	return versioned.NewForConfigOrDie(cluster.Config)
}

// minReadySeconds is the rollouts' minReadySeconds on the test's cluster.
// The examples wait 30 s, the TTL of kubeadm's CoreDNS, for a pod's new
// address to reach its peers; the test's CoreDNS gives out records for 5 s
// (the kubernetes plugin's default TTL, and `cache 5` in test/node), so
// twice that is enough here, and keeps the rollouts short.
const minReadySeconds = 10

// createExample creates the Installation of examples/<file> in ns, with
// minReadySeconds, changed by edit (if not nil), and returns it.
func createExample(t *testing.T, ns, file string, edit func(*linv1.Installation)) *linv1.Installation {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "examples", file))
	if err != nil {
		t.Fatal(err)
	}
	inst := &linv1.Installation{}
	if err := yaml.UnmarshalStrict(data, inst); err != nil {
		t.Fatalf("examples/%s: %v", file, err)
	}
	inst.Namespace = ns
	inst.Spec.Rollout.MinReadySeconds = minReadySeconds
	if edit != nil {
		edit(inst)
	}
	created, err := lin().LinV1().Installations(ns).Create(context.Background(), inst, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating examples/%s: %v", file, err)
	}
	return created
}

// waitRolledOut waits until the Installation is Ready for its current
// generation with every pod on the current template, and returns it.
func waitRolledOut(t *testing.T, ns, name string) *linv1.Installation {
	t.Helper()
	var inst *linv1.Installation
	harness.Eventually(t, timeout, fmt.Sprintf("Installation %s/%s to be rolled out and Ready", ns, name), func(ctx context.Context) (bool, error) {
		var err error
		if inst, err = lin().LinV1().Installations(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		st, want := inst.Status, resources.Shards(inst)*resources.Replicas(inst)
		if st.ObservedGeneration != inst.Generation || st.Phase != linv1.PhaseReady || st.UpdatedReplicas != want || st.ReadyReplicas != want {
			return false, fmt.Errorf("generation %d observed %d, phase %s, ready %d, updated %d of %d",
				inst.Generation, st.ObservedGeneration, st.Phase, st.ReadyReplicas, st.UpdatedReplicas, want)
		}
		return true, nil
	})
	return inst
}

// serviceURL is the base URL of the client Service of an Installation on
// port, by its ClusterIP: kube-proxy picks a pod for each connection.
func serviceURL(t *testing.T, ns, name string, port int) string {
	t.Helper()
	svc, err := cluster.Client.CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("http://%s:%d", svc.Spec.ClusterIP, port)
}

// pods lists the pods of an Installation by name.
func pods(t *testing.T, ns, name string) map[string]corev1.Pod {
	t.Helper()
	list, err := cluster.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: resources.LabelInstallation + "=" + name})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]corev1.Pod{}
	for _, p := range list.Items {
		out[p.Name] = p
	}
	return out
}

// containerRun identifies one run of a pod's container: a restart, a new
// container or a new pod changes it.
type containerRun struct {
	UID         string
	ContainerID string
	Restarts    int32
	StartedAt   time.Time
}

// runs returns the containerRun of every pod of an Installation.
func runs(t *testing.T, ns, name string) map[string]containerRun {
	t.Helper()
	out := map[string]containerRun{}
	for podName, p := range pods(t, ns, name) {
		r := containerRun{UID: string(p.UID)}
		for _, c := range p.Status.ContainerStatuses {
			r.ContainerID, r.Restarts = c.ContainerID, c.RestartCount
			if c.State.Running != nil {
				r.StartedAt = c.State.Running.StartedAt.Time
			}
		}
		out[podName] = r
	}
	return out
}

// changedRuns lists the pods of before whose run differs in after, or that
// are gone.
func changedRuns(before, after map[string]containerRun) []string {
	var changed []string
	for name, r := range before {
		if a, ok := after[name]; !ok || a != r {
			changed = append(changed, fmt.Sprintf("%s (%+v -> %+v)", name, r, a))
		}
	}
	return changed
}

// podIP is the address of a pod, which the test reaches over the node's
// bridge.
func podIP(t *testing.T, ns, pod string) string {
	t.Helper()
	p, err := cluster.Client.CoreV1().Pods(ns).Get(context.Background(), pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p.Status.PodIP
}

// timeline samples the pods of an Installation every 100 ms while a
// change rolls out, and records when each pod went away, came back and was
// Ready again, and the most pods that were not Ready at once.
type timeline struct {
	ns, name string
	// expected are the pods of the Installation's spec.
	expected []string
	began    time.Time
	cancel   context.CancelFunc
	done     chan struct{}

	mu      sync.Mutex
	events  []podEvent
	maxDown int
	// last is the previous sample.
	last map[string]podSample
}

// podEvent is one change of one pod.
type podEvent struct {
	At   time.Duration
	Pod  string
	What string
}

// startTimeline takes a first sample of the pods of inst before it returns,
// so that a change made after it is seen against the pods that ran before
// (a first sample taken later could miss a pod already on its way out),
// and goes on sampling in the background.
func startTimeline(t *testing.T, inst *linv1.Installation) *timeline {
	t.Helper()
	tl := &timeline{ns: inst.Namespace, name: inst.Name, began: time.Now(), done: make(chan struct{})}
	for s := range resources.Shards(inst) {
		for o := range resources.Replicas(inst) {
			tl.expected = append(tl.expected, fmt.Sprintf("%s-%d-%d", inst.Name, s, o))
		}
	}
	tl.sampleNow(t, "a first")
	ctx, cancel := context.WithCancel(context.Background())
	tl.cancel = cancel
	go tl.run(ctx)
	t.Cleanup(tl.stop)
	return tl
}

// podSample is what one sample saw of one pod.
type podSample struct {
	uid   string
	ready bool
}

// run samples every 100 ms until ctx is done. A sample that cannot list
// the pods is skipped: the next one compares with the last that could.
func (tl *timeline) run(ctx context.Context) {
	defer close(tl.done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
		_ = tl.sample(ctx)
	}
}

// sampleNow takes a sample, retrying a List that fails, and fails the test
// when none works.
func (tl *timeline) sampleNow(t *testing.T, which string) {
	t.Helper()
	harness.Eventually(t, 30*time.Second, which+" sample of the pods of "+tl.name, func(ctx context.Context) (bool, error) {
		return true, tl.sample(ctx)
	})
}

// sample lists the pods and records what changed since the last sample.
func (tl *timeline) sample(ctx context.Context) error {
	list, err := cluster.Client.CoreV1().Pods(tl.ns).List(ctx, metav1.ListOptions{LabelSelector: resources.LabelInstallation + "=" + tl.name})
	if err != nil {
		return err
	}
	now := map[string]podSample{}
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			now[p.Name] = podSample{uid: string(p.UID), ready: podReady(&p)}
		}
	}
	tl.record(tl.last, now)
	tl.last = now
	return nil
}

// record adds the events between two samples; the first sample, which has
// none before it (last is nil), only counts the pods not Ready.
func (tl *timeline) record(last, now map[string]podSample) {
	first := last == nil
	at := time.Since(tl.began).Round(100 * time.Millisecond)
	tl.mu.Lock()
	defer tl.mu.Unlock()
	down := 0
	for _, name := range tl.expected {
		before, was := last[name]
		after, is := now[name]
		if !after.ready {
			down++
		}
		if first {
			continue
		}
		switch {
		case was && (!is || before.uid != after.uid):
			tl.events = append(tl.events, podEvent{at, name, "terminating"})
			if is {
				tl.events = append(tl.events, podEvent{at, name, "created"})
			}
		case !was && is:
			tl.events = append(tl.events, podEvent{at, name, "created"})
		}
		if is && after.ready && (!was || !before.ready || before.uid != after.uid) {
			tl.events = append(tl.events, podEvent{at, name, "ready"})
		}
	}
	tl.maxDown = max(tl.maxDown, down)
}

// podReady says whether a pod's Ready condition is true.
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (tl *timeline) stop() {
	tl.cancel()
	<-tl.done
}

// finish stops sampling, logs the timeline and returns it with the most
// pods that were not Ready at once.
func (tl *timeline) finish(t *testing.T, what string) ([]podEvent, int) {
	t.Helper()
	tl.stop()
	// A last look, so that the end of the rollout is in it.
	tl.sampleNow(t, "a last")
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var b strings.Builder
	for _, e := range tl.events {
		fmt.Fprintf(&b, "\n  +%5.1fs %s %s", e.At.Seconds(), e.Pod, e.What)
	}
	t.Logf("%s: rollout timeline over %v, at most %d pods not Ready at once:%s",
		what, time.Since(tl.began).Round(100*time.Millisecond), tl.maxDown, b.String())
	return tl.events, tl.maxDown
}

// replacedOneAtATime fails the test unless every pod was replaced and at
// most one pod was not Ready at any sample, so that each pod waited for the
// real readiness of the one before.
func replacedOneAtATime(t *testing.T, tl *timeline, what string) []podEvent {
	t.Helper()
	events, maxDown := tl.finish(t, what)
	if maxDown > 1 {
		t.Errorf("%s: %d pods were not Ready at once; the rollout must replace one at a time", what, maxDown)
	}
	replaced := map[string]bool{}
	for _, e := range events {
		if e.What == "terminating" {
			replaced[e.Pod] = true
		}
	}
	for _, name := range tl.expected {
		if !replaced[name] {
			t.Errorf("%s: pod %s was not replaced", what, name)
		}
	}
	return events
}
