//go:build chaos

package chaos

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/resources"
	"lin.dev/lin-operator/test/harness"
)

// chaosSeed makes the random moments of a run repeatable.
var chaosSeed = flag.Uint64("chaos.seed", 0, "seed of the random moments of the chaos scenarios; 0 picks one and logs it")

// killRound is one round of TestOperatorKilledDuringReconcilesLosesNothing:
// a change for the operator to work through when it is killed.
type killRound struct {
	what   string
	change func(t *testing.T, ns string)
}

// killRounds change every kind of thing the operator reconciles, each in
// every Installation, so that the operator has writes to make for a while.
var killRounds = []killRound{
	{"config edit", editAll(func(i *linv1.Installation) { i.Spec.Config["round"] = "1" })},
	{"scale up", editAll(func(i *linv1.Installation) { i.Spec.Replicas = ptr.To[int32](2) })},
	{"image edit", editAll(func(i *linv1.Installation) { i.Spec.Image = "example.com/app:2" })},
	{"more shards", editAll(func(i *linv1.Installation) { i.Spec.Shards = ptr.To[int32](3) })},
	{"new Installations", func(t *testing.T, ns string) {
		for i := 6; i < 10; i++ {
			createKillTarget(t, ns, fmt.Sprintf("k%d", i), []linv1.ReclaimPolicy{linv1.ReclaimRetain, linv1.ReclaimDelete}[i%2])
		}
	}},
	{"scale down", editAll(func(i *linv1.Installation) { i.Spec.Replicas = ptr.To[int32](1) })},
	{"fewer shards", editAll(func(i *linv1.Installation) { i.Spec.Shards = ptr.To[int32](2) })},
	{"deletions and a config edit", func(t *testing.T, ns string) {
		for _, name := range []string{"k1", "k5", "k8", "k9"} {
			if err := linClient.LinV1().Installations(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		editAll(func(i *linv1.Installation) { i.Spec.Config["round"] = "8" })(t, ns)
	}},
	{"stop", editAll(func(i *linv1.Installation) { i.Spec.Stop = true })},
	{"start and config edit", editAll(func(i *linv1.Installation) {
		i.Spec.Stop = false
		i.Spec.Config["round"] = "10"
	})},
}

// TestOperatorKilledDuringReconcilesLosesNothing kills the operator binary
// with SIGKILL at a random moment in the 3 seconds after a change, ten
// times, each time with another change, and starts it again. The operator
// runs throttled to 5 requests a second, so that a round's writes take
// seconds and the kill lands among them. After each restart the namespace
// must converge, every child and claim that existed before must have kept
// its UID unless the change removed it, and over the whole run no child or
// claim may be made twice, nor a Retain claim deleted.
func TestOperatorKilledDuringReconcilesLosesNothing(t *testing.T) {
	seed := *chaosSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (-chaos.seed=%d repeats the kill moments)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	ns := harness.Namespace(t, testEnv.Client)
	guardPVCs(t, testEnv.Client, linClient, ns)
	tracker := trackUIDs(t, testEnv.Client, ns)
	harness.CreateVolumes(t, testEnv.Client, harness.Volumes{Prefix: ns, Count: 64})
	args := []string{"--namespace", ns, "--kube-api-qps", "5", "--kube-api-burst", "5"}
	op := startOperator(t, testEnv.KubeconfigPath, args...)
	for i := range 6 {
		policy := linv1.ReclaimRetain
		if i >= 4 {
			policy = linv1.ReclaimDelete
		}
		createKillTarget(t, ns, fmt.Sprintf("k%d", i), policy)
	}
	prev := waitConverged(t, 3*time.Minute, testEnv.Client, linClient, ns)
	policies := reclaimPolicies{}
	policies.learn(prev)

	midReconcile := 0
	for n, r := range killRounds {
		r.change(t, ns)
		delay := time.Duration(rng.Int64N(int64(3 * time.Second)))
		time.Sleep(delay)
		behind := unobserved(t, ns)
		op.Kill(t)
		if behind > 0 {
			midReconcile++
		}
		t.Logf("round %d, %s: SIGKILL %v after the change, with %d Installations not yet observed",
			n+1, r.what, delay.Round(time.Millisecond), behind)
		op = startOperator(t, testEnv.KubeconfigPath, args...)
		next := waitConverged(t, 3*time.Minute, testEnv.Client, linClient, ns)
		policies.learn(next)
		if lost := changedUIDs(prev.uids(), next.uids(), policies.mayGo(prev)); len(lost) > 0 {
			t.Errorf("round %d, %s: %v", n+1, r.what, lost)
		}
		prev = next
	}
	if midReconcile < len(killRounds)/2 {
		t.Errorf("only %d of %d kills came before the operator had observed every change", midReconcile, len(killRounds))
	}
	tracker.catchUp(t, prev.uids())
	if r := tracker.recreated(); len(r) > 0 {
		t.Errorf("made more than once: %v", r)
	}
	final := prev.uids()
	for _, key := range tracker.deletions() {
		if _, ok := final[key]; ok {
			t.Errorf("%s was deleted and is there again", key)
		}
	}
	t.Logf("%d children and claims tracked over %d kills; %d deleted by the changes", tracker.count(), len(killRounds), len(tracker.deletions()))
}

// createKillTarget creates an Installation of two shards of one pod, each
// pod with a claim under policy.
func createKillTarget(t *testing.T, ns, name string, policy linv1.ReclaimPolicy) {
	t.Helper()
	inst := harness.NewInstallation(ns, name)
	inst.Spec.Shards = ptr.To[int32](2)
	inst.Spec.PodManagementPolicy = linv1.ParallelPodManagement
	inst.Spec.Storage = &linv1.StorageSpec{Size: resource.MustParse("1Gi"), ReclaimPolicy: policy}
	if _, err := linClient.LinV1().Installations(ns).Create(context.Background(), inst, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// editAll returns a change that edits every Installation of the namespace.
func editAll(edit func(*linv1.Installation)) func(t *testing.T, ns string) {
	return func(t *testing.T, ns string) {
		insts, err := linClient.LinV1().Installations(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, inst := range insts.Items {
			names = append(names, inst.Name)
		}
		editSome(edit, names...)(t, ns)
	}
}

// editSome returns a change that edits the named Installations.
func editSome(edit func(*linv1.Installation), names ...string) func(t *testing.T, ns string) {
	return func(t *testing.T, ns string) {
		for _, name := range names {
			inst, err := linClient.LinV1().Installations(ns).Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			edit(inst)
			if _, err := linClient.LinV1().Installations(ns).Update(context.Background(), inst, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// unobserved counts the Installations whose status does not yet describe
// their generation: the operator still has work to do for them.
func unobserved(t *testing.T, ns string) int {
	t.Helper()
	insts, err := linClient.LinV1().Installations(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, inst := range insts.Items {
		if inst.Status.ObservedGeneration != inst.Generation {
			n++
		}
	}
	return n
}

// reclaimPolicies are the reclaimPolicies of the Installations with storage
// that a scenario has seen, by name, kept after an Installation is gone since
// its claims may outlive it.
type reclaimPolicies map[string]linv1.ReclaimPolicy

// learn records the policies of the Installations of s.
func (p reclaimPolicies) learn(s *state) {
	for _, inst := range s.insts {
		if inst.Spec.Storage != nil {
			p[inst.Name] = inst.Spec.Storage.ReclaimPolicy
		}
	}
}

// mayGo returns whether a key of s may be gone from a later state of the
// namespace that converged. A child may: convergence proves that every child
// the specs render is there, so a missing one is one they no longer render.
// A claim may only when its Installation's reclaimPolicy is Delete.
func (p reclaimPolicies) mayGo(s *state) func(key string) bool {
	return func(key string) bool {
		name, ok := strings.CutPrefix(key, "PersistentVolumeClaim/")
		return !ok || p[s.claims[name].Labels[resources.LabelInstallation]] == linv1.ReclaimDelete
	}
}
