package resources

import (
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
)

// defaultMaxUnavailable is spec.disruption.maxUnavailable when unset: one
// pod of a shard at a time, which keeps a replicated shard serving.
var defaultMaxUnavailable = intstr.FromInt32(1)

// DisruptionBudgets reports whether each shard gets a PodDisruptionBudget:
// spec.disruption.enabled, true when unset.
func DisruptionBudgets(inst *linv1.Installation) bool {
	return ptr.Deref(inst.Spec.Disruption.Enabled, true)
}

// NewPodDisruptionBudget renders the PodDisruptionBudget of one shard. It is
// per shard, not per Installation, because each shard holds its own copy of
// the data: a drain may take one pod of every shard at once, never two of one.
// A pod that is not Ready may always be evicted (AlwaysAllow), so that a
// crash-looping pod cannot block a drain, and evicting it takes nothing down.
func NewPodDisruptionBudget(inst *linv1.Installation, shard int32) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: objectMeta(inst, StatefulSetName(inst, shard), ShardLabels(inst, shard)),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable:             ptr.To(ptr.Deref(inst.Spec.Disruption.MaxUnavailable, defaultMaxUnavailable)),
			Selector:                   &metav1.LabelSelector{MatchLabels: ShardSelectorLabels(inst, shard)},
			UnhealthyPodEvictionPolicy: ptr.To(policyv1.AlwaysAllow),
		},
	}
}
