#!/usr/bin/env bash
# Runs the operator binary ($1, further arguments are its flags) in the
# foreground, for `make run`.
#
# With CLUSTER_KUBECONFIG set, it runs against that cluster. Otherwise it runs
# against the local control plane in $STATE_DIR: it reuses one that
# `make cluster-up` started (and leaves it running), or starts one itself and
# stops it again when the operator exits, so that Ctrl-C leaves nothing behind.
# With NODE=real it starts a cluster with one real node instead
# (hack/nodecluster), inside namespaces of its own (hack/node-netns.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
operator=$1
shift
state=${STATE_DIR:-.state/cluster}

if [ -n "${CLUSTER_KUBECONFIG:-}" ]; then
	exec "$operator" --kubeconfig "$CLUSTER_KUBECONFIG" "$@"
fi

# NODE=real: a cluster with one real node (containerd, kubelet), in
# namespaces of its own; Linux and root only.
if [ "${NODE:-}" = real ]; then
	hack/install-node-deps.sh
	LIN_TOOLS_BIN=$(hack/build-tools.sh)
	export LIN_TOOLS_BIN
	go build -o bin/nodecluster ./hack/nodecluster
	node_state=${NODE_STATE_DIR:-.state/node}
	mkdir -p "$node_state"
	LIN_NODE_PID_FILE=$(cd "$node_state" && pwd)/pid
	export LIN_NODE_PID_FILE
	exec hack/node-netns.sh "$PWD/bin/nodecluster" --state "$node_state" -- "$(cd "$(dirname "$operator")" && pwd)/$(basename "$operator")" "$@"
elif [ -n "${NODE:-}" ]; then
	echo "NODE=$NODE: the only other kind of node is NODE=real" >&2
	exit 2
fi

LIN_TOOLS_BIN=$(hack/build-tools.sh)
export LIN_TOOLS_BIN
go build -o bin/localcluster ./hack/localcluster

started_here=false
if kubeconfig=$(bin/localcluster status --dir "$state" 2>/dev/null); then
	echo "Using the local control plane already running in $state (make cluster-down stops it)." >&2
	# It may have been started from older CRDs.
	"$LIN_TOOLS_BIN/kubectl" --kubeconfig "$kubeconfig" apply --server-side --force-conflicts -f deploy/crds/ >/dev/null
else
	echo "Starting a local control plane in $state ..." >&2
	started_here=true
	kubeconfig=$(bin/localcluster up --dir "$state")
fi

stop_cluster() {
	if $started_here; then
		echo "Stopping the local control plane ..." >&2
		bin/localcluster down --dir "$state"
	fi
}
trap stop_cluster EXIT

cat >&2 <<MSG

The operator runs against a local control plane (fake nodes run the pods).
In another shell:

    export KUBECONFIG=$kubeconfig
    alias kubectl=$LIN_TOOLS_BIN/kubectl
    kubectl apply -f examples/minimal.yaml
    kubectl get installations -w

Ctrl-C stops the operator$($started_here && echo " and this control plane"; true).

MSG

# Ctrl-C reaches the operator too (same process group); it drains its queue
# and exits. The script waits for it instead of dying first, then cleans up.
"$operator" --kubeconfig "$kubeconfig" "$@" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null || true' INT TERM
status=0
while true; do
	wait "$pid" && status=0 || status=$?
	kill -0 "$pid" 2>/dev/null || break
done
exit "$status"
