//go:build tools

// Package tools pins CoreDNS, the cluster DNS of the real-node cluster;
// hack/build-tools.sh builds it from this module.
package tools

import _ "github.com/coredns/coredns"
