//go:build tools

// Package tools pins local-path-provisioner, the storage provisioner of the
// real-node cluster: it binds each claim of the default StorageClass to a
// folder of the node; hack/build-tools.sh builds it from this module.
package tools

import _ "github.com/rancher/local-path-provisioner"
