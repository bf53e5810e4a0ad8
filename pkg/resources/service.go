package resources

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
)

// NewHeadlessService renders the governing Service of every shard: it gives
// each pod its stable DNS name, ready or not, so peers can find each other
// while they start.
func NewHeadlessService(inst *linv1.Installation) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: userMeta(inst, HeadlessServiceName(inst), Labels(inst), ptr.Deref(inst.Spec.HeadlessService, linv1.ObjectLabels{})),
		Spec: corev1.ServiceSpec{
			Type:                     corev1.ServiceTypeClusterIP,
			ClusterIP:                corev1.ClusterIPNone,
			PublishNotReadyAddresses: true,
			Selector:                 SelectorLabels(inst),
			Ports:                    servicePorts(inst, false),
		},
	}
}

// NewClientService renders the Service that clients connect to, with the
// type, labels, annotations and load balancer settings of spec.service.
func NewClientService(inst *linv1.Installation) *corev1.Service {
	svc := inst.Spec.Service
	svcType := svc.Type
	if svcType == "" {
		svcType = corev1.ServiceTypeClusterIP
	}
	return &corev1.Service{
		ObjectMeta: userMeta(inst, ClientServiceName(inst), Labels(inst),
			linv1.ObjectLabels{Labels: svc.Labels, Annotations: svc.Annotations}),
		Spec: corev1.ServiceSpec{
			Type:                     svcType,
			Selector:                 SelectorLabels(inst),
			Ports:                    servicePorts(inst, true),
			ExternalTrafficPolicy:    svc.ExternalTrafficPolicy,
			LoadBalancerSourceRanges: svc.LoadBalancerSourceRanges,
			LoadBalancerClass:        svc.LoadBalancerClass,
		},
	}
}

// userMeta renders the metadata of a child with the operator's labels own
// and the user's labels and annotations, recording the user's keys so that
// those removed from the spec are removed from the child. The operator's own
// labels win, so the child stays recognisable.
func userMeta(inst *linv1.Installation, name string, own map[string]string, user linv1.ObjectLabels) metav1.ObjectMeta {
	meta := objectMeta(inst, name, mergeMaps(user.Labels, own))
	meta.Annotations = mergeMaps(user.Annotations, nil)
	recordKeys(&meta, AnnotationSpecLabels, user.Labels, own)
	recordKeys(&meta, AnnotationSpecAnnotations, user.Annotations, nil)
	return meta
}

// servicePorts are the Service ports of spec.ports, each aimed at its
// container port by name; those of the client Service carry the node ports
// that spec.ports fixes.
func servicePorts(inst *linv1.Installation, client bool) []corev1.ServicePort {
	ports := make([]corev1.ServicePort, 0, len(inst.Spec.Ports))
	for _, p := range inst.Spec.Ports {
		sp := corev1.ServicePort{
			Name:       p.Name,
			Protocol:   protocol(p),
			Port:       ServicePort(p),
			TargetPort: intstr.FromString(p.Name),
		}
		if client {
			sp.NodePort = p.NodePort
		}
		ports = append(ports, sp)
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
