package cluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/controller"
	"lin.dev/lin-operator/test/env"
	"lin.dev/lin-operator/test/harness"
)

// TestTheRestrictedExampleRunsUnderPodSecurityRestricted labels a namespace
// to enforce Pod Security restricted, where the API server refuses every pod
// that breaks it, and runs examples/restricted.yaml there until it is Ready:
// its StatefulSets' pods were admitted. Without the container's security
// context they would not be, which the test shows first: that Installation
// is Degraded, its message names the Pod Security level, and it has no pod,
// until its spec is fixed.
func TestTheRestrictedExampleRunsUnderPodSecurityRestricted(t *testing.T) {
	ns, _ := setup(t, harness.Options{})
	ctx := context.Background()
	patch := []byte(`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"restricted"}}}`)
	if _, err := testEnv.Client.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	root, err := env.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "examples", "restricted.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var inst linv1.Installation
	if err := yaml.UnmarshalStrict(data, &inst); err != nil {
		t.Fatal(err)
	}
	inst.Namespace = ns

	open := inst.DeepCopy()
	open.Name, open.Spec.SecurityContext = "open", nil
	if _, err := linClient.LinV1().Installations(ns).Create(ctx, open, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, ns, "open-0", "FailedCreate")
	refused := waitPhase(t, ns, "open", linv1.PhaseDegraded)
	degraded := apimeta.FindStatusCondition(refused.Status.Conditions, linv1.ConditionDegraded)
	if degraded.Reason != controller.ReasonPodsRefused || !strings.Contains(degraded.Message, `violates PodSecurity "restricted`) {
		t.Errorf("Degraded %s: %q, want %s naming the Pod Security level", degraded.Reason, degraded.Message, controller.ReasonPodsRefused)
	}
	if pods := podUIDs(t, ns, "open"); len(pods) > 0 {
		t.Errorf("pods %v of a refused template exist", names(pods))
	}
	t.Logf("refused: %s: %s", degraded.Reason, degraded.Message)
	// The fix of the spec ends it: the pods are admitted and Degraded clears.
	edit(t, ns, "open", func(i *linv1.Installation) { i.Spec.SecurityContext = inst.Spec.SecurityContext })
	waitPhase(t, ns, "open", linv1.PhaseReady)

	got := createReady(t, &inst)
	t.Logf("%s Ready %s under Pod Security restricted", got.Name, got.Status.Ready)
}

// TestAPrivilegedContainerInABaselineNamespaceIsRefused: whoever may create
// Installations gets no more through the operator than the namespace's Pod
// Security level allows. A privileged container in a namespace that
// enforces baseline gives a Degraded Installation whose message says so,
// and no pod.
func TestAPrivilegedContainerInABaselineNamespaceIsRefused(t *testing.T) {
	ns, _ := setup(t, harness.Options{})
	patch := []byte(`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"baseline"}}}`)
	if _, err := testEnv.Client.CoreV1().Namespaces().Patch(t.Context(), ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	inst := newInstallation(ns, "privileged", 1, 1, "")
	inst.Spec.SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	if _, err := linClient.LinV1().Installations(ns).Create(t.Context(), inst, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := waitPhase(t, ns, "privileged", linv1.PhaseDegraded)
	degraded := apimeta.FindStatusCondition(got.Status.Conditions, linv1.ConditionDegraded)
	if degraded.Reason != controller.ReasonPodsRefused || !strings.Contains(degraded.Message, `violates PodSecurity "baseline`) ||
		!strings.Contains(degraded.Message, "privileged") {
		t.Errorf("Degraded %s: %q, want %s naming baseline and privileged", degraded.Reason, degraded.Message, controller.ReasonPodsRefused)
	}
	if pods := podUIDs(t, ns, "privileged"); len(pods) > 0 {
		t.Errorf("pods %v of a privileged container exist in a baseline namespace", names(pods))
	}
	t.Logf("refused: %s: %s", degraded.Reason, degraded.Message)
}
