package resources

import (
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
)

// NewStatefulSet renders the StatefulSet of one shard. Its pod template holds
// the config hash, so a config or image edit rolls the pods, while replicas
// and the peer list stay out of it, so scaling restarts no running pod.
func NewStatefulSet(inst *linv1.Installation, shard int32) *appsv1.StatefulSet {
	sts := &appsv1.StatefulSet{
		ObjectMeta: userMeta(inst, StatefulSetName(inst, shard), ShardLabels(inst, shard), ptr.Deref(inst.Spec.StatefulSets, linv1.ObjectLabels{})),
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(DesiredReplicas(inst)),
			Selector:            &metav1.LabelSelector{MatchLabels: ShardSelectorLabels(inst, shard)},
			ServiceName:         HeadlessServiceName(inst),
			PodManagementPolicy: podManagementPolicy(inst),
			UpdateStrategy:      updateStrategy(inst),
			MinReadySeconds:     inst.Spec.Rollout.MinReadySeconds,
			Template:            newPodTemplate(inst, shard),
		},
	}
	recordKeys(&sts.ObjectMeta, AnnotationPodAnnotations, inst.Spec.Pod.Annotations, map[string]string{AnnotationConfigHash: ""})
	if s := inst.Spec.Storage; s != nil {
		sts.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{newClaimTemplate(inst, shard, s)}
		sts.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
			WhenDeleted: claimRetention(reclaimPolicy(s)),
			// Scaling down (and stop, which scales to zero) never deletes
			// data: the pods come back on their old claims.
			WhenScaled: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
		}
	}
	return sts
}

// updateStrategy rolls pods with spec.rollout.maxUnavailable at a time. The
// default, 1, is left to the API server, which sets it itself: a StatefulSet
// rendered before the field existed stays the same, and no upgrade of the
// operator writes to it.
func updateStrategy(inst *linv1.Installation) appsv1.StatefulSetUpdateStrategy {
	s := appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType}
	if m := inst.Spec.Rollout.MaxUnavailable; m != nil && *m != intstr.FromInt32(1) {
		s.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{MaxUnavailable: ptr.To(*m)}
	}
	return s
}

// HoldTemplate returns desired with the pod template of live, for a shard
// that must wait for its turn in a rollout: it gets every other change
// (replicas above all) at once, and keeps its pods. Its spec hash is that of
// what it holds, so the shard is rewritten when its turn comes.
func HoldTemplate(desired, live *appsv1.StatefulSet) *appsv1.StatefulSet {
	held := desired.DeepCopy()
	held.Spec.Template = *live.Spec.Template.DeepCopy()
	delete(held.Annotations, AnnotationSpecHash)
	stampHash(&held.ObjectMeta, held.Spec)
	return held
}

// RestartedAt is the restart that shard's pods must have had: the later of
// the Installation's restart annotations for every shard and for this one,
// as written and as a time, or "" when it has neither, which leaves the
// template as it was. The values are compared as RFC 3339 times; one that
// is not a time counts as the earliest, so that it still applies alone.
func RestartedAt(inst *linv1.Installation, shard int32) (string, time.Time) {
	var at string
	var when time.Time
	for _, key := range []string{AnnotationRestartedAt, ShardRestartAnnotation(shard)} {
		v := inst.Annotations[key]
		if v == "" {
			continue
		}
		t, _ := time.Parse(time.RFC3339Nano, v)
		if at == "" || !t.Before(when) {
			at, when = v, t
		}
	}
	return at, when
}

// podManagementPolicy is spec.podManagementPolicy with its default.
func podManagementPolicy(inst *linv1.Installation) appsv1.PodManagementPolicyType {
	if inst.Spec.PodManagementPolicy == linv1.ParallelPodManagement {
		return appsv1.ParallelPodManagement
	}
	return appsv1.OrderedReadyPodManagement
}

// claimRetention maps a reclaim policy to the StatefulSet's retention policy.
func claimRetention(p linv1.ReclaimPolicy) appsv1.PersistentVolumeClaimRetentionPolicyType {
	if p == linv1.ReclaimDelete {
		return appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	}
	return appsv1.RetainPersistentVolumeClaimRetentionPolicyType
}

// newClaimTemplate renders the volume claim template of one shard.
func newClaimTemplate(inst *linv1.Installation, shard int32, s *linv1.StorageSpec) corev1.PersistentVolumeClaim {
	modes := s.AccessModes
	if len(modes) == 0 {
		modes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	return corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: DataVolume, Labels: mergeMaps(s.Labels, ShardLabels(inst, shard)),
			Annotations: mergeMaps(s.Annotations, nil)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      modes,
			StorageClassName: s.StorageClassName,
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: s.Size},
			},
		},
	}
}

// newPodTemplate renders the pod template of one shard.
func newPodTemplate(inst *linv1.Installation, shard int32) corev1.PodTemplateSpec {
	p := inst.Spec.Pod
	annotations := mergeMaps(p.Annotations, map[string]string{AnnotationConfigHash: ConfigHash(inst)})
	if at, _ := RestartedAt(inst, shard); at != "" {
		annotations[AnnotationRestartedAt] = at
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      mergeMaps(p.Labels, ShardLabels(inst, shard)),
			Annotations: annotations,
		},
		Spec: corev1.PodSpec{
			InitContainers:                inst.Spec.InitContainers,
			Containers:                    append([]corev1.Container{newContainer(inst, shard)}, inst.Spec.Containers...),
			Volumes:                       append(newVolumes(inst), inst.Spec.Volumes...),
			ImagePullSecrets:              inst.Spec.ImagePullSecrets,
			NodeSelector:                  p.NodeSelector,
			Tolerations:                   p.Tolerations,
			Affinity:                      p.Affinity,
			TopologySpreadConstraints:     p.TopologySpreadConstraints,
			SecurityContext:               p.SecurityContext,
			ServiceAccountName:            p.ServiceAccountName,
			PriorityClassName:             p.PriorityClassName,
			TerminationGracePeriodSeconds: p.TerminationGracePeriodSeconds,
		},
	}
}

// newContainer renders the application container of one shard.
func newContainer(inst *linv1.Installation, shard int32) corev1.Container {
	c := corev1.Container{
		Name:            ContainerName,
		Image:           inst.Spec.Image,
		ImagePullPolicy: inst.Spec.ImagePullPolicy,
		Command:         inst.Spec.Command,
		Args:            inst.Spec.Args,
		Env:             append(identityEnv(inst, shard), inst.Spec.Env...),
		EnvFrom:         inst.Spec.EnvFrom,
		Resources:       inst.Spec.Resources,
		ReadinessProbe:  withProbeDefaults(inst.Spec.ReadinessProbe),
		LivenessProbe:   withProbeDefaults(inst.Spec.LivenessProbe),
		StartupProbe:    withProbeDefaults(inst.Spec.StartupProbe),
		Lifecycle:       inst.Spec.Lifecycle,
		SecurityContext: inst.Spec.SecurityContext,
		VolumeMounts: []corev1.VolumeMount{
			{Name: ConfigVolume, MountPath: configMountPath(inst), ReadOnly: true},
			{Name: TopologyVolume, MountPath: TopologyMountPath, ReadOnly: true},
		},
	}
	for _, p := range inst.Spec.Ports {
		c.Ports = append(c.Ports, corev1.ContainerPort{Name: p.Name, ContainerPort: p.ContainerPort, Protocol: protocol(p)})
	}
	if s := inst.Spec.Storage; s != nil {
		mount := s.MountPath
		if mount == "" {
			mount = defaultDataMountPath
		}
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: DataVolume, MountPath: mount})
	}
	c.VolumeMounts = append(c.VolumeMounts, inst.Spec.VolumeMounts...)
	return c
}

// identityEnv tells each pod who it is. The user's env comes after it, so a
// user's variable of the same name wins.
func identityEnv(inst *linv1.Installation, shard int32) []corev1.EnvVar {
	return []corev1.EnvVar{
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		{Name: "INSTALLATION_NAME", Value: inst.Name},
		{Name: "INSTALLATION_SHARD", Value: strconv.Itoa(int(shard))},
	}
}

// newVolumes renders the config and topology volumes.
func newVolumes(inst *linv1.Installation) []corev1.Volume {
	return []corev1.Volume{
		{Name: ConfigVolume, VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: ConfigMapName(inst)}}}},
		{Name: TopologyVolume, VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: TopologyName(inst)}}}},
	}
}

// withProbeDefaults copies a probe and fills the numbers that the API server
// would default, so that the rendered template compares equal to the stored
// one and a probe never causes an update on every sync.
func withProbeDefaults(p *corev1.Probe) *corev1.Probe {
	if p == nil {
		return nil
	}
	p = p.DeepCopy()
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	return p
}
