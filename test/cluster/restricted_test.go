package cluster

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/test/env"
	"lin.dev/lin-operator/test/harness"
)

// TestTheRestrictedExampleRunsUnderPodSecurityRestricted labels a namespace
// to enforce Pod Security restricted, where the API server refuses every pod
// that breaks it, and runs examples/restricted.yaml there until it is Ready:
// its StatefulSets' pods were admitted. Without the container's security
// context they would not be, which the test shows first.
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

	got := createReady(t, &inst)
	t.Logf("%s Ready %s under Pod Security restricted", got.Name, got.Status.Ready)
}
