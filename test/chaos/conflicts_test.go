//go:build chaos

package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/test/harness"
)

// writerKey is the key of the label and of the client Service annotation
// (spec.service.annotations) that writer w owns in every Installation; only
// w writes them, so the last value w wrote must stay.
func writerKey(w int) string { return fmt.Sprintf("chaos.lin.dev/writer-%d", w) }

// writes counts the writes of the writers by kind.
type writes struct {
	updates, patches, scales, conflicts atomic.Int64
}

// TestConcurrentWritersLoseNoUpdate runs five writers for 20 seconds against
// the same four Installations while the operator binary reconciles them.
// Each writer, at random, updates an Installation read just before, merge-
// patches it, or reads and writes its scale subresource, retrying on
// conflicts; each owns one label and one annotation of the client Service in
// every Installation, and replicas are everyone's. Afterwards every writer's
// last label and annotation must be there, and the status must end
// consistent with the last spec: observed generation, phase, replicas,
// children (the client Service written from the last spec).
//
// The writers edit no config file: each edit would roll the pods, and
// hundreds of rollouts interleaved with scaling drive the StatefulSet
// controller of kube-controller-manager 1.37 into a negative
// status.currentReplicas, which the API server refuses, so that it stalls
// for minutes: a fault of the control plane, not of what this tests.
func TestConcurrentWritersLoseNoUpdate(t *testing.T) {
	seed := *chaosSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d", seed)
	ns := harness.Namespace(t, testEnv.Client)
	guardPVCs(t, testEnv.Client, linClient, ns)
	tracker := trackUIDs(t, testEnv.Client, ns)
	harness.CreateVolumes(t, testEnv.Client, harness.Volumes{Prefix: ns, Count: 16})
	op := startOperator(t, testEnv.KubeconfigPath, "--namespace", ns)
	names := []string{"w0", "w1", "w2", "w3"}
	for _, name := range names {
		inst := harness.NewInstallation(ns, name)
		inst.Spec.PodManagementPolicy = linv1.ParallelPodManagement
		inst.Spec.Storage = &linv1.StorageSpec{Size: resource.MustParse("1Gi")}
		if _, err := linClient.LinV1().Installations(ns).Create(context.Background(), inst, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitConverged(t, 2*time.Minute, testEnv.Client, linClient, ns)

	last := runWriters(t, ns, names, seed)
	checkLastWrites(t, ns, names, last)
	final := waitConverged(t, 3*time.Minute, testEnv.Client, linClient, ns)
	op.checkAlive(t)
	tracker.catchUp(t, final.uids())
	if r := tracker.recreated(); len(r) > 0 {
		t.Errorf("made more than once: %v", r)
	}
	if d := tracker.deletions(); len(d) > 0 {
		t.Errorf("deleted: %v", d)
	}
	t.Logf("the operator met %d conflicts of its own writes", strings.Count(op.Log(t), "the object has been modified"))
}

// runWriters runs the five writers of TestConcurrentWritersLoseNoUpdate for
// 20 seconds and returns, by writer, the last value each wrote to its label
// and annotation in each Installation.
func runWriters(t *testing.T, ns string, names []string, seed uint64) []map[string]int {
	const writers, duration = 5, 20 * time.Second
	var counts writes
	last := make([]map[string]int, writers)
	deadline := time.Now().Add(duration)
	var wg sync.WaitGroup
	for w := range writers {
		last[w] = map[string]int{}
		rng := rand.New(rand.NewPCG(seed, uint64(w)))
		wg.Go(func() {
			for seq := 1; time.Now().Before(deadline); seq++ {
				name := names[rng.IntN(len(names))]
				labelled, err := writeOnce(ns, name, w, seq, rng, &counts)
				if err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
				if labelled {
					last[w][name] = seq
				}
				time.Sleep(time.Duration(50+rng.IntN(100)) * time.Millisecond)
			}
		})
	}
	wg.Wait()
	t.Logf("%d writers in %v: %d updates, %d merge patches, %d scales, %d conflicts retried",
		writers, duration, counts.updates.Load(), counts.patches.Load(), counts.scales.Load(), counts.conflicts.Load())
	return last
}

// checkLastWrites fails the test unless every writer's last value is in its
// label and annotation of each Installation: no update was lost.
func checkLastWrites(t *testing.T, ns string, names []string, last []map[string]int) {
	t.Helper()
	for _, name := range names {
		inst, err := linClient.LinV1().Installations(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for w := range last {
			if last[w][name] == 0 {
				continue
			}
			want := strconv.Itoa(last[w][name])
			key := writerKey(w)
			if inst.Labels[key] != want || inst.Spec.Service.Annotations[key] != want {
				t.Errorf("Installation %s: writer %d last wrote %s, the label says %q and the annotation %q",
					name, w, want, inst.Labels[key], inst.Spec.Service.Annotations[key])
			}
		}
	}
}

// writeOnce makes one write of writer w to Installation name in one of three
// ways, and reports whether it wrote the value seq to the writer's label and
// annotation, which a scale does not.
func writeOnce(ns, name string, w, seq int, rng *rand.Rand, counts *writes) (bool, error) {
	ctx := context.Background()
	insts := linClient.LinV1().Installations(ns)
	value := strconv.Itoa(seq)
	switch rng.IntN(3) {
	case 0:
		counts.updates.Add(1)
		return true, retryOnConflict(counts, func() error {
			inst, err := insts.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if inst.Labels == nil {
				inst.Labels = map[string]string{}
			}
			if inst.Spec.Service.Annotations == nil {
				inst.Spec.Service.Annotations = map[string]string{}
			}
			inst.Labels[writerKey(w)] = value
			inst.Spec.Service.Annotations[writerKey(w)] = value
			inst.Spec.Replicas = ptr.To(int32(1 + rng.IntN(3)))
			_, err = insts.Update(ctx, inst, metav1.UpdateOptions{})
			return err
		})
	case 1:
		counts.patches.Add(1)
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"labels": map[string]string{writerKey(w): value}},
			"spec":     map[string]any{"service": map[string]any{"annotations": map[string]string{writerKey(w): value}}},
		})
		if err == nil {
			_, err = insts.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		}
		return true, err
	default:
		counts.scales.Add(1)
		return false, retryOnConflict(counts, func() error {
			return scaleInstallation(ctx, ns, name, int32(1+rng.IntN(3)))
		})
	}
}

// scaleInstallation reads the scale subresource of an Installation and writes
// it back with replicas, as an autoscaler does; a conflict is returned.
func scaleInstallation(ctx context.Context, ns, name string, replicas int32) error {
	rc := testEnv.Client.AutoscalingV1().RESTClient()
	scalePath := "/apis/" + linv1.SchemeGroupVersion.String() + "/namespaces/" + ns + "/installations/" + name + "/scale"
	scale := &autoscalingv1.Scale{}
	if err := rc.Get().AbsPath(scalePath).Do(ctx).Into(scale); err != nil {
		return err
	}
	scale.Spec.Replicas = replicas
	return rc.Put().AbsPath(scalePath).Body(scale).Do(ctx).Error()
}

// retryOnConflict calls write until it does not fail with a conflict,
// counting the conflicts.
func retryOnConflict(counts *writes, write func() error) error {
	for {
		err := write()
		if !apierrors.IsConflict(err) {
			return err
		}
		counts.conflicts.Add(1)
	}
}
