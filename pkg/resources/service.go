package resources

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
)

// NewHeadlessService renders the governing Service of every shard: it gives
// each pod its stable DNS name, ready or not, so peers can find each other
// while they start.
func NewHeadlessService(inst *linv1.Installation) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: objectMeta(inst, HeadlessServiceName(inst), Labels(inst)),
		Spec: corev1.ServiceSpec{
			Type:                     corev1.ServiceTypeClusterIP,
			ClusterIP:                corev1.ClusterIPNone,
			PublishNotReadyAddresses: true,
			Selector:                 SelectorLabels(inst),
			Ports:                    servicePorts(inst),
		},
	}
}

// NewClientService renders the Service that clients connect to, with the type,
// labels and annotations of spec.service. The operator's own labels win over
// the user's, so the child stays recognisable.
func NewClientService(inst *linv1.Installation) *corev1.Service {
	labels := mergeMaps(inst.Spec.Service.Labels, Labels(inst))
	meta := objectMeta(inst, ClientServiceName(inst), labels)
	meta.Annotations = mergeMaps(inst.Spec.Service.Annotations, nil)
	recordKeys(&meta, AnnotationSpecLabels, inst.Spec.Service.Labels, Labels(inst))
	recordKeys(&meta, AnnotationSpecAnnotations, inst.Spec.Service.Annotations, nil)
	svcType := inst.Spec.Service.Type
	if svcType == "" {
		svcType = corev1.ServiceTypeClusterIP
	}
	return &corev1.Service{
		ObjectMeta: meta,
		Spec: corev1.ServiceSpec{
			Type:     svcType,
			Selector: SelectorLabels(inst),
			Ports:    servicePorts(inst),
		},
	}
}

// servicePorts are the Service ports of spec.ports, each aimed at its
// container port by name.
func servicePorts(inst *linv1.Installation) []corev1.ServicePort {
	ports := make([]corev1.ServicePort, 0, len(inst.Spec.Ports))
	for _, p := range inst.Spec.Ports {
		ports = append(ports, corev1.ServicePort{
			Name:       p.Name,
			Protocol:   protocol(p),
			Port:       ServicePort(p),
			TargetPort: intstr.FromString(p.Name),
		})
	}
	return ports
}

// recordKeys lists the keys of the user's map, sorted, in the annotation
// named key of meta, but those that the operator's own entries override; it
// adds nothing when that leaves none.
func recordKeys(meta *metav1.ObjectMeta, key string, user, own map[string]string) {
	var keys []string
	for _, k := range slices.Sorted(maps.Keys(user)) {
		if _, ok := own[k]; !ok {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return
	}
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Annotations[key] = strings.Join(keys, ",")
}

// RecordedKeys returns the keys that the annotation named key of meta lists.
func RecordedKeys(meta *metav1.ObjectMeta, key string) []string {
	if v := meta.Annotations[key]; v != "" {
		return strings.Split(v, ",")
	}
	return nil
}

// mergeMaps returns a new map with the entries of base overlaid by those of
// over; nil when both are empty.
func mergeMaps(base, over map[string]string) map[string]string {
	if len(base)+len(over) == 0 {
		return nil
	}
	m := make(map[string]string, len(base)+len(over))
	for k, v := range base {
		m[k] = v
	}
	for k, v := range over {
		m[k] = v
	}
	return m
}
