// Package plugin tests kubectl-lin as users run it: built from
// cmd/kubectl-lin into a folder on PATH, found there by the real kubectl, and
// run as `kubectl lin ...` against a whole control plane (kwok runs the pods)
// with the operator reconciling.
package plugin

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/client/clientset/versioned"
	"lin.dev/lin-operator/pkg/plugin"
	"lin.dev/lin-operator/pkg/resources"
	"lin.dev/lin-operator/test/env"
	"lin.dev/lin-operator/test/harness"
)

var (
	// testEnv is the control plane shared by the package's tests.
	testEnv *env.Env
	// linClient talks to it as an admin.
	linClient versioned.Interface
)

// timeout bounds each wait on the cluster.
const timeout = 2 * time.Minute

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

// run builds kubectl-lin into a folder that it puts first on PATH, as a
// user installs a plugin, and runs the tests against a whole control plane.
func run(m *testing.M) int {
	root, err := env.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	bin, err := os.MkdirTemp("", "kubectl-lin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(bin)
	if _, err := harness.BuildKubectlLin(root, bin); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := os.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return env.RunMain(m, env.Options{Mode: env.Cluster}, func(e *env.Env) {
		testEnv = e
		linClient = versioned.NewForConfigOrDie(e.Config)
	})
}

// kubectl runs the real kubectl with args, then the cluster's kubeconfig
// unless args name another, and returns its output and error. kubectl finds
// the plugin on PATH; it takes no flag before a plugin's name.
func kubectl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	if !slices.Contains(args, "--kubeconfig") {
		args = append(args, "--kubeconfig", testEnv.KubeconfigPath)
	}
	cmd := exec.CommandContext(t.Context(), filepath.Join(testEnv.BinDir, "kubectl"), args...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// mustKubectl is kubectl that fails the test on an error.
func mustKubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := kubectl(t, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// readyInstallation creates a 3-shard Installation of one replica in a new
// namespace, with the operator running, and waits until it is Ready.
func readyInstallation(t *testing.T) (ns string, inst *linv1.Installation) {
	t.Helper()
	ns = harness.Namespace(t, testEnv.Client)
	harness.StartOperator(t, testEnv.Config, harness.Options{Namespaces: []string{ns}})
	inst = harness.NewInstallation(ns, "demo")
	inst.Spec.Shards = ptr.To[int32](3)
	if _, err := linClient.LinV1().Installations(ns).Create(t.Context(), inst, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.WaitPhase(t, linClient, ns, inst.Name, linv1.PhaseReady, timeout)
	return ns, inst
}

func TestKubectlFindsThePluginAndStatusShowsTheInstallationWhole(t *testing.T) {
	ns, _ := readyInstallation(t)
	out := mustKubectl(t, "plugin", "list")
	if !strings.Contains(out, "kubectl-lin") {
		t.Errorf("kubectl plugin list does not find kubectl-lin:\n%s", out)
	}

	status := mustKubectl(t, "lin", "status", "demo", "-n", ns)
	t.Logf("kubectl lin status demo:\n%s", status)
	for _, want := range []string{"Installation:  " + ns + "/demo", "Phase:         Ready", "Ready:         3 of 3 pods",
		"Shard 0: StatefulSet demo-0", "Shard 2: StatefulSet demo-2", "demo-1-0  true", "budget demo-1 allows 1 disruption\n",
		"demo-headless", "installation/demo", "Rollout:       none"} {
		if !strings.Contains(status, want) {
			t.Errorf("kubectl lin status lacks %q", want)
		}
	}
	if strings.Contains(status, "\x1b[") {
		t.Error("kubectl lin status coloured its output, which is not a terminal")
	}

	var snap plugin.Snapshot
	if err := json.Unmarshal([]byte(mustKubectl(t, "lin", "status", "demo", "-n", ns, "-o", "json")), &snap); err != nil {
		t.Fatal(err)
	}
	if snap.Installation.Name != "demo" || len(snap.StatefulSets) != 3 || len(snap.Pods) != 3 || len(snap.Budgets) != 3 ||
		len(snap.Services) != 2 || len(snap.Events) == 0 {
		t.Errorf("kubectl lin status -o json: %d StatefulSets, %d pods, %d budgets, %d Services, %d events; want 3, 3, 3, 2 and some",
			len(snap.StatefulSets), len(snap.Pods), len(snap.Budgets), len(snap.Services), len(snap.Events))
	}
	if out := mustKubectl(t, "lin", "status", "demo", "-n", ns, "-o", "yaml"); !strings.Contains(out, "\ninstallation:\n") || !strings.Contains(out, "\nstatefulSets:\n") {
		t.Errorf("kubectl lin status -o yaml is not the snapshot in YAML:\n%.300s", out)
	}

	list := mustKubectl(t, "lin", "list", "-A")
	t.Logf("kubectl lin list -A:\n%s", list)
	if !slices.ContainsFunc(strings.Split(list, "\n"), func(line string) bool {
		return strings.HasPrefix(strings.Join(strings.Fields(line), " "), ns+" demo Ready 3/3 3x1 ")
	}) {
		t.Errorf("kubectl lin list -A has no line for %s/demo, Ready 3/3 of 3x1", ns)
	}
	if out := mustKubectl(t, "lin", "version"); !strings.Contains(out, "kubectl-lin:") || !strings.Contains(out, "cluster: v1.") {
		t.Errorf("kubectl lin version:\n%s", out)
	}
}

func TestPauseResumeStopAndStartChangeTheSpecAsKubectlLin(t *testing.T) {
	ns, _ := readyInstallation(t)
	for _, step := range []struct {
		cmd   string
		check func(linv1.InstallationSpec) bool
		phase linv1.Phase
	}{
		{"pause", func(s linv1.InstallationSpec) bool { return s.Paused }, linv1.PhasePaused},
		{"resume", func(s linv1.InstallationSpec) bool { return !s.Paused }, linv1.PhaseReady},
		{"stop", func(s linv1.InstallationSpec) bool { return s.Stop }, linv1.PhaseStopped},
		{"start", func(s linv1.InstallationSpec) bool { return !s.Stop }, linv1.PhaseReady},
	} {
		out := mustKubectl(t, "lin", step.cmd, "demo", "-n", ns)
		t.Logf("kubectl lin %s demo: %s", step.cmd, strings.TrimSpace(out))
		inst, err := linClient.LinV1().Installations(ns).Get(t.Context(), "demo", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !step.check(inst.Spec) {
			t.Errorf("after kubectl lin %s, spec.paused %t and spec.stop %t", step.cmd, inst.Spec.Paused, inst.Spec.Stop)
		}
		managers := map[string]bool{}
		for _, mf := range inst.ManagedFields {
			managers[mf.Manager] = true
		}
		if !managers[plugin.FieldManager] {
			t.Errorf("after kubectl lin %s, the managers are %v, want %s among them", step.cmd, managers, plugin.FieldManager)
		}
		harness.WaitPhase(t, linClient, ns, "demo", step.phase, timeout)
	}
}

func TestBadInputGetsOneLineAndANonZeroExit(t *testing.T) {
	ns, _ := readyInstallation(t)
	reader := readOnlyKubeconfig(t, ns)
	// A server that takes the connection and never answers.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"a missing Installation", []string{"lin", "status", "nope", "-n", ns}, `Installation "nope" in namespace "` + ns + `" not found`},
		{"a wrong namespace", []string{"lin", "pause", "demo", "-n", "no-such-namespace"}, `Installation "demo" in namespace "no-such-namespace" not found`},
		{"no permission", []string{"lin", "stop", "demo", "--kubeconfig", reader}, `no permission to patch Installation "demo" in namespace "` + ns + `"`},
		{"a bad output", []string{"lin", "status", "demo", "-n", ns, "-o", "wide"}, `--output "wide": want json or yaml`},
		{"a server that never answers", []string{"lin", "status", "demo", "--timeout=2s",
			"--server", "https://" + silent.Addr().String(), "--insecure-skip-tls-verify"}, "exceeded"},
	} {
		start := time.Now()
		out, err := kubectl(t, c.args...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if err == nil || !strings.Contains(out, c.want) || len(lines) != 1 {
			t.Errorf("%s: kubectl %s: %v, want a non-zero exit and one line with %q:\n%s", c.name, strings.Join(c.args, " "), err, c.want, out)
		}
		t.Logf("%s (%v): %s", c.name, time.Since(start).Round(time.Millisecond), strings.TrimSpace(out))
	}

	// Status and list need only reads.
	if out, err := kubectl(t, "lin", "status", "demo", "--kubeconfig", reader); err != nil || !strings.Contains(out, "Phase:         Ready") {
		t.Errorf("kubectl lin status under a Role that only reads: %v\n%s", err, out)
	}
	if out, err := kubectl(t, "lin", "list", "--kubeconfig", reader); err != nil || !strings.Contains(out, "demo") {
		t.Errorf("kubectl lin list under a Role that only reads: %v\n%s", err, out)
	}
}

// readOnlyKubeconfig returns a kubeconfig, in ns, of a ServiceAccount whose
// Role there only reads what status and list read.
func readOnlyKubeconfig(t *testing.T, ns string) string {
	t.Helper()
	ctx := context.Background()
	read := []string{"get", "list"}
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "lin-reader", Namespace: ns},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"lin.dev"}, Resources: []string{"installations"}, Verbs: read},
			{APIGroups: []string{"apps"}, Resources: []string{"statefulsets"}, Verbs: read},
			{APIGroups: []string{""}, Resources: []string{"pods", "persistentvolumeclaims", "services", "events"}, Verbs: read},
			{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: read},
		},
	}
	if _, err := testEnv.Client.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: ns}}
	if _, err := testEnv.Client.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "lin-reader", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: ns}},
	}
	if _, err := testEnv.Client.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return harness.ServiceAccountKubeconfig(t, testEnv.Client, testEnv.Config, ns, sa.Name)
}

func TestReportBundlesWhatSupportNeedsAndNoSecret(t *testing.T) {
	ns := harness.Namespace(t, testEnv.Client)
	harness.StartOperator(t, testEnv.Config, harness.Options{Namespaces: []string{ns}})
	const secretValue = "s3cr3t-value-of-the-test"
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns}, StringData: map[string]string{"password": secretValue}}
	if _, err := testEnv.Client.CoreV1().Secrets(ns).Create(t.Context(), secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	inst := harness.NewInstallation(ns, "demo")
	inst.Spec.Env = []corev1.EnvVar{{Name: "DB_PASSWORD", ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}}}
	inst.Spec.EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}}}}
	if _, err := linClient.LinV1().Installations(ns).Create(t.Context(), inst, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.WaitPhase(t, linClient, ns, inst.Name, linv1.PhaseReady, timeout)
	// An operator Deployment as deploy/ labels it; kwok runs its pod, and
	// serves no logs, which the bundle must say rather than fail.
	opNS := harness.Namespace(t, testEnv.Client)
	labels := map[string]string{"app.kubernetes.io/name": "lin-operator"}
	deployment := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "lin-operator", Namespace: opNS, Labels: labels},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "operator", Image: "lin-operator:v9.9.9"}}},
		}},
	}
	if _, err := testEnv.Client.AppsV1().Deployments(opNS).Create(t.Context(), deployment, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.WaitDeploymentAvailable(t, testEnv.Client, opNS, "lin-operator", timeout)

	file := filepath.Join(t.TempDir(), "bundle.tar.gz")
	out := mustKubectl(t, "lin", "report", "demo", "-n", ns, "--operator-namespace", opNS, "-f", file)
	t.Logf("kubectl lin report: %s", strings.TrimSpace(out))
	files := untar(t, file)
	var names []string
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	t.Logf("the bundle holds: %s", strings.Join(names, " "))
	dir := "lin-report-" + ns + "-demo/"
	for _, want := range []string{"installation.yaml", "statefulsets.yaml", "pods.yaml", "persistentvolumeclaims.yaml",
		"poddisruptionbudgets.yaml", "services.yaml", "events.yaml", "configmaps.yaml", "versions.txt",
		"operator/deployments.yaml", "operator/pods.yaml"} {
		if files[dir+want] == "" {
			t.Errorf("the bundle has no %s", want)
		}
	}
	for file, want := range map[string]string{"configmaps.yaml": "name: demo-topology", "operator/pods.yaml": "name: lin-operator-",
		"statefulsets.yaml": "name: demo-0", "poddisruptionbudgets.yaml": "name: demo-0",
		"services.yaml": "name: demo-headless", "installation.yaml": "name: demo"} {
		if !strings.Contains(files[dir+file], want) {
			t.Errorf("the bundle's %s lacks %q:\n%.300s", file, want, files[dir+file])
		}
	}
	if !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, dir+"operator/logs/lin-operator-") }) {
		t.Error("the bundle has no file for the operator pod's log")
	}
	for _, want := range []string{"kubectl-lin:", "cluster: v1.", "lin-operator:v9.9.9"} {
		if !strings.Contains(files[dir+"versions.txt"], want) {
			t.Errorf("versions.txt lacks %q:\n%s", want, files[dir+"versions.txt"])
		}
	}
	if !strings.Contains(files[dir+"pods.yaml"], "secretKeyRef") || !strings.Contains(files[dir+"events.yaml"], "reason: Created") {
		t.Error("pods.yaml does not reference the Secret, or events.yaml lacks the Installation's Created event")
	}
	encoded := base64.StdEncoding.EncodeToString([]byte(secretValue))
	for name, content := range files {
		if strings.Contains(content, secretValue) || strings.Contains(content, encoded) || strings.Contains(content, "kind: Secret") {
			t.Errorf("%s holds the Secret", name)
		}
	}
	if _, err := kubectl(t, "lin", "report", "demo", "-n", ns, "-f", file); err == nil {
		t.Error("kubectl lin report overwrote a file that exists")
	}
}

// untar returns the files of the tar.gz at path, by name.
func untar(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[hdr.Name] = string(data)
	}
}

// waitSettled waits until every StatefulSet in ns has all its pods on its
// current template and Ready: a restart changes no generation, so the
// Installation's phase alone cannot tell that it is done.
func waitSettled(t *testing.T, ns string) {
	t.Helper()
	harness.Eventually(t, timeout, "the StatefulSets to settle", func(ctx context.Context) (bool, error) {
		sets, err := testEnv.Client.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, s := range sets.Items {
			st := s.Status
			if st.ObservedGeneration != s.Generation || st.UpdateRevision != st.CurrentRevision || st.UpdatedReplicas != *s.Spec.Replicas ||
				st.ReadyReplicas != *s.Spec.Replicas {
				return false, fmt.Errorf("StatefulSet %s: %+v", s.Name, st)
			}
		}
		return true, nil
	})
}

// restartedAt returns each shard's restart annotation in its pod template,
// by StatefulSet name.
func restartedAt(t *testing.T, ns string) map[string]string {
	t.Helper()
	sets, err := testEnv.Client.AppsV1().StatefulSets(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, s := range sets.Items {
		out[s.Name] = s.Spec.Template.Annotations[resources.AnnotationRestartedAt]
	}
	return out
}

// TestRestartRollsThePodsThroughTheOperator: `kubectl lin restart` annotates
// the Installation, and the operator carries the restart into every shard's
// pod template (test/cluster times the shards one after the other); with
// --shard, into that shard's alone. A shard out of range is refused.
func TestRestartRollsThePodsThroughTheOperator(t *testing.T) {
	ns, _ := readyInstallation(t)
	out := mustKubectl(t, "lin", "restart", "demo", "-n", ns)
	t.Logf("kubectl lin restart demo: %s", strings.TrimSpace(out))
	inst, err := linClient.LinV1().Installations(ns).Get(t.Context(), "demo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	all := inst.Annotations[resources.AnnotationRestartedAt]
	if all == "" {
		t.Fatalf("kubectl lin restart set no %s: %v", resources.AnnotationRestartedAt, inst.Annotations)
	}
	harness.Eventually(t, timeout, "every shard's template to carry the restart", func(context.Context) (bool, error) {
		got := restartedAt(t, ns)
		for _, sts := range []string{"demo-0", "demo-1", "demo-2"} {
			if got[sts] != all {
				return false, fmt.Errorf("templates' restarts: %v, want %s everywhere", got, all)
			}
		}
		return true, nil
	})
	waitSettled(t, ns)

	out = mustKubectl(t, "lin", "restart", "demo", "--shard", "1", "-n", ns)
	t.Logf("kubectl lin restart demo --shard 1: %s", strings.TrimSpace(out))
	inst, err = linClient.LinV1().Installations(ns).Get(t.Context(), "demo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	one := inst.Annotations[resources.ShardRestartAnnotation(1)]
	harness.Eventually(t, timeout, "shard 1's template alone to carry its restart", func(context.Context) (bool, error) {
		got := restartedAt(t, ns)
		if one == "" || got["demo-1"] != one || got["demo-0"] != all || got["demo-2"] != all {
			return false, fmt.Errorf("templates' restarts: %v, want %q on demo-1 alone", got, one)
		}
		return true, nil
	})
	if out, err := kubectl(t, "lin", "restart", "demo", "--shard", "3", "-n", ns); err == nil || !strings.Contains(out, "--shard 3: ") || !strings.Contains(out, "has shards 0 to 2") {
		t.Errorf("kubectl lin restart --shard 3 of 3 shards: %v\n%s", err, out)
	}
}

// TestMakePluginWritesWhatKrewInstalls runs what `make plugin` runs for
// this machine's platform, then the real krew, built from hack/tools/krew,
// installs the plugin from the written manifest and archive, as krew-index
// would serve them; kubectl then runs the plugin that krew installed.
func TestMakePluginWritesWhatKrewInstalls(t *testing.T) {
	root, err := env.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "plugin")
	const version = "v0.1.0"
	platform := runtime.GOOS + "/" + runtime.GOARCH
	release := func() string {
		cmd := exec.CommandContext(t.Context(), "go", "run", "./hack/pluginrelease", "-version", version, "-platforms", platform, "-out", out)
		cmd.Dir = root
		output, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("pluginrelease: %v\n%s", err, output)
		}
		return string(output)
	}
	first := release()
	if again := release(); again != first {
		t.Errorf("two builds of the same source differ:\n%s\n%s", first, again)
	}
	t.Logf("pluginrelease: %s", strings.TrimSpace(first))
	manifest, err := os.ReadFile(filepath.Join(out, "lin.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	archive := fmt.Sprintf("kubectl-lin_%s_%s.tar.gz", runtime.GOOS, runtime.GOARCH)
	if sum := strings.Fields(first)[0]; !strings.Contains(string(manifest), "sha256: "+sum) ||
		!strings.Contains(string(manifest), "/releases/download/"+version+"/"+archive) {
		t.Errorf("the manifest does not name %s with its sha256 %s:\n%s", archive, sum, manifest)
	}

	krew := filepath.Join(dir, "krew")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", krew, "sigs.k8s.io/krew/cmd/krew")
	build.Dir = filepath.Join(root, "hack", "tools", "krew")
	if output, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building krew: %v\n%s", err, output)
	}
	krewRoot := filepath.Join(dir, "krew-root")
	run := func(name string, args ...string) string {
		cmd := exec.CommandContext(t.Context(), name, args...)
		// krew's bin first, where a user's PATH has it; nothing else of
		// this test's.
		cmd.Env = append(os.Environ(), "KREW_ROOT="+krewRoot, "KREW_NO_UPGRADE_CHECK=1",
			"PATH="+filepath.Join(krewRoot, "bin")+string(os.PathListSeparator)+"/usr/bin:/bin")
		output, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, output)
		}
		return string(output)
	}
	t.Logf("krew install: %s", strings.TrimSpace(run(krew, "install", "--manifest="+filepath.Join(out, "lin.yaml"),
		"--archive="+filepath.Join(out, archive))))
	got := run(filepath.Join(testEnv.BinDir, "kubectl"), "lin", "version", "--kubeconfig", testEnv.KubeconfigPath)
	if !strings.Contains(got, "kubectl-lin: "+version) {
		t.Errorf("kubectl lin version after krew install:\n%s\nwant the release's %s", got, version)
	}
}
