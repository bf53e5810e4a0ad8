package resources

import (
	"fmt"
	"strconv"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
)

// Label keys and values that every child carries.
const (
	LabelName         = "app.kubernetes.io/name"
	LabelInstance     = "app.kubernetes.io/instance"
	LabelManagedBy    = "app.kubernetes.io/managed-by"
	LabelInstallation = "lin.dev/installation"
	LabelShard        = "lin.dev/shard"

	// NameValue is the app.kubernetes.io/name of every child.
	NameValue = "installation"
	// ManagedByValue is the app.kubernetes.io/managed-by of every child; the
	// operator's informers watch only objects that carry it.
	ManagedByValue = "lin-operator"
)

// Annotation keys that the operator writes.
const (
	// AnnotationConfigHash on the pod template holds the hash of spec.config, so
	// that a config edit changes the template and rolls the pods.
	AnnotationConfigHash = "lin.dev/config-hash"
	// AnnotationSpecHash on a child holds the hash of what the operator rendered
	// for it, so that a field removed from the spec is removed from the child too.
	AnnotationSpecHash = "lin.dev/spec-hash"
	// AnnotationSpecLabels and AnnotationSpecAnnotations on a child list,
	// comma-separated, the keys of the labels and annotations it carries from
	// the spec (spec.service), as kubectl apply's last-applied annotation
	// does: a key removed from the spec is removed from the child, while keys
	// that others added stay. Absent when the spec sets none.
	AnnotationSpecLabels      = "lin.dev/spec-labels"
	AnnotationSpecAnnotations = "lin.dev/spec-annotations"
	// AnnotationPodAnnotations on a StatefulSet lists the keys of the pod
	// template annotations that come from spec.pod.annotations. It is kept on
	// the StatefulSet, not on the template, so that it never restarts a pod.
	AnnotationPodAnnotations = "lin.dev/pod-annotations"
	// AnnotationRestartedAt on an Installation asks for a rolling restart
	// of every shard, and ShardRestartAnnotation for one shard alone, as
	// kubectl rollout restart does for a Deployment: the operator carries
	// the later of the two values into the shard's pod template under this
	// key, which rolls the shard's pods through the rollout strategy and the
	// disruption budget. No pod is deleted for it. kubectl lin restart
	// writes them, as RFC 3339 times in UTC, which sort as they compare.
	AnnotationRestartedAt = "lin.dev/restarted-at"
)

// ShardRestartAnnotation is the annotation of an Installation that asks for
// a rolling restart of one shard (see AnnotationRestartedAt).
func ShardRestartAnnotation(shard int32) string {
	return AnnotationRestartedAt + "-shard-" + strconv.Itoa(int(shard))
}

// Names and paths inside the pods.
const (
	// ContainerName is the name of the application container.
	ContainerName = "app"
	// ConfigVolume is the volume of the config ConfigMap.
	ConfigVolume = "config"
	// TopologyVolume is the volume of the topology ConfigMap.
	TopologyVolume = "topology"
	// TopologyMountPath is where topology.json and hosts are mounted.
	TopologyMountPath = "/etc/lin-topology"
	// DataVolume is the name of the volume claim template.
	DataVolume = "data"
	// TopologyFile and HostsFile are the keys of the topology ConfigMap.
	TopologyFile = "topology.json"
	// HostsFile lists one pod FQDN a line.
	HostsFile = "hosts"
)

// ManagedBySelector selects every object the operator manages.
const ManagedBySelector = LabelManagedBy + "=" + ManagedByValue

// ConfigMapName is the name of the ConfigMap holding spec.config.
func ConfigMapName(inst *linv1.Installation) string { return inst.Name + "-config" }

// TopologyName is the name of the ConfigMap holding the peer list.
func TopologyName(inst *linv1.Installation) string { return inst.Name + "-topology" }

// HeadlessServiceName is the name of the governing Service of every shard.
func HeadlessServiceName(inst *linv1.Installation) string { return inst.Name + "-headless" }

// ClientServiceName is the name of the client Service.
func ClientServiceName(inst *linv1.Installation) string { return inst.Name }

// StatefulSetName is the name of the StatefulSet of one shard.
func StatefulSetName(inst *linv1.Installation, shard int32) string {
	return fmt.Sprintf("%s-%d", inst.Name, shard)
}

// PodFQDN is the stable DNS name of one pod.
func PodFQDN(inst *linv1.Installation, shard, ordinal int32, clusterDomain string) string {
	return fmt.Sprintf("%s-%d.%s.%s.svc.%s", StatefulSetName(inst, shard), ordinal,
		HeadlessServiceName(inst), inst.Namespace, clusterDomain)
}

// HasClientService reports whether inst has a client Service: only with a
// port to serve, for a Service that is not headless needs one.
func HasClientService(inst *linv1.Installation) bool { return len(inst.Spec.Ports) > 0 }

// Endpoint is the DNS name of the client Service; empty when there is none.
func Endpoint(inst *linv1.Installation, clusterDomain string) string {
	if !HasClientService(inst) {
		return ""
	}
	return fmt.Sprintf("%s.%s.svc.%s", ClientServiceName(inst), inst.Namespace, clusterDomain)
}

// Labels are the labels of every child of inst.
func Labels(inst *linv1.Installation) map[string]string {
	return map[string]string{
		LabelName:         NameValue,
		LabelInstance:     inst.Name,
		LabelManagedBy:    ManagedByValue,
		LabelInstallation: inst.Name,
	}
}

// ShardLabels are the labels of the objects of one shard.
func ShardLabels(inst *linv1.Installation, shard int32) map[string]string {
	l := Labels(inst)
	l[LabelShard] = strconv.Itoa(int(shard))
	return l
}

// SelectorLabels select every pod of inst.
func SelectorLabels(inst *linv1.Installation) map[string]string {
	return map[string]string{LabelInstallation: inst.Name}
}

// ShardSelectorLabels select the pods of one shard. They never change, because
// a StatefulSet's selector cannot.
func ShardSelectorLabels(inst *linv1.Installation, shard int32) map[string]string {
	return map[string]string{LabelInstallation: inst.Name, LabelShard: strconv.Itoa(int(shard))}
}

// Selector is the label selector string of every pod of inst, for status.selector.
func Selector(inst *linv1.Installation) string {
	return LabelInstallation + "=" + inst.Name
}
