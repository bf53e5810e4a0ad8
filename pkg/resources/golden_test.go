package resources_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
)

// update rewrites the golden files with what the builders render now:
// go test ./pkg/resources -update
var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// goldenCase is one Installation whose children are kept in
// testdata/<name>.golden.yaml.
type goldenCase struct {
	name string
	mod  func(*linv1.Installation)
}

// goldenCases cover each part of the spec once; the invariant tests reuse them.
var goldenCases = []goldenCase{
	{name: "minimal", mod: func(*linv1.Installation) {}},
	{name: "shards", mod: func(i *linv1.Installation) {
		i.Spec.Shards = ptr.To[int32](3)
		i.Spec.Replicas = ptr.To[int32](2)
	}},
	{name: "stop", mod: func(i *linv1.Installation) {
		i.Spec.Shards = ptr.To[int32](2)
		i.Spec.Replicas = ptr.To[int32](3)
		i.Spec.Stop = true
		i.Spec.Storage = &linv1.StorageSpec{Size: resource.MustParse("1Gi"), ReclaimPolicy: linv1.ReclaimDelete}
	}},
	{name: "storage-retain", mod: func(i *linv1.Installation) {
		i.Spec.Replicas = ptr.To[int32](2)
		i.Spec.Storage = &linv1.StorageSpec{
			Size:             resource.MustParse("10Gi"),
			StorageClassName: ptr.To("fast-ssd"),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadOnlyMany},
			MountPath:        "/data",
			ReclaimPolicy:    linv1.ReclaimRetain,
		}
	}},
	{name: "storage-delete", mod: func(i *linv1.Installation) {
		// Only size and reclaimPolicy: the rest shows its defaults.
		i.Spec.Storage = &linv1.StorageSpec{Size: resource.MustParse("500Mi"), ReclaimPolicy: linv1.ReclaimDelete}
	}},
	{name: "ports", mod: func(i *linv1.Installation) {
		i.Spec.Ports = []linv1.InstallationPort{
			{Name: "client", ContainerPort: 9000, ServicePort: 80},
			{Name: "gossip", ContainerPort: 7946, Protocol: corev1.ProtocolUDP},
			{Name: "gossip-tcp", ContainerPort: 7946, Protocol: corev1.ProtocolTCP},
			{Name: "metrics", ContainerPort: 9100, Protocol: corev1.ProtocolTCP, ServicePort: 9100},
		}
	}},
	{name: "probes", mod: func(i *linv1.Installation) {
		i.Spec.ReadinessProbe = &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromString("client")}},
			InitialDelaySeconds: 5,
		}
		i.Spec.LivenessProbe = &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/health"}}},
			PeriodSeconds:    20,
			FailureThreshold: 6,
		}
		i.Spec.StartupProbe = &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(9000)}},
			TimeoutSeconds:   3,
			PeriodSeconds:    2,
			FailureThreshold: 30,
		}
	}},
	{name: "pod-settings", mod: func(i *linv1.Installation) {
		selector := &metav1.LabelSelector{MatchLabels: map[string]string{"lin.dev/installation": "demo"}}
		i.Spec.Pod = linv1.PodSettings{
			// A user label or annotation that clashes with the operator's loses.
			Labels:       map[string]string{"team": "storage", "app.kubernetes.io/name": "user-name"},
			Annotations:  map[string]string{"prometheus.io/scrape": "true", "lin.dev/config-hash": "user-hash"},
			NodeSelector: map[string]string{"kubernetes.io/os": "linux", "disktype": "ssd"},
			Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual,
				Value: "db", Effect: corev1.TaintEffectNoSchedule}},
			Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
					Weight: 100,
					PodAffinityTerm: corev1.PodAffinityTerm{
						LabelSelector: selector,
						TopologyKey:   "kubernetes.io/hostname",
					},
				}},
			}},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
				MaxSkew:           1,
				TopologyKey:       "topology.kubernetes.io/zone",
				WhenUnsatisfiable: corev1.ScheduleAnyway,
				LabelSelector:     selector,
			}},
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot: ptr.To(true),
				RunAsUser:    ptr.To[int64](1000),
				FSGroup:      ptr.To[int64](2000),
			},
			ServiceAccountName:            "demo-sa",
			PriorityClassName:             "high-priority",
			TerminationGracePeriodSeconds: ptr.To[int64](60),
		}
	}},
	{name: "service-nodeport", mod: func(i *linv1.Installation) {
		i.Spec.Service = linv1.ServiceSpec{
			Type: corev1.ServiceTypeNodePort,
			// The operator's managed-by label wins over the user's.
			Labels:      map[string]string{"exposure": "public", "app.kubernetes.io/managed-by": "someone-else"},
			Annotations: map[string]string{"external-dns.alpha.kubernetes.io/hostname": "demo.example.com"},
		}
	}},
	{name: "service-loadbalancer", mod: func(i *linv1.Installation) {
		i.Spec.Ports = []linv1.InstallationPort{
			{Name: "client", ContainerPort: 9000, ServicePort: 80, NodePort: 30080},
			{Name: "metrics", ContainerPort: 9100},
		}
		i.Spec.Service = linv1.ServiceSpec{
			Type:                     corev1.ServiceTypeLoadBalancer,
			ExternalTrafficPolicy:    corev1.ServiceExternalTrafficPolicyLocal,
			LoadBalancerSourceRanges: []string{"10.0.0.0/8", "192.168.1.0/24"},
			LoadBalancerClass:        ptr.To("example.com/internal"),
		}
	}},
	{name: "object-metadata", mod: func(i *linv1.Installation) {
		i.Spec.Shards = ptr.To[int32](2)
		i.Spec.HeadlessService = &linv1.ObjectLabels{
			Labels:      map[string]string{"mesh": "off"},
			Annotations: map[string]string{"service.example.com/peers": "true"},
		}
		i.Spec.StatefulSets = &linv1.ObjectLabels{
			// The operator's shard label wins over the user's.
			Labels:      map[string]string{"tier": "data", "lin.dev/shard": "user-shard"},
			Annotations: map[string]string{"owner.example.com/team": "storage"},
		}
		i.Spec.Storage = &linv1.StorageSpec{Size: resource.MustParse("5Gi"),
			Labels:      map[string]string{"backup.example.com/policy": "daily"},
			Annotations: map[string]string{"backup.example.com/retain": "30d"},
		}
	}},
	{name: "sidecars", mod: func(i *linv1.Installation) {
		i.Spec.SecurityContext = &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			ReadOnlyRootFilesystem:   ptr.To(true),
		}
		i.Spec.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
			Exec: &corev1.ExecAction{Command: []string{"/usr/bin/app", "leave"}}}}
		i.Spec.InitContainers = []corev1.Container{
			{Name: "init-schema", Image: "example.com/migrate:1", Args: []string{"--wait"}},
			// restartPolicy Always: a sidecar that starts first and stays.
			{Name: "proxy", Image: "example.com/proxy:2", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)},
		}
		i.Spec.Containers = []corev1.Container{{Name: "exporter", Image: "example.com/exporter:3",
			Ports:        []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9187}},
			VolumeMounts: []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}}}
		i.Spec.Volumes = []corev1.Volume{
			{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "demo-tls"}}},
			{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		}
		i.Spec.VolumeMounts = []corev1.VolumeMount{
			{Name: "tls", MountPath: "/etc/tls", ReadOnly: true},
			{Name: "scratch", MountPath: "/tmp"},
		}
	}},
	{name: "container", mod: func(i *linv1.Installation) {
		i.Spec.ImagePullPolicy = corev1.PullIfNotPresent
		i.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}}
		i.Spec.Command = []string{"/usr/bin/app"}
		i.Spec.Args = []string{"--config", "/etc/installation/app.conf"}
		i.Spec.Env = []corev1.EnvVar{
			{Name: "LOG_LEVEL", Value: "debug"},
			{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "demo-secret"}, Key: "password"}}},
		}
		i.Spec.EnvFrom = []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "demo-extra"}}},
			{Prefix: "DB_", SecretRef: &corev1.SecretEnvSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "db-creds"}, Optional: ptr.To(true)}},
		}
		i.Spec.Resources = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
		}
	}},
	{name: "config", mod: func(i *linv1.Installation) {
		i.Spec.Config = map[string]string{
			"app.conf":     "listen = 9000\npeers = /etc/lin-topology/hosts\n",
			"logging.yaml": "level: info\n",
			"users.xml":    "<users>\n  <default/>\n</users>\n",
			"empty":        "",
		}
		i.Spec.ConfigMountPath = "/etc/app"
	}},
	{name: "disruption-percent", mod: func(i *linv1.Installation) {
		i.Spec.Shards = ptr.To[int32](2)
		i.Spec.Replicas = ptr.To[int32](4)
		i.Spec.Disruption.MaxUnavailable = ptr.To(intstr.FromString("25%"))
	}},
	{name: "disruption-off", mod: func(i *linv1.Installation) {
		i.Spec.Disruption.Enabled = ptr.To(false)
	}},
	{name: "rollout", mod: func(i *linv1.Installation) {
		i.Spec.Replicas = ptr.To[int32](4)
		i.Spec.Rollout = linv1.RolloutSpec{Strategy: linv1.RolloutAllShards,
			MaxUnavailable: ptr.To(intstr.FromString("50%")), ProgressDeadlineSeconds: ptr.To[int32](120), MinReadySeconds: 15}
	}},
	{name: "parallel", mod: func(i *linv1.Installation) {
		i.Spec.Replicas = ptr.To[int32](3)
		i.Spec.PodManagementPolicy = linv1.ParallelPodManagement
	}},
}

// TestChildrenGolden renders each case and compares the YAML of its children
// with testdata/<case>.golden.yaml. The case's Installation itself is kept in
// testdata/<case>.installation.yaml, so that tests outside this package (the
// operator upgrade test) can create every case on a real API server.
func TestChildrenGolden(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			inst := newInstallation(tc.mod)
			checkGolden(t, goldenPath(tc.name), render(t, inst))
			inst.APIVersion, inst.Kind = linv1.SchemeGroupVersion.String(), "Installation"
			inst.Namespace, inst.UID = "", ""
			checkGolden(t, installationPath(tc.name), inst)
		})
	}
}

// checkGolden compares the YAML of obj with the file at path, or rewrites the
// file under -update.
func checkGolden(t *testing.T, path string, obj any) {
	t.Helper()
	got, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./pkg/resources -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not what the case renders now (run go test ./pkg/resources -update if the change is meant):\n%s",
			path, firstDifference(string(want), string(got)))
	}
}

// TestGoldenFilesHaveCases keeps testdata free of golden files that no case
// checks any more.
func TestGoldenFilesHaveCases(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, tc := range goldenCases {
		known[goldenPath(tc.name)] = true
		known[installationPath(tc.name)] = true
	}
	for _, f := range files {
		if !known[f] {
			t.Errorf("%s belongs to no golden case; delete it", f)
		}
	}
}

// goldenPath is the golden file of one case's children.
func goldenPath(name string) string {
	return filepath.Join("testdata", name+".golden.yaml")
}

// installationPath is the file of one case's Installation.
func installationPath(name string) string {
	return filepath.Join("testdata", name+".installation.yaml")
}

// firstDifference shows the first line where got departs from want, with the
// lines around it.
func firstDifference(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	i := 0
	for i < len(w) && i < len(g) && w[i] == g[i] {
		i++
	}
	var b strings.Builder
	for j := max(0, i-3); j < i; j++ {
		fmt.Fprintf(&b, "  %4d   %s\n", j+1, w[j])
	}
	for j := i; j < min(len(w), i+3); j++ {
		fmt.Fprintf(&b, "- %4d   %s\n", j+1, w[j])
	}
	for j := i; j < min(len(g), i+3); j++ {
		fmt.Fprintf(&b, "+ %4d   %s\n", j+1, g[j])
	}
	return b.String()
}
