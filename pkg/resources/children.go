package resources

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
)

// Children are all the objects an Installation should have, each stamped with
// the hash of its rendering (AnnotationSpecHash).
type Children struct {
	// ConfigMaps are the config and the topology ConfigMaps.
	ConfigMaps []*corev1.ConfigMap
	// Services are the headless Service and, when spec.ports has one, the
	// client Service.
	Services []*corev1.Service
	// StatefulSets are the shards' StatefulSets, by shard index.
	StatefulSets []*appsv1.StatefulSet
	// PodDisruptionBudgets are the shards' budgets, by shard index; none
	// when spec.disruption.enabled is false.
	PodDisruptionBudgets []*policyv1.PodDisruptionBudget
}

// NewChildren renders every child of inst. It fails with an InvalidSpecError
// when the spec cannot be rendered; then no child should be written.
func NewChildren(inst *linv1.Installation, clusterDomain string) (*Children, error) {
	config, err := NewConfigMap(inst)
	if err != nil {
		return nil, err
	}
	topology, err := NewTopologyConfigMap(inst, clusterDomain)
	if err != nil {
		return nil, err
	}
	c := &Children{
		ConfigMaps: []*corev1.ConfigMap{config, topology},
		Services:   []*corev1.Service{NewHeadlessService(inst)},
	}
	if HasClientService(inst) {
		c.Services = append(c.Services, NewClientService(inst))
	}
	for s := int32(0); s < Shards(inst); s++ {
		c.StatefulSets = append(c.StatefulSets, NewStatefulSet(inst, s))
		if DisruptionBudgets(inst) {
			c.PodDisruptionBudgets = append(c.PodDisruptionBudgets, NewPodDisruptionBudget(inst, s))
		}
	}
	for _, cm := range c.ConfigMaps {
		stampHash(&cm.ObjectMeta, cm.Data)
	}
	for _, svc := range c.Services {
		stampHash(&svc.ObjectMeta, svc.Spec)
	}
	for _, sts := range c.StatefulSets {
		stampHash(&sts.ObjectMeta, sts.Spec)
	}
	for _, pdb := range c.PodDisruptionBudgets {
		stampHash(&pdb.ObjectMeta, pdb.Spec)
	}
	return c, nil
}

// stampHash records the hash of content, with the object's labels and
// annotations, in AnnotationSpecHash. A child whose annotation differs was
// rendered from another spec and is updated even where the fields the
// operator compares agree (a field removed from the spec, say).
func stampHash(meta *metav1.ObjectMeta, content any) {
	h := sha256.New()
	// Encoding these types cannot fail: they hold no channels, funcs or cycles.
	_ = json.NewEncoder(h).Encode([]any{meta.Labels, meta.Annotations, content})
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Annotations[AnnotationSpecHash] = hex.EncodeToString(h.Sum(nil))[:16]
}

// Object is a Kubernetes object with metadata, as every child is.
type Object interface {
	metav1.Object
	runtime.Object
}

// Objects lists every child: ConfigMaps, then Services, then StatefulSets,
// then PodDisruptionBudgets.
func (c *Children) Objects() []Object {
	var objs []Object
	for _, o := range c.ConfigMaps {
		objs = append(objs, o)
	}
	for _, o := range c.Services {
		objs = append(objs, o)
	}
	for _, o := range c.StatefulSets {
		objs = append(objs, o)
	}
	for _, o := range c.PodDisruptionBudgets {
		objs = append(objs, o)
	}
	return objs
}
