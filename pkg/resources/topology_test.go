package resources

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
)

// TestThePeerListFitsAtTheSchemasBound renders the topology at the most
// replicas the schema accepts, for names of 1 to 40 characters and 1 to 64
// shards, with everything else as long as it can be (a namespace of 63
// characters, the longest cluster domain the operator accepts, 32 ports of
// the longest names): it always fits, so no spec the schema accepts makes
// the Installation Degraded for its size.
func TestThePeerListFitsAtTheSchemasBound(t *testing.T) {
	var ports []linv1.InstallationPort
	for i := range 32 {
		ports = append(ports, linv1.InstallationPort{Name: fmt.Sprintf("p%014d", i), ContainerPort: int32(65535 - i), Protocol: corev1.ProtocolSCTP})
	}
	domain := strings.Repeat("d", MaxClusterDomainLength)
	tightest := 0
	for _, n := range []int{1, 7, 20, 33, 40} {
		for _, shards := range []int32{1, 2, 11, 33, 64} {
			replicas := min(MaxTopologyReplicas(n, shards), 1000)
			inst := &linv1.Installation{}
			inst.Name, inst.Namespace = "a"+strings.Repeat("b", n-1), strings.Repeat("n", 63)
			inst.Spec.Shards, inst.Spec.Replicas, inst.Spec.Ports = ptr.To(shards), ptr.To(replicas), ports
			cm, err := NewTopologyConfigMap(inst, domain)
			if err != nil {
				t.Errorf("name of %d, %d shards x %d replicas: %v", n, shards, replicas, err)
				continue
			}
			if size := dataSize(cm.Data); size > tightest {
				tightest = size
			}
		}
	}
	t.Logf("largest peer list at the bound: %d bytes of %d", tightest, MaxConfigMapSize)
}
