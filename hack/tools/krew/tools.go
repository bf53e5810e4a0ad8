//go:build tools

// Package tools pins krew, the kubectl plugin manager, whose real binary
// test/plugin builds from this module to install kubectl-lin from the
// manifest and archive that make plugin writes, as a user's krew would.
package tools

import _ "sigs.k8s.io/krew/cmd/krew"
