package cluster

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/resources"
	"lin.dev/lin-operator/test/env"
	"lin.dev/lin-operator/test/harness"
)

// fieldEdits change one field of the spec each, keyed as docs/operations.md
// names the field in its table.
var fieldEdits = map[string]func(*linv1.Installation){
	"image":           func(i *linv1.Installation) { i.Spec.Image = "example.com/app:2" },
	"imagePullPolicy": func(i *linv1.Installation) { i.Spec.ImagePullPolicy = corev1.PullAlways },
	"command":         func(i *linv1.Installation) { i.Spec.Command = []string{"/bin/app"} },
	"args":            func(i *linv1.Installation) { i.Spec.Args = []string{"--verbose"} },
	"env":             func(i *linv1.Installation) { i.Spec.Env = []corev1.EnvVar{{Name: "LEVEL", Value: "debug"}} },
	"resources": func(i *linv1.Installation) {
		i.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
	},
	"securityContext": func(i *linv1.Installation) {
		i.Spec.SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false)}
	},
	"lifecycle": func(i *linv1.Installation) {
		i.Spec.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 5}}}
	},
	"containers": func(i *linv1.Installation) {
		i.Spec.Containers = []corev1.Container{{Name: "exporter", Image: "example.com/exporter:1"}}
	},
	"volumes": func(i *linv1.Installation) {
		i.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	},
	"readinessProbe": func(i *linv1.Installation) {
		i.Spec.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}}
	},
	"config":   func(i *linv1.Installation) { i.Spec.Config = map[string]string{"app.conf": "level=debug\n"} },
	"replicas": func(i *linv1.Installation) { i.Spec.Replicas = ptr.To[int32](3) },
	"shards":   func(i *linv1.Installation) { i.Spec.Shards = ptr.To[int32](3) },
	"ports": func(i *linv1.Installation) {
		i.Spec.Ports = append(i.Spec.Ports, linv1.InstallationPort{Name: "admin", ContainerPort: 9090})
	},
	"service.type":   func(i *linv1.Installation) { i.Spec.Service.Type = corev1.ServiceTypeNodePort },
	"service.labels": func(i *linv1.Installation) { i.Spec.Service.Labels = map[string]string{"exposure": "internal"} },
	"service.externalTrafficPolicy": func(i *linv1.Installation) {
		i.Spec.Service.Type, i.Spec.Service.ExternalTrafficPolicy = corev1.ServiceTypeNodePort, corev1.ServiceExternalTrafficPolicyLocal
	},
	"headlessService.labels": func(i *linv1.Installation) {
		i.Spec.HeadlessService = &linv1.ObjectLabels{Labels: map[string]string{"mesh": "off"}}
	},
	"statefulSets.labels": func(i *linv1.Installation) {
		i.Spec.StatefulSets = &linv1.ObjectLabels{Labels: map[string]string{"tier": "data"}}
	},
	"statefulSets.annotations": func(i *linv1.Installation) {
		i.Spec.StatefulSets = &linv1.ObjectLabels{Annotations: map[string]string{"owner.example.com/team": "storage"}}
	},
	"pod.labels":       func(i *linv1.Installation) { i.Spec.Pod.Labels = map[string]string{"team": "data"} },
	"pod.annotations":  func(i *linv1.Installation) { i.Spec.Pod.Annotations = map[string]string{"example.com/a": "b"} },
	"pod.nodeSelector": func(i *linv1.Installation) { i.Spec.Pod.NodeSelector = map[string]string{"kubernetes.io/os": "linux"} },
	"disruption.maxUnavailable": func(i *linv1.Installation) {
		i.Spec.Disruption.MaxUnavailable = ptr.To(intstr.FromString("50%"))
	},
	"disruption.enabled":     func(i *linv1.Installation) { i.Spec.Disruption.Enabled = ptr.To(false) },
	"rollout.strategy":       func(i *linv1.Installation) { i.Spec.Rollout.Strategy = linv1.RolloutAllShards },
	"rollout.maxUnavailable": func(i *linv1.Installation) { i.Spec.Rollout.MaxUnavailable = ptr.To(intstr.FromInt32(2)) },
	"rollout.progressDeadlineSeconds": func(i *linv1.Installation) {
		i.Spec.Rollout.ProgressDeadlineSeconds = ptr.To[int32](300)
	},
	"rollout.minReadySeconds": func(i *linv1.Installation) { i.Spec.Rollout.MinReadySeconds = 5 },
	"stop":                    func(i *linv1.Installation) { i.Spec.Stop = true },
	"paused":                  func(i *linv1.Installation) { i.Spec.Paused = true },
}

// fieldEffect is one row of the table in docs/operations.md.
type fieldEffect struct {
	field, restarts string
	writes          []string
}

// readFieldTable reads the table under "What a change of each field does".
func readFieldTable(t *testing.T) []fieldEffect {
	t.Helper()
	root, err := env.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []fieldEffect
	inSection := false
	for s := bufio.NewScanner(f); s.Scan(); {
		line := s.Text()
		if strings.HasPrefix(line, "## ") {
			inSection = line == "## What a change of each field does"
		}
		cells := strings.Split(line, "|")
		if !inSection || len(cells) != 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		row := fieldEffect{field: strings.Trim(strings.TrimSpace(cells[1]), "`"), restarts: strings.TrimSpace(cells[2])}
		for w := range strings.SplitSeq(cells[3], ",") {
			if w = strings.TrimSpace(w); w != "" {
				row.writes = append(row.writes, w)
			}
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		t.Fatal("docs/operations.md has no field table")
	}
	return rows
}

// childVersions returns a version of every child of an Installation that
// changes only when the operator writes it, by "Kind/name": the
// resourceVersion, but for StatefulSets and PodDisruptionBudgets, whose
// status their controllers write, the generation and the spec hash.
func childVersions(t *testing.T, ns, name string) map[string]string {
	t.Helper()
	ctx := context.Background()
	opts := metav1.ListOptions{LabelSelector: resources.LabelInstallation + "=" + name}
	out := map[string]string{}
	cms, err := testEnv.Client.CoreV1().ConfigMaps(ns).List(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range cms.Items {
		out["ConfigMap/"+o.Name] = o.ResourceVersion
	}
	svcs, err := testEnv.Client.CoreV1().Services(ns).List(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range svcs.Items {
		out["Service/"+o.Name] = o.ResourceVersion
	}
	sets, err := testEnv.Client.AppsV1().StatefulSets(ns).List(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range sets.Items {
		out["StatefulSet/"+o.Name] = fmt.Sprint(o.Generation, o.Annotations[resources.AnnotationSpecHash])
	}
	pdbs, err := testEnv.Client.PolicyV1().PodDisruptionBudgets(ns).List(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range pdbs.Items {
		out["PodDisruptionBudget/"+o.Name] = fmt.Sprint(o.Generation, o.Annotations[resources.AnnotationSpecHash])
	}
	return out
}

// writtenAs names what changed between two child versions in the table's
// words: "ConfigMap config", "Service client", "Services" when both
// Services changed, "StatefulSets", "PodDisruptionBudgets".
func writtenAs(name string, before, after map[string]string) []string {
	changed := map[string]bool{}
	for _, k := range slices.Concat(slices.Collect(maps.Keys(before)), slices.Collect(maps.Keys(after))) {
		if before[k] != after[k] {
			changed[k] = true
		}
	}
	var out []string
	add := func(label string, ok bool) {
		if ok {
			out = append(out, label)
		}
	}
	anyOf := func(kind string) bool {
		for k := range changed {
			if strings.HasPrefix(k, kind+"/") {
				return true
			}
		}
		return false
	}
	add("ConfigMap config", changed["ConfigMap/"+name+"-config"])
	add("ConfigMap topology", changed["ConfigMap/"+name+"-topology"])
	headless, client := changed["Service/"+name+"-headless"], changed["Service/"+name]
	add("Services", headless && client)
	add("Service client", client && !headless)
	add("Service headless", headless && !client)
	add("StatefulSets", anyOf("StatefulSet"))
	add("PodDisruptionBudgets", anyOf("PodDisruptionBudget"))
	return out
}

// settledAfterEdit reports whether an Installation has observed its
// generation and come to rest: Ready with every pod updated, Stopped, or
// Paused.
func settledAfterEdit(inst *linv1.Installation) error {
	st := inst.Status
	want := linv1.PhaseReady
	switch {
	case inst.Spec.Paused:
		want = linv1.PhasePaused
	case inst.Spec.Stop:
		want = linv1.PhaseStopped
	}
	pods := resources.DesiredReplicas(inst) * resources.Shards(inst)
	if st.ObservedGeneration != inst.Generation || st.Phase != want || st.Rollout != nil ||
		(want == linv1.PhaseReady && st.UpdatedReplicas != pods) {
		return fmt.Errorf("Installation %s: phase %s (want %s), generation %d observed %d, %d of %d pods updated",
			inst.Name, st.Phase, want, inst.Generation, st.ObservedGeneration, st.UpdatedReplicas, pods)
	}
	return nil
}

func TestEveryFieldDoesWhatTheOperationsTableSays(t *testing.T) {
	rows := readFieldTable(t)
	for _, r := range rows {
		if fieldEdits[r.field] == nil {
			t.Errorf("docs/operations.md lists %s, which the test has no edit for", r.field)
		}
	}
	for field := range fieldEdits {
		if !slices.ContainsFunc(rows, func(r fieldEffect) bool { return r.field == field }) {
			t.Errorf("the test edits %s, which docs/operations.md does not list", field)
		}
	}
	if t.Failed() {
		return
	}
	ns := harness.Namespace(t, testEnv.Client)
	harness.StartOperator(t, testEnv.Config, harness.Options{Namespaces: []string{ns}})
	name := func(field string) string { return "f-" + strings.ToLower(strings.ReplaceAll(field, ".", "-")) }
	for _, r := range rows {
		inst := newInstallation(ns, name(r.field), 2, 2, "")
		if _, err := linClient.LinV1().Installations(ns).Create(context.Background(), inst, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range rows {
		waitPhase(t, ns, name(r.field), linv1.PhaseReady)
	}

	// Every field at once, each on an Installation of its own.
	pods, versions := map[string]map[string]types.UID{}, map[string]map[string]string{}
	for _, r := range rows {
		n := name(r.field)
		pods[n], versions[n] = podUIDs(t, ns, n), childVersions(t, ns, n)
		edit(t, ns, n, fieldEdits[r.field])
	}
	for _, r := range rows {
		harness.Eventually(t, timeout, r.field+" to settle", func(ctx context.Context) (bool, error) {
			inst, err := linClient.LinV1().Installations(ns).Get(ctx, name(r.field), metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return settledAfterEdit(inst) == nil, settledAfterEdit(inst)
		})
	}
	for _, r := range rows {
		n := name(r.field)
		after := podUIDs(t, ns, n)
		restarted := "no"
		for pod, uid := range pods[n] {
			if after[pod] != uid {
				restarted = "yes"
			}
		}
		if len(after) == 0 {
			restarted = "stops them"
		}
		written := writtenAs(n, versions[n], childVersions(t, ns, n))
		if restarted != r.restarts || !slices.Equal(written, r.writes) {
			t.Errorf("%s: restarts pods %q, writes %v; docs/operations.md says %q, %v", r.field, restarted, written, r.restarts, r.writes)
		}
	}
}
