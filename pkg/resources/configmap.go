package resources

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
)

// MaxConfigMapSize is the most data, keys included, that the API server accepts
// in one ConfigMap.
const MaxConfigMapSize = 1024 * 1024

// NewConfigMap renders the ConfigMap that holds spec.config verbatim. It fails
// with an InvalidSpecError when the files do not fit in a ConfigMap.
func NewConfigMap(inst *linv1.Installation) (*corev1.ConfigMap, error) {
	data := make(map[string]string, len(inst.Spec.Config))
	for k, v := range inst.Spec.Config {
		data[k] = v
	}
	if size := dataSize(data); size > MaxConfigMapSize {
		return nil, &InvalidSpecError{Field: "spec.config",
			Reason: fmt.Sprintf("the files take %d bytes, more than the %d a ConfigMap can hold", size, MaxConfigMapSize)}
	}
	return &corev1.ConfigMap{
		ObjectMeta: objectMeta(inst, ConfigMapName(inst), Labels(inst)),
		Data:       data,
	}, nil
}

// ConfigHash is the hash of spec.config that goes on the pod template, so a
// config edit, and nothing else, changes it.
func ConfigHash(inst *linv1.Installation) string {
	keys := make([]string, 0, len(inst.Spec.Config))
	for k := range inst.Spec.Config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		// Lengths first, so that no two different maps write the same bytes.
		fmt.Fprintf(h, "%d:%s%d:%s", len(k), k, len(inst.Spec.Config[k]), inst.Spec.Config[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Topology is the content of topology.json: where every pod of the
// installation can be reached.
type Topology struct {
	// Installation is the name of the Installation.
	Installation string `json:"installation"`
	// Namespace is its namespace.
	Namespace string `json:"namespace"`
	// Shards lists every shard with the DNS names of its pods.
	Shards []TopologyShard `json:"shards"`
	// Ports are the ports every pod listens on.
	Ports []TopologyPort `json:"ports"`
}

// TopologyShard is one shard of a Topology.
type TopologyShard struct {
	// Index of the shard.
	Index int32 `json:"index"`
	// StatefulSet is the name of the shard's StatefulSet.
	StatefulSet string `json:"statefulSet"`
	// Replicas are the stable DNS names of the shard's pods, by ordinal.
	Replicas []string `json:"replicas"`
}

// TopologyPort is one port of a Topology.
type TopologyPort struct {
	// Name of the port.
	Name string `json:"name"`
	// Port is the container port.
	Port int32 `json:"port"`
	// Protocol of the port.
	Protocol corev1.Protocol `json:"protocol"`
}

// The schema bounds spec.shards x spec.replicas so that the peer list always
// fits in its ConfigMap (a CEL rule on Installation, with these numbers):
// each pod is named twice, in topology.json and in hosts, by a name of at
// most 2 x len(metadata.name) + 86 + len(cluster domain) characters (the
// shard index of two digits, the ordinal of three, a namespace of 63), so
// with a cluster domain of at most MaxClusterDomainLength it takes at most
// 4 x len(name) + topologyBytesPerPod bytes; each shard adds at most
// 2 x len(name) + topologyBytesPerShard, and topologyBudget leaves room for
// the rest (32 ports of the longest names).
const (
	topologyBytesPerPod   = 311
	topologyBytesPerShard = 100
	topologyBudget        = 1040000
	// MaxClusterDomainLength is the longest cluster domain the bound allows
	// for; the operator refuses a longer --cluster-domain.
	MaxClusterDomainLength = 63
)

// MaxTopologyReplicas returns the most replicas per shard that the schema
// accepts for an Installation of shards shards whose name has nameLength
// characters.
func MaxTopologyReplicas(nameLength int, shards int32) int32 {
	s, n := int64(shards), int64(nameLength)
	return int32((topologyBudget - s*(2*n+topologyBytesPerShard)) / (s * (4*n + topologyBytesPerPod)))
}

// NewTopologyConfigMap renders the ConfigMap with the generated peer list. It
// lists spec.replicas pods per shard even when stopped: it describes the
// cluster as configured. It is mounted as a volume and not hashed into the pod
// template, so scaling updates it without restarting any pod.
func NewTopologyConfigMap(inst *linv1.Installation, clusterDomain string) (*corev1.ConfigMap, error) {
	topo := Topology{Installation: inst.Name, Namespace: inst.Namespace,
		Shards: []TopologyShard{}, Ports: []TopologyPort{}}
	var hosts strings.Builder
	for s := int32(0); s < Shards(inst); s++ {
		shard := TopologyShard{Index: s, StatefulSet: StatefulSetName(inst, s), Replicas: []string{}}
		for o := int32(0); o < Replicas(inst); o++ {
			fqdn := PodFQDN(inst, s, o, clusterDomain)
			shard.Replicas = append(shard.Replicas, fqdn)
			hosts.WriteString(fqdn)
			hosts.WriteByte('\n')
		}
		topo.Shards = append(topo.Shards, shard)
	}
	for _, p := range inst.Spec.Ports {
		topo.Ports = append(topo.Ports, TopologyPort{Name: p.Name, Port: p.ContainerPort, Protocol: protocol(p)})
	}
	js, err := json.MarshalIndent(topo, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", TopologyFile, err)
	}
	data := map[string]string{TopologyFile: string(js) + "\n", HostsFile: hosts.String()}
	if size := dataSize(data); size > MaxConfigMapSize {
		return nil, &InvalidSpecError{Field: "spec.shards",
			Reason: fmt.Sprintf("the peer list of %d shards x %d replicas takes %d bytes, more than the %d a ConfigMap can hold",
				Shards(inst), Replicas(inst), size, MaxConfigMapSize)}
	}
	return &corev1.ConfigMap{
		ObjectMeta: objectMeta(inst, TopologyName(inst), Labels(inst)),
		Data:       data,
	}, nil
}

// dataSize is the size of a ConfigMap's data as the API server counts it.
func dataSize(data map[string]string) int {
	n := 0
	for k, v := range data {
		n += len(k) + len(v)
	}
	return n
}
