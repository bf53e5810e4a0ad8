package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/client/clientset/versioned"
	"lin.dev/lin-operator/test/env"
	"lin.dev/lin-operator/test/harness"
)

// TestEveryExampleReachesReady does what `make run` and its README steps do:
// the cluster of `localcluster up`, the operator binary against its
// kubeconfig, and `kubectl apply -f` of each file in examples/, each in a
// namespace of its own, which must reach Ready. Claims bind to the volumes
// of the default StorageClass.
func TestEveryExampleReachesReady(t *testing.T) {
	dir := t.TempDir()
	if err := up([]string{"--dir", dir}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := down([]string{"--dir", dir}); err != nil {
			t.Error(err)
		}
	})
	st, err := readState(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", st.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	lin := versioned.NewForConfigOrDie(cfg)

	root, err := env.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	operator := filepath.Join(t.TempDir(), "lin-operator")
	if err := harness.BuildOperator(root, operator); err != nil {
		t.Fatal(err)
	}
	harness.StartProcess(t, "operator", operator, "--kubeconfig", st.Kubeconfig)

	files, err := filepath.Glob(filepath.Join(root, "examples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var inst linv1.Installation
			if err := yaml.Unmarshal(data, &inst); err != nil {
				t.Fatal(err)
			}
			ns := harness.Namespace(t, client)
			// The restricted example says to label its namespace so.
			if strings.Contains(string(data), "pod-security.kubernetes.io/enforce=restricted") {
				patch := `{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"restricted"}}}`
				if _, err := client.CoreV1().Namespaces().Patch(t.Context(), ns, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			kubectl := exec.CommandContext(t.Context(), filepath.Join(st.BinDir, "kubectl"), "--kubeconfig", st.Kubeconfig, "apply", "-n", ns, "-f", file)
			if out, err := kubectl.CombinedOutput(); err != nil {
				t.Fatalf("kubectl apply -f %s: %v\n%s", file, err, out)
			}
			harness.WaitPhase(t, lin, ns, inst.Name, linv1.PhaseReady, 2*time.Minute)
			claims, err := client.CoreV1().PersistentVolumeClaims(ns).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range claims.Items {
				if class := c.Spec.StorageClassName; class == nil || *class != env.StorageClass {
					t.Errorf("claim %s has class %v, want the default %s", c.Name, class, env.StorageClass)
				}
			}
		})
	}
}
