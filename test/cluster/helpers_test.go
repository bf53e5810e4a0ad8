package cluster

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/test/harness"
)

// newInstallation returns an Installation of shards x replicas pods that
// start all at once; with storage, each pod claims 1Gi.
func newInstallation(ns, name string, shards, replicas int32, reclaim linv1.ReclaimPolicy) *linv1.Installation {
	inst := harness.NewInstallation(ns, name)
	inst.Spec.Shards = ptr.To(shards)
	inst.Spec.Replicas = ptr.To(replicas)
	inst.Spec.PodManagementPolicy = linv1.ParallelPodManagement
	if reclaim != "" {
		inst.Spec.Storage = &linv1.StorageSpec{Size: resource.MustParse("1Gi"), ReclaimPolicy: reclaim}
	}
	return inst
}

// createReady creates inst and waits until it is Ready.
func createReady(t *testing.T, inst *linv1.Installation) *linv1.Installation {
	t.Helper()
	if _, err := linClient.LinV1().Installations(inst.Namespace).Create(context.Background(), inst, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating Installation %s: %v", inst.Name, err)
	}
	return waitPhase(t, inst.Namespace, inst.Name, linv1.PhaseReady)
}

// edit changes an Installation's spec, retrying on conflicts.
func edit(t *testing.T, ns, name string, change func(*linv1.Installation)) {
	t.Helper()
	harness.EditInstallation(t, linClient, ns, name, change)
}

// podUIDs returns the UID of every pod of an Installation, by pod name.
func podUIDs(t *testing.T, ns, name string) map[string]types.UID {
	t.Helper()
	pods, err := testEnv.Client.CoreV1().Pods(ns).List(context.Background(),
		metav1.ListOptions{LabelSelector: "lin.dev/installation=" + name})
	if err != nil {
		t.Fatal(err)
	}
	uids := map[string]types.UID{}
	for _, p := range pods.Items {
		uids[p.Name] = p.UID
	}
	return uids
}

// claimUIDs returns the UID of every PVC in ns, by name.
func claimUIDs(t *testing.T, ns string) map[string]types.UID {
	t.Helper()
	claims, err := testEnv.Client.CoreV1().PersistentVolumeClaims(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	uids := map[string]types.UID{}
	for _, c := range claims.Items {
		uids[c.Name] = c.UID
	}
	return uids
}

// statusLog records every status an Installation goes through, from a watch.
type statusLog struct {
	mu       sync.Mutex
	statuses []linv1.InstallationStatus
	gens     []int64
}

// watchStatus starts recording the statuses of an Installation until the test ends.
func watchStatus(t *testing.T, ns, name string) *statusLog {
	t.Helper()
	w, err := linClient.LinV1().Installations(ns).Watch(context.Background(),
		metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	log := &statusLog{}
	go func() {
		for ev := range w.ResultChan() {
			if inst, ok := ev.Object.(*linv1.Installation); ok && ev.Type == watch.Modified {
				log.mu.Lock()
				log.statuses = append(log.statuses, inst.Status)
				log.gens = append(log.gens, inst.Generation)
				log.mu.Unlock()
			}
		}
	}()
	return log
}

// rollout returns the statuses recorded for generation gen, from the first
// Progressing one on.
func (l *statusLog) rollout(gen int64) []linv1.InstallationStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []linv1.InstallationStatus
	for i, s := range l.statuses {
		if l.gens[i] == gen && s.ObservedGeneration == gen && (len(out) > 0 || s.Phase == linv1.PhaseProgressing) {
			out = append(out, s)
		}
	}
	return out
}

// saw reports whether any recorded status had a condition of type with reason.
func (l *statusLog) saw(typ, reason string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.statuses {
		if c := apimeta.FindStatusCondition(s.Conditions, typ); c != nil && c.Reason == reason {
			return true
		}
	}
	return false
}

// checkRollout fails the test unless the statuses of a rollout went through
// Progressing with updatedReplicas never going down, and ended Ready.
func checkRollout(t *testing.T, statuses []linv1.InstallationStatus, total int32) {
	t.Helper()
	if len(statuses) == 0 {
		t.Fatal("status never said Progressing for the new generation")
	}
	var seen []string
	for i, s := range statuses {
		seen = append(seen, fmt.Sprintf("%s %d/%d updated", s.Phase, s.UpdatedReplicas, total))
		if i > 0 && s.UpdatedReplicas < statuses[i-1].UpdatedReplicas {
			t.Errorf("updatedReplicas went down: %v", seen)
		}
	}
	last := statuses[len(statuses)-1]
	if last.Phase != linv1.PhaseReady || last.UpdatedReplicas != total {
		t.Errorf("the rollout ended %v", seen)
	}
	t.Logf("rollout: %v", seen)
}

// replaced reports how many pods of before are gone from after.
func replaced(before, after map[string]types.UID) int {
	n := 0
	for name, uid := range before {
		if after[name] != uid {
			n++
		}
	}
	return n
}

// names returns the keys of m, sorted.
func names[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// claimExists reports whether a PVC exists and is not being deleted.
func claimExists(t *testing.T, ns, name string) bool {
	t.Helper()
	c, err := testEnv.Client.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), name, metav1.GetOptions{})
	return err == nil && c.DeletionTimestamp == nil
}

// volumeClaim returns the claim name of a pod's data volume.
func volumeClaim(p *corev1.Pod) string {
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			return v.PersistentVolumeClaim.ClaimName
		}
	}
	return ""
}
