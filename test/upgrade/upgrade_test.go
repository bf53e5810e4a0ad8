// Package upgrade tests that upgrading the operator restarts nothing. It
// builds the operator of the release in hack/upgrade-base from this
// repository's history, lets it converge a corpus of Installations on a
// whole control plane under that release's CRD, then applies the current CRD
// and runs the current operator in its place, as a Deployment rollout does.
// docs/upgrading.md lists what the upgrade may write, and why.
package upgrade

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/client/clientset/versioned"
	"lin.dev/lin-operator/pkg/resources"
	"lin.dev/lin-operator/test/env"
	"lin.dev/lin-operator/test/harness"
)

// timeout bounds each wait on the control plane.
const timeout = 3 * time.Minute

// declaredWrites are the writes to children and Installations (the request
// counter's "verb resource", events aside) that the current operator may make
// when it takes over from the base release, each with its reason; the same
// list, with the same reasons, is in docs/upgrading.md. Anything else it
// writes fails the test.
var declaredWrites = map[string]string{
	"create poddisruptionbudgets": "each shard gets a PodDisruptionBudget (spec.disruption, on by default); " +
		"it selects the shard's pods and changes none of them",
	"update services": "a client Service with labels or annotations from spec.service gets lin.dev/spec-labels and " +
		"lin.dev/spec-annotations, which record their keys so that a key removed from the spec is removed from the Service",
	"update statefulsets": "a StatefulSet whose pods have annotations from spec.pod gets lin.dev/pod-annotations on its own " +
		"metadata, recording their keys; the pod template is unchanged, which the test checks by the update revisions",
}

func TestUpgradeFromTheBaseReleaseRestartsNothing(t *testing.T) {
	root, err := env.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	old, err := harness.BuildBase(root, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := env.StartForTest(t, env.Options{Mode: env.Cluster, CRDDir: filepath.Join(old.Tree, "deploy", "crds")})
	lc := versioned.NewForConfigOrDie(e.Config)
	ns := harness.Namespace(t, e.Client)
	provideFor(t, e, ns)
	corpus := readCorpus(t, root, ns)
	for _, inst := range corpus {
		if _, err := lc.LinV1().Installations(ns).Create(context.Background(), inst, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating Installation %s under the base release's CRD: %v", inst.Name, err)
		}
	}

	// The base release predates the transform that gives the cache one
	// shape of Installation whether it came by a LIST or by a watch, so
	// the watch-list consistency detector would stop it; its code is
	// fixed, so only the mutation detector runs on it.
	p := harness.StartProcessEnv(t, "base-operator", old.Binary,
		[]string{"KUBE_CACHE_MUTATION_DETECTOR=true", "KUBE_WATCHLIST_INCONSISTENCY_DETECTOR=false"},
		"--kubeconfig", e.KubeconfigPath, "--namespace", ns, "--metrics-bind-address=0", "--health-probe-bind-address=0")
	waitSettled(t, lc, ns, corpus)
	// SIGTERM, as a Deployment rollout sends: it drains its queue and exits.
	p.Stop(t)
	if t.Failed() {
		t.FailNow()
	}
	pods, revisions := podUIDs(t, e, ns), updateRevisions(t, e, ns)
	t.Logf("the base release %s converged %d Installations: %d pods, %d StatefulSets",
		old.Commit[:12], len(corpus), len(pods), len(revisions))

	if out, err := e.Kubectl(context.Background(), "apply", "--server-side", "--force-conflicts",
		"-f", filepath.Join(root, "deploy", "crds")); err != nil {
		t.Fatalf("applying the current CRD: %v\n%s", err, out)
	}
	waitServedUnderCurrentCRD(t, lc, ns, len(corpus))
	op := harness.StartOperator(t, e.Config, harness.Options{Namespaces: []string{ns}, ResyncPeriod: time.Second})
	// The first reconcile comes from the initial list, the others from
	// resyncs: four show that every Installation was looked at again after
	// whatever the first one did.
	harness.Eventually(t, timeout, "4 reconciles of every Installation by the current operator", func(context.Context) (bool, error) {
		for _, inst := range corpus {
			if n := op.Reconciles.Count(ns, inst.Name); n < 4 {
				return false, fmt.Errorf("Installation %s reconciled %d times", inst.Name, n)
			}
		}
		return true, nil
	})
	writes := harness.Writes(op.Requests.Snapshot())
	for key := range writes {
		if _, ok := declaredWrites[key]; !ok {
			t.Errorf("the current operator sent %q, which the upgrade does not declare (all writes: %s)",
				key, harness.Format(writes))
		}
	}
	if restarted := changed(pods, podUIDs(t, e, ns)); len(restarted) > 0 {
		t.Errorf("pods restarted by the upgrade: %v", restarted)
	}
	if rolled := changed(revisions, updateRevisions(t, e, ns)); len(rolled) > 0 {
		t.Errorf("StatefulSets given a new pod template by the upgrade: %v", rolled)
	}
	checkStillValid(t, lc, e, ns)
	t.Logf("after the upgrade: %d pods unchanged, writes: %s", len(pods), harness.Format(writes))
}

// provideFor creates what the corpus' pods need to be scheduled and become
// Ready: the service account and priority class that a golden case names,
// node labels its node selector asks for, and volumes for every claim.
func provideFor(t *testing.T, e *env.Env, ns string) {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "demo-sa"}}
	if _, err := e.Client.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high-priority"}, Value: 1000}
	if _, err := e.Client.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	nodes, err := e.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	patch := []byte(`{"metadata":{"labels":{"disktype":"ssd","kubernetes.io/os":"linux"}}}`)
	for _, n := range nodes.Items {
		if _, err := e.Client.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// examples/sharded.yaml claims 4 x 10Gi, examples/etcd.yaml 3 x 1Gi,
	// examples/shardapp.yaml 6 x 1Gi, storage-delete 1 x 500Mi,
	// object-metadata 2 x 5Gi, and storage-retain 2 x 10Gi of class
	// fast-ssd, ReadWriteOnce and ReadOnlyMany.
	harness.CreateVolumes(t, e.Client, harness.Volumes{Prefix: ns, Count: 16, Size: "10Gi"})
	harness.CreateVolumes(t, e.Client, harness.Volumes{Prefix: ns + "-ssd", Count: 2, Size: "10Gi", StorageClass: "fast-ssd",
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadOnlyMany}})
}

// readCorpus reads every Installation of examples/ and every golden case of
// pkg/resources, the latter named golden-<case>, into namespace ns.
func readCorpus(t *testing.T, root, ns string) []*linv1.Installation {
	t.Helper()
	examples, err := filepath.Glob(filepath.Join(root, "examples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	golden, err := filepath.Glob(filepath.Join(root, "pkg", "resources", "testdata", "*.installation.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(examples) == 0 || len(golden) == 0 {
		t.Fatalf("the corpus is empty: %d examples, %d golden cases", len(examples), len(golden))
	}
	var corpus []*linv1.Installation
	for _, path := range append(examples, golden...) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		inst := &linv1.Installation{}
		if err := yaml.UnmarshalStrict(data, inst); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if name, ok := strings.CutSuffix(filepath.Base(path), ".installation.yaml"); ok {
			inst.Name = "golden-" + name
		}
		inst.Namespace = ns
		corpus = append(corpus, inst)
	}
	return corpus
}

// waitSettled waits until every Installation of the corpus reports Ready, or
// Stopped, for its current generation, and its StatefulSets have rolled out.
func waitSettled(t *testing.T, lc versioned.Interface, ns string, corpus []*linv1.Installation) {
	t.Helper()
	harness.Eventually(t, timeout, "the corpus to be Ready under the base release", func(ctx context.Context) (bool, error) {
		for _, want := range corpus {
			inst, err := lc.LinV1().Installations(ns).Get(ctx, want.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			st := inst.Status
			if st.ObservedGeneration != inst.Generation || (st.Phase != linv1.PhaseReady && st.Phase != linv1.PhaseStopped) {
				return false, fmt.Errorf("Installation %s is %s (generation %d, observed %d, ready %s)",
					inst.Name, st.Phase, inst.Generation, st.ObservedGeneration, st.Ready)
			}
		}
		return true, nil
	})
}

// waitServedUnderCurrentCRD waits until the API server serves the
// Installations of ns with the current CRD's defaults (spec.rollout is new in
// it). The server swaps its storage for a changed CRD a moment after the
// write, so an informer started at once could get its watch from the old
// storage and its LIST from the new one: the objects of the two would differ
// by those defaults, and the watch-list consistency detector would stop the
// operator for what is the server's doing.
func waitServedUnderCurrentCRD(t *testing.T, lc versioned.Interface, ns string, n int) {
	t.Helper()
	harness.Eventually(t, timeout, "the Installations served under the current CRD", func(ctx context.Context) (bool, error) {
		list, err := lc.LinV1().Installations(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		if len(list.Items) != n {
			return false, fmt.Errorf("%d Installations listed, want %d", len(list.Items), n)
		}
		for _, inst := range list.Items {
			if inst.Spec.Rollout.Strategy == "" {
				return false, fmt.Errorf("Installation %s has no spec.rollout.strategy yet", inst.Name)
			}
		}
		return true, nil
	})
}

// podUIDs returns the UID of every pod of an Installation in ns, by name.
func podUIDs(t *testing.T, e *env.Env, ns string) map[string]string {
	t.Helper()
	pods, err := e.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: resources.LabelInstallation})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		out[p.Name] = string(p.UID)
	}
	return out
}

// updateRevisions returns the update revision of every StatefulSet in ns,
// by name, after waiting until each has rolled out its current template.
func updateRevisions(t *testing.T, e *env.Env, ns string) map[string]string {
	t.Helper()
	out := map[string]string{}
	harness.Eventually(t, timeout, "every StatefulSet to roll out its template", func(ctx context.Context) (bool, error) {
		sets, err := e.Client.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		clear(out)
		for _, s := range sets.Items {
			if !rolledOut(&s) {
				return false, fmt.Errorf("StatefulSet %s: revision %s of %s, %d of %d pods ready",
					s.Name, s.Status.CurrentRevision, s.Status.UpdateRevision, s.Status.ReadyReplicas, *s.Spec.Replicas)
			}
			out[s.Name] = s.Status.UpdateRevision
		}
		return true, nil
	})
	return out
}

// rolledOut reports whether the StatefulSet controller has seen the current
// spec and every pod runs its template.
func rolledOut(s *appsv1.StatefulSet) bool {
	st := s.Status
	return st.ObservedGeneration == s.Generation && st.CurrentRevision == st.UpdateRevision && st.UpdatedReplicas == st.Replicas
}

// changed lists the keys of before whose value after lacks or differs.
func changed(before, after map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(before)) {
		if after[k] != before[k] {
			out = append(out, fmt.Sprintf("%s (%s -> %s)", k, before[k], after[k]))
		}
	}
	return out
}

// checkStillValid shows that the current CRD accepts every stored
// Installation in full: a server-side dry run creates a copy in another
// namespace, where validation ratcheting cannot wave an old value through.
func checkStillValid(t *testing.T, lc versioned.Interface, e *env.Env, ns string) {
	t.Helper()
	scratch := harness.Namespace(t, e.Client)
	list, err := lc.LinV1().Installations(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, stored := range list.Items {
		inst := &linv1.Installation{
			ObjectMeta: metav1.ObjectMeta{Name: stored.Name, Namespace: scratch, Labels: stored.Labels, Annotations: stored.Annotations},
			Spec:       stored.Spec,
		}
		if _, err := lc.LinV1().Installations(scratch).Create(context.Background(), inst,
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Errorf("the current CRD refuses the stored Installation %s: %v", stored.Name, err)
		}
	}
}
