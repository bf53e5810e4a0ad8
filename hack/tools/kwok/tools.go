//go:build tools

// Package tools pins kwok, which plays the kubelet of fake nodes in the
// cluster-mode control plane; hack/build-tools.sh builds it from this module.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
