package fuzz

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
)

// This file maps fuzz bytes onto an Installation. Fields that the CRD
// validates itself (names, ports, config keys, counts) get arbitrary values
// as often as likely ones, so that the schema's bounds are explored. Fields
// passed to the pods as they are, which the schema cannot check (labels,
// tolerations, probes, resources...), get values that are valid on their
// own: an invalid one is refused by the API server whatever the operator
// does, and the bad-input table of test/chaos shows that it ends Degraded.

// source hands out the fuzz bytes; once they run out it gives zeros, which
// pick the first, most ordinary, choice everywhere.
type source struct{ data []byte }

// byte returns the next byte.
func (s *source) byte() byte {
	if len(s.data) == 0 {
		return 0
	}
	b := s.data[0]
	s.data = s.data[1:]
	return b
}

// intn returns a number in [0, n), n at most 65536.
func (s *source) intn(n int) int { return (int(s.byte())<<8 | int(s.byte())) % n }

// chance reports true one time in n.
func (s *source) chance(n int) bool { return s.intn(n) == n-1 }

// raw returns a string of up to n arbitrary bytes.
func (s *source) raw(n int) string {
	b := make([]byte, s.intn(n+1))
	for i := range b {
		b[i] = s.byte()
	}
	return string(b)
}

// choose returns one of options.
func choose[T any](s *source, options ...T) T { return options[s.intn(len(options))] }

// pick returns one of options or, one time in eight, a string of up to raw
// arbitrary bytes.
func pick[T ~string](s *source, raw int, options ...T) T {
	if s.chance(8) {
		return T(s.raw(raw))
	}
	return choose(s, options...)
}

// small returns a number in [lo, hi], most often near lo.
func (s *source) small(lo, hi int) int {
	if s.chance(8) {
		return lo + s.intn(hi-lo+1)
	}
	return lo + s.intn(min(4, hi-lo+1))
}

// stringMap returns up to n entries from the vocabularies of keys and values.
func stringMap(s *source, n int, keys, values []string) map[string]string {
	count := s.intn(n + 1)
	if count == 0 {
		return nil
	}
	m := map[string]string{}
	for range count {
		m[choose(s, keys...)] = choose(s, values...)
	}
	return m
}

// Vocabularies of valid values for the fields passed through to pods.
var (
	labelKeys      = []string{"team", "app.kubernetes.io/part-of", "example.com/tier", "lin.dev/installation", "a"}
	labelValues    = []string{"", "payments", "v1.2.3", "a-b_c.d", strings.Repeat("x", 63)}
	annotationVals = []string{"", "true", "some text with spaces", `{"json": [1, 2]}`}
	images         = []string{"nginx:1.27", "example.com/app:1", "registry.local:5000/team/app@sha256:" + strings.Repeat("ab", 32)}
	quantities     = []string{"100m", "1", "2", "64Mi", "1Gi"}
)

// newInstallation maps data onto an Installation in namespace ns.
func newInstallation(ns string, data []byte) *linv1.Installation {
	s := &source{data: data}
	inst := &linv1.Installation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pick(s, 45, "demo", "a", "x-1", strings.Repeat("n", 40))},
		Spec: linv1.InstallationSpec{
			Image:               choose(s, images...),
			ImagePullPolicy:     choose(s, "", corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever),
			Replicas:            ptr.To(int32(s.small(0, 1001))),
			Shards:              ptr.To(int32(s.small(1, 65))),
			Ports:               newPorts(s),
			Config:              newConfig(s),
			ConfigMountPath:     choose(s, "", "/etc/installation", "/config", "/etc/app/conf.d"),
			PodManagementPolicy: choose(s, "", linv1.OrderedReadyPodManagement, linv1.ParallelPodManagement),
			Stop:                s.chance(4),
			Paused:              s.chance(8),
			Command:             rawList(s),
			Args:                rawList(s),
			Env:                 newEnv(s),
			Resources:           newResources(s),
			Service: linv1.ServiceSpec{
				Type:        choose(s, "", corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer),
				Labels:      stringMap(s, 2, labelKeys, labelValues),
				Annotations: stringMap(s, 2, labelKeys, annotationVals),
			},
			Pod: newPodSettings(s),
		},
	}
	if s.chance(2) {
		inst.Spec.Storage = newStorage(s)
	}
	inst.Spec.ReadinessProbe = newProbe(s, inst.Spec.Ports, true)
	inst.Spec.LivenessProbe = newProbe(s, inst.Spec.Ports, false)
	inst.Spec.StartupProbe = newProbe(s, inst.Spec.Ports, false)
	inst.Spec.Disruption = newDisruption(s)
	inst.Spec.Rollout = newRollout(s)
	return inst
}

// newRollout returns rollout settings, some of them out of range.
func newRollout(s *source) linv1.RolloutSpec {
	r := linv1.RolloutSpec{Strategy: choose(s, "", linv1.RolloutShardByShard, linv1.RolloutAllShards)}
	switch s.intn(3) {
	case 1:
		r.MaxUnavailable = ptr.To(intstr.FromInt32(int32(s.small(0, 4))))
	case 2:
		r.MaxUnavailable = ptr.To(intstr.FromString(choose(s, "1%", "50%", "100%", "0%")))
	}
	if s.chance(2) {
		r.ProgressDeadlineSeconds = ptr.To(int32(s.small(0, 1000)))
	}
	return r
}

// newDisruption returns budget settings: on, off or unset, with a number,
// a percentage (one of them out of range) or nothing.
func newDisruption(s *source) linv1.DisruptionSpec {
	d := linv1.DisruptionSpec{Enabled: choose(s, nil, ptr.To(true), ptr.To(false))}
	switch s.intn(3) {
	case 1:
		d.MaxUnavailable = ptr.To(intstr.FromInt32(int32(s.small(0, 4))))
	case 2:
		d.MaxUnavailable = ptr.To(intstr.FromString(choose(s, "0%", "25%", "100%", "150%")))
	}
	return d
}

// newPorts returns one to four ports, most often with distinct names and
// numbers in range.
func newPorts(s *source) []linv1.InstallationPort {
	names := []string{"http", "grpc", "metrics", "a1", "x-y"}
	first := s.intn(len(names))
	ports := make([]linv1.InstallationPort, 1+s.intn(4))
	for i := range ports {
		ports[i] = linv1.InstallationPort{
			Name:          pick(s, 17, names[(first+i)%len(names)]),
			ContainerPort: int32(1 + s.intn(65535)),
			Protocol:      choose(s, "", corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP),
		}
		if s.chance(16) {
			ports[i].ContainerPort = int32(s.intn(65537))
		}
		if s.chance(3) {
			ports[i].ServicePort = int32(s.intn(65537))
		}
	}
	return ports
}

// newConfig returns up to three files.
func newConfig(s *source) map[string]string {
	n := s.intn(4)
	if n == 0 {
		return nil
	}
	config := map[string]string{}
	for range n {
		config[pick(s, 20, "app.conf", "config.xml", ".hidden", "a_b-c.d")] = s.raw(64)
	}
	return config
}

// rawList returns up to two arbitrary strings.
func rawList(s *source) []string {
	var out []string
	for range s.intn(3) {
		out = append(out, s.raw(16))
	}
	return out
}

// newEnv returns up to two variables, one of which may override an identity variable.
func newEnv(s *source) []corev1.EnvVar {
	var out []corev1.EnvVar
	for range s.intn(3) {
		out = append(out, corev1.EnvVar{Name: choose(s, "LOG_LEVEL", "A", "POD_NAME", "java.opts"), Value: s.raw(16)})
	}
	return out
}

// newResources returns requests no larger than the limits.
func newResources(s *source) corev1.ResourceRequirements {
	if !s.chance(2) {
		return corev1.ResourceRequirements{}
	}
	req := s.intn(len(quantities) - 2)
	r := corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(quantities[req]),
		corev1.ResourceMemory: resource.MustParse(quantities[len(quantities)-2]),
	}}
	if s.chance(2) {
		r.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(quantities[req+s.intn(len(quantities)-2-req)])}
	}
	return r
}

// newStorage returns a storage spec.
func newStorage(s *source) *linv1.StorageSpec {
	st := &linv1.StorageSpec{
		Size:          resource.MustParse(choose(s, "1Gi", "500Mi", "10G", "1")),
		MountPath:     choose(s, "", "/var/lib/installation", "/data", "/config"),
		ReclaimPolicy: choose(s, "", linv1.ReclaimRetain, linv1.ReclaimDelete),
	}
	if s.chance(2) {
		st.StorageClassName = ptr.To(choose(s, "", "standard", "fast-ssd"))
	}
	modes := []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOncePod}
	for _, m := range modes {
		if s.chance(3) {
			st.AccessModes = append(st.AccessModes, m)
		}
	}
	return st
}

// newPodSettings returns pod settings valid on their own.
func newPodSettings(s *source) linv1.PodSettings {
	p := linv1.PodSettings{
		Labels:             stringMap(s, 2, labelKeys, labelValues),
		Annotations:        stringMap(s, 2, labelKeys, annotationVals),
		NodeSelector:       stringMap(s, 1, labelKeys, labelValues),
		ServiceAccountName: choose(s, "", "default", "app-runner"),
	}
	if s.chance(3) {
		p.TerminationGracePeriodSeconds = ptr.To(int64(s.intn(3600)))
	}
	if s.chance(3) {
		p.Tolerations = []corev1.Toleration{choose(s,
			corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "db", Effect: corev1.TaintEffectNoSchedule},
			corev1.Toleration{Operator: corev1.TolerationOpExists},
			corev1.Toleration{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists,
				Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](30)},
		)}
	}
	if s.chance(3) {
		p.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To(int64(s.intn(65536))), RunAsNonRoot: ptr.To(s.chance(2)),
			FSGroup: ptr.To(int64(s.intn(65536)))}
	}
	if s.chance(4) {
		p.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: int32(1 + s.intn(3)),
			TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.ScheduleAnyway}}
	}
	return p
}

// newProbe returns nil or a probe on one of ports; only a readiness probe may
// need more than one success, as the API server requires.
func newProbe(s *source, ports []linv1.InstallationPort, readiness bool) *corev1.Probe {
	if !s.chance(3) {
		return nil
	}
	port := choose(s, ports...)
	target := intstr.FromString(port.Name)
	if s.chance(2) {
		target = intstr.FromInt32(max(1, port.ContainerPort))
	}
	p := &corev1.Probe{
		TimeoutSeconds:      int32(s.intn(10)),
		PeriodSeconds:       int32(s.intn(60)),
		FailureThreshold:    int32(s.intn(10)),
		InitialDelaySeconds: int32(s.intn(30)),
	}
	if readiness {
		p.SuccessThreshold = int32(s.intn(4))
	}
	switch s.intn(4) {
	case 0:
		p.HTTPGet = &corev1.HTTPGetAction{Path: "/healthz", Port: target}
	case 1:
		p.TCPSocket = &corev1.TCPSocketAction{Port: target}
	case 2:
		p.Exec = &corev1.ExecAction{Command: []string{"true"}}
	default:
		p.GRPC = &corev1.GRPCAction{Port: max(1, port.ContainerPort)}
	}
	return p
}
