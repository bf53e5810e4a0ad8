//go:build tools

// Package tools pins containerd, the container runtime of the real-node
// cluster: the daemon, its ctr client (to import images) and the runc shim;
// hack/build-tools.sh builds them from this module.
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
