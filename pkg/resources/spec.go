package resources

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
)

// The API server applies the CRD's defaults, but the builders do not rely on
// it: an object read from an older CRD, or made in a test, may lack them.
const (
	defaultConfigMountPath = "/etc/installation"
	defaultDataMountPath   = "/var/lib/installation"
)

// Replicas is spec.replicas, 1 when unset.
func Replicas(inst *linv1.Installation) int32 {
	if inst.Spec.Replicas == nil {
		return 1
	}
	return *inst.Spec.Replicas
}

// Shards is spec.shards, 1 when unset.
func Shards(inst *linv1.Installation) int32 {
	if inst.Spec.Shards == nil {
		return 1
	}
	return *inst.Spec.Shards
}

// DesiredReplicas is the number of pods each shard should run now: zero when
// the installation is stopped.
func DesiredReplicas(inst *linv1.Installation) int32 {
	if inst.Spec.Stop {
		return 0
	}
	return Replicas(inst)
}

// ServicePort is the port a Service exposes for p: servicePort, or containerPort when unset.
func ServicePort(p linv1.InstallationPort) int32 {
	if p.ServicePort == 0 {
		return p.ContainerPort
	}
	return p.ServicePort
}

// protocol is the protocol of p, TCP when unset.
func protocol(p linv1.InstallationPort) corev1.Protocol {
	if p.Protocol == "" {
		return corev1.ProtocolTCP
	}
	return p.Protocol
}

// configMountPath is spec.configMountPath with its default.
func configMountPath(inst *linv1.Installation) string {
	if inst.Spec.ConfigMountPath == "" {
		return defaultConfigMountPath
	}
	return inst.Spec.ConfigMountPath
}

// RolloutStrategy is spec.rollout.strategy, ShardByShard when unset.
func RolloutStrategy(inst *linv1.Installation) linv1.RolloutStrategy {
	if inst.Spec.Rollout.Strategy == "" {
		return linv1.RolloutShardByShard
	}
	return inst.Spec.Rollout.Strategy
}

// ProgressDeadline is spec.rollout.progressDeadlineSeconds, 600 s when unset.
func ProgressDeadline(inst *linv1.Installation) time.Duration {
	return time.Duration(ptr.Deref(inst.Spec.Rollout.ProgressDeadlineSeconds, 600)) * time.Second
}

// reclaimPolicy is spec.storage.reclaimPolicy with its default.
func reclaimPolicy(s *linv1.StorageSpec) linv1.ReclaimPolicy {
	if s.ReclaimPolicy == "" {
		return linv1.ReclaimRetain
	}
	return s.ReclaimPolicy
}

// OwnerReference is the controller owner reference that every child carries,
// so that garbage collection deletes the children with their Installation.
func OwnerReference(inst *linv1.Installation) metav1.OwnerReference {
	return *metav1.NewControllerRef(inst, linv1.SchemeGroupVersion.WithKind("Installation"))
}

// objectMeta is the metadata of a child of inst.
func objectMeta(inst *linv1.Installation, name string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            name,
		Namespace:       inst.Namespace,
		Labels:          labels,
		OwnerReferences: []metav1.OwnerReference{OwnerReference(inst)},
	}
}
