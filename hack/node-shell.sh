#!/usr/bin/env bash
# node-shell.sh [COMMAND [ARG...]]: runs COMMAND (or a shell) inside the
# namespaces of the real-node cluster that `make run NODE=real` runs, with
# KUBECONFIG set to its kubeconfig and the cluster's tools (kubectl, helm,
# ctr) on PATH. Its network is not reachable from the machine's own
# namespace by design: this is the way in. Needs root, like the cluster.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
state=${NODE_STATE_DIR:-$root/.state/node}
pid=$(cat "$state/pid" 2>/dev/null) || {
	echo "no real-node cluster is running (no $state/pid); start one with: make run NODE=real" >&2
	exit 1
}
bin=$("$root/hack/build-tools.sh" 2>/dev/null)
[ $# -gt 0 ] || set -- bash
# nsenter -m loses the working directory; the paths here are absolute.
exec nsenter --target "$pid" --net --mount -- \
	env KUBECONFIG="$state/kubeconfig" PATH="$bin:$PATH" CONTAINERD_ADDRESS=/run/lin-node/containerd/containerd.sock \
	CONTAINERD_NAMESPACE=k8s.io "$@"
