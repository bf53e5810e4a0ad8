// Package v1 is version v1 of the lin.dev API group: the Installation resource,
// one clustered, stateful application run as shards x replicas of pods.
//
// +k8s:deepcopy-gen=package
// +groupName=lin.dev
package v1
