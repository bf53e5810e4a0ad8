//go:build chaos

package chaos

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
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/client/clientset/versioned"
	"lin.dev/lin-operator/pkg/resources"
)

// clusterDomain is the operator's default, which every scenario runs with.
const clusterDomain = "cluster.local"

// state is everything a namespace holds that the operator manages or makes
// happen: Installations, their children, the pods and the claims.
type state struct {
	insts      []linv1.Installation
	configMaps map[string]*corev1.ConfigMap
	services   map[string]*corev1.Service
	sets       map[string]*appsv1.StatefulSet
	budgets    map[string]*policyv1.PodDisruptionBudget
	pods       []corev1.Pod
	claims     map[string]*corev1.PersistentVolumeClaim
}

// readState lists the namespace from the API server.
func readState(ctx context.Context, c kubernetes.Interface, lc versioned.Interface, ns string) (*state, error) {
	managed := metav1.ListOptions{LabelSelector: resources.ManagedBySelector}
	insts, err := lc.LinV1().Installations(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	cms, err := c.CoreV1().ConfigMaps(ns).List(ctx, managed)
	if err != nil {
		return nil, err
	}
	svcs, err := c.CoreV1().Services(ns).List(ctx, managed)
	if err != nil {
		return nil, err
	}
	sets, err := c.AppsV1().StatefulSets(ns).List(ctx, managed)
	if err != nil {
		return nil, err
	}
	budgets, err := c.PolicyV1().PodDisruptionBudgets(ns).List(ctx, managed)
	if err != nil {
		return nil, err
	}
	pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: resources.LabelInstallation})
	if err != nil {
		return nil, err
	}
	claims, err := c.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return &state{insts: insts.Items, configMaps: byName(cms.Items), services: byName(svcs.Items),
		sets: byName(sets.Items), budgets: byName(budgets.Items), pods: pods.Items, claims: byName(claims.Items)}, nil
}

// byName indexes objects by name.
func byName[T any, P interface {
	*T
	metav1.Object
}](items []T) map[string]P {
	out := make(map[string]P, len(items))
	for i := range items {
		p := P(&items[i])
		out[p.GetName()] = p
	}
	return out
}

// problems lists how the namespace differs from a converged one: every
// Installation's status describes its current generation and says Ready (or
// Stopped), every child it renders exists, is controlled by it and was
// written from this spec, every shard runs its pods with their claims, and
// nothing else is managed: no orphan, no duplicate.
func (s *state) problems() []string {
	var out []string
	expected := map[string]bool{}
	for i := range s.insts {
		inst := &s.insts[i]
		if inst.DeletionTimestamp != nil {
			out = append(out, fmt.Sprintf("Installation %s is being deleted", inst.Name))
			continue
		}
		out = append(out, checkStatus(inst)...)
		desired, err := resources.NewChildren(inst, clusterDomain)
		if err != nil {
			out = append(out, fmt.Sprintf("Installation %s: %v", inst.Name, err))
			continue
		}
		for _, o := range desired.Objects() {
			expected[kindOf(o)+"/"+o.GetName()] = true
		}
		out = append(out, s.checkChildren(inst, desired)...)
	}
	for key := range s.managed() {
		if !expected[key] {
			out = append(out, "no Installation renders "+key+": an orphan or a duplicate")
		}
	}
	for _, p := range s.pods {
		ref := metav1.GetControllerOf(&p)
		if ref == nil || !expected["StatefulSet/"+ref.Name] || s.sets[ref.Name] == nil || s.sets[ref.Name].UID != ref.UID {
			out = append(out, fmt.Sprintf("pod %s belongs to no StatefulSet of an Installation", p.Name))
		}
	}
	slices.Sort(out)
	return out
}

// checkStatus says how the status of inst differs from a converged one.
func checkStatus(inst *linv1.Installation) []string {
	st := inst.Status
	want := linv1.PhaseReady
	if inst.Spec.Stop {
		want = linv1.PhaseStopped
	}
	if st.ObservedGeneration != inst.Generation || st.Phase != want || st.ConfigHash != resources.ConfigHash(inst) ||
		st.Replicas != resources.DesiredReplicas(inst) {
		return []string{fmt.Sprintf("Installation %s: generation %d, status observed %d, phase %s, replicas %d, ready %s",
			inst.Name, inst.Generation, st.ObservedGeneration, st.Phase, st.Replicas, st.Ready)}
	}
	return nil
}

// checkChildren says how the children of inst differ from what it renders.
func (s *state) checkChildren(inst *linv1.Installation, desired *resources.Children) []string {
	var out []string
	for _, d := range desired.Objects() {
		key := kindOf(d) + "/" + d.GetName()
		live := s.managed()[key]
		switch {
		case live == nil:
			out = append(out, key+" is missing")
		case !metav1.IsControlledBy(live, inst):
			out = append(out, key+" is not controlled by Installation "+inst.Name)
		case live.GetAnnotations()[resources.AnnotationSpecHash] != d.GetAnnotations()[resources.AnnotationSpecHash]:
			out = append(out, key+" was not written from the current spec")
		}
	}
	for _, d := range desired.ConfigMaps {
		if live := s.configMaps[d.Name]; live != nil && !equality.Semantic.DeepEqual(live.Data, d.Data) {
			out = append(out, "ConfigMap/"+d.Name+" holds other data than the spec")
		}
	}
	for _, d := range desired.StatefulSets {
		if live := s.sets[d.Name]; live != nil {
			out = append(out, s.checkShard(inst, live)...)
		}
	}
	return out
}

// checkShard says how the pods and claims of a shard differ from its spec.
func (s *state) checkShard(inst *linv1.Installation, sts *appsv1.StatefulSet) []string {
	want := resources.DesiredReplicas(inst)
	var names []string
	for _, p := range s.pods {
		if metav1.IsControlledBy(&p, sts) {
			names = append(names, p.Name)
		}
	}
	slices.Sort(names)
	var out []string
	if int32(len(names)) != want || *sts.Spec.Replicas != want {
		out = append(out, fmt.Sprintf("StatefulSet/%s wants %d pods and has %d: %v", sts.Name, *sts.Spec.Replicas, len(names), names))
	}
	for _, pod := range names {
		if c := s.claims[resources.DataVolume+"-"+pod]; inst.Spec.Storage != nil && (c == nil || c.Status.Phase != corev1.ClaimBound) {
			out = append(out, fmt.Sprintf("pod %s has no bound claim", pod))
		}
	}
	return out
}

// managed returns the managed children by "Kind/name".
func (s *state) managed() map[string]metav1.Object {
	out := map[string]metav1.Object{}
	for n, o := range s.configMaps {
		out["ConfigMap/"+n] = o
	}
	for n, o := range s.services {
		out["Service/"+n] = o
	}
	for n, o := range s.sets {
		out["StatefulSet/"+n] = o
	}
	for n, o := range s.budgets {
		out["PodDisruptionBudget/"+n] = o
	}
	return out
}

// uids returns the UID of every managed child and claim by "Kind/name".
func (s *state) uids() map[string]types.UID {
	out := map[string]types.UID{}
	for k, o := range s.managed() {
		out[k] = o.GetUID()
	}
	for n, c := range s.claims {
		out["PersistentVolumeClaim/"+n] = c.UID
	}
	return out
}

// kindOf names the kind of a child.
func kindOf(o resources.Object) string {
	switch o.(type) {
	case *corev1.ConfigMap:
		return "ConfigMap"
	case *corev1.Service:
		return "Service"
	case *appsv1.StatefulSet:
		return "StatefulSet"
	case *policyv1.PodDisruptionBudget:
		return "PodDisruptionBudget"
	}
	return fmt.Sprintf("%T", o)
}

// waitConverged waits until the namespace has no problem, and returns it.
func waitConverged(t *testing.T, timeout time.Duration, c kubernetes.Interface, lc versioned.Interface, ns string) *state {
	t.Helper()
	var s *state
	// The last problems seen say why it did not converge better than the
	// error of a last read cut short by the timeout.
	var problems error
	began, logged := time.Now(), time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		var err error
		if s, err = readState(ctx, c, lc, ns); err == nil {
			p := s.problems()
			if len(p) == 0 {
				break
			}
			problems = fmt.Errorf("%d problems: %s", len(p), strings.Join(p[:min(len(p), 8)], "; "))
		}
		if time.Since(logged) > 30*time.Second {
			t.Logf("namespace %s not converged after %v: %v", ns, time.Since(began).Round(time.Second), problems)
			logged = time.Now()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("namespace %s did not converge in %v: %v (last read: %v)", ns, timeout, problems, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	t.Logf("namespace %s converged in %v: %d Installations, %d children, %d pods, %d claims", ns,
		time.Since(began).Round(100*time.Millisecond), len(s.insts), len(s.managed()), len(s.pods), len(s.claims))
	return s
}

// changedUIDs lists the keys of before that are missing from after or have
// another UID there, except those that gone allows to be gone.
func changedUIDs(before, after map[string]types.UID, gone func(key string) bool) []string {
	var out []string
	for _, key := range slices.Sorted(maps.Keys(before)) {
		uid, ok := after[key]
		switch {
		case ok && uid != before[key]:
			out = append(out, key+" was recreated")
		case !ok && !gone(key):
			out = append(out, key+" was lost")
		}
	}
	return out
}
