package node_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/client/clientset/versioned"
	"lin.dev/lin-operator/pkg/resources"
	"lin.dev/lin-operator/test/harness"
	"lin.dev/lin-operator/test/node"
)

// TestKubectlLinOnRealPods runs the kubectl plugin on real pods: status in
// the middle of a rollout of a 3-shard Installation, as a user sees it, then
// a restart of one shard, which replaces that shard's pods and no other.
func TestKubectlLinOnRealPods(t *testing.T) {
	bin := t.TempDir()
	if _, err := harness.BuildKubectlLin(repoRoot, bin); err != nil {
		t.Fatal(err)
	}
	kubectlLin := func(args ...string) (string, error) {
		cmd := exec.CommandContext(t.Context(), filepath.Join(cluster.BinDir, "kubectl"),
			append(append([]string{"lin"}, args...), "--kubeconfig", cluster.KubeconfigPath)...)
		cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	ns := restrictedNamespace(t)
	harness.StartOperator(t, cluster.Config, harness.Options{Namespaces: []string{ns}})
	lin := versioned.NewForConfigOrDie(cluster.Config)
	inst := testAppInstallation(ns, "demo")
	inst.Spec.Shards = ptr.To[int32](3)
	if _, err := lin.LinV1().Installations(ns).Create(t.Context(), inst, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.WaitPhase(t, lin, ns, "demo", linv1.PhaseReady, timeout)

	harness.EditInstallation(t, lin, ns, "demo", func(i *linv1.Installation) { i.Spec.Config = map[string]string{"app.conf": "level=debug\n"} })
	var mid string
	harness.Eventually(t, timeout, "kubectl lin status to show the rollout at shard 1", func(context.Context) (bool, error) {
		out, err := kubectlLin("status", "demo", "-n", ns)
		if err != nil {
			return false, fmt.Errorf("%v: %s", err, out)
		}
		mid = out
		return strings.Contains(out, "Rollout:       shard 1,"), nil
	})
	t.Logf("kubectl lin status demo, in the middle of the rollout:\n%s", mid)
	for _, want := range []string{"Phase:         Progressing", "revision demo-1-", node.Name} {
		if !strings.Contains(mid, want) {
			t.Errorf("the status in the middle of the rollout lacks %q", want)
		}
	}
	harness.WaitPhase(t, lin, ns, "demo", linv1.PhaseReady, timeout)

	before := podUIDsByShard(t, ns)
	out, err := kubectlLin("restart", "demo", "--shard", "2", "-n", ns)
	if err != nil {
		t.Fatalf("kubectl lin restart --shard 2: %v\n%s", err, out)
	}
	start := time.Now()
	harness.Eventually(t, timeout, "shard 2's pods to be replaced and Ready", func(ctx context.Context) (bool, error) {
		after := podUIDsByShard(t, ns)
		for name, uid := range before {
			replaced := after[name] != "" && after[name] != uid
			if strings.HasPrefix(name, "demo-2-") != replaced || after[name] == "" {
				return false, fmt.Errorf("Ready pods before %v, now %v: want shard 2's alone replaced, and Ready", before, after)
			}
		}
		i, err := lin.LinV1().Installations(ns).Get(ctx, "demo", metav1.GetOptions{})
		return err == nil && i.Status.Phase == linv1.PhaseReady && i.Status.Rollout == nil, err
	})
	t.Logf("kubectl lin restart demo --shard 2: %s; both its pods replaced and Ready %v later, no other pod replaced",
		strings.TrimSpace(out), time.Since(start).Round(time.Millisecond))
}

// podUIDsByShard returns the UID of every Ready pod of Installation demo in
// ns, by pod name.
func podUIDsByShard(t *testing.T, ns string) map[string]types.UID {
	t.Helper()
	pods, err := cluster.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: resources.LabelInstallation + "=demo"})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]types.UID{}
	for _, p := range pods.Items {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
				out[p.Name] = p.UID
			}
		}
	}
	return out
}
