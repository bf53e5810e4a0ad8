#!/usr/bin/env bash
# node-netns.sh COMMAND [ARG...]: runs COMMAND in network, mount and PID
# namespaces of its own, where the real-node cluster of test/node lives.
#
# The network namespace holds loopback and the bridge lin0 (10.244.0.1/24,
# the node's address and the pods' gateway), a route of the Service range to
# it, and no interface to the outside, so that no packet of a test or a pod
# can leave the machine. Everything a run makes there (links, addresses,
# iptables rules, forwarding) goes with the namespace.
#
# The mount namespace hides the machine's /run, /var/lib and /var/log behind
# empty tmpfs mounts, so that kubelet, containerd and the CNI plugins write
# nothing outside it (TMPDIR is there too), and puts files over the three sysctls kubelet insists on
# setting (vm.overcommit_memory, kernel.panic, kernel.panic_on_oops), which
# are the machine's own, not a namespace's.
#
# The PID namespace ends every process of the run, container shims included,
# when COMMAND ends or this script is killed (unshare --kill-child). What the
# kernel keeps after that is the cgroup folders kubelet made under the cgroup
# root named by LIN_NODE_CGROUP_ROOT; this script removes them afterwards,
# and those of earlier runs that were killed before they could.
#
# With LIN_NODE_PID_FILE set, it writes there the pid through which
# hack/node-shell.sh enters the namespaces, and removes the file at the end.
#
# It needs Linux and root. The build happens before, outside: there is no
# module proxy inside.
set -euo pipefail

# The node's bridge, its address and the cluster's ranges; test/node reads
# them from the environment.
bridge=lin0
node_ip=10.244.0.1
pod_cidr=10.244.0.0/24
service_cidr=10.96.0.0/16
cgroup_prefix=lin-node-

log() { printf '[node-netns] %s\n' "$*" >&2; }

# remove_cgroups NAME: removes the folder NAME, and all under it, from every
# cgroup hierarchy, deepest first; a folder with a process left is kept.
remove_cgroups() {
	local name=$1 dir
	for dir in /sys/fs/cgroup/*/"$name" /sys/fs/cgroup/"$name"; do
		[ -d "$dir" ] || continue
		for _ in 1 2 3 4 5 6 7 8 9 10; do
			find "$dir" -depth -type d -exec rmdir {} + 2>/dev/null || true
			[ -d "$dir" ] || break
			# The kernel frees a cgroup shortly after its last process.
			sleep 0.5
		done
		[ -d "$dir" ] && log "could not remove cgroup $dir"
	done
	return 0
}

inside() {
	ip link set lo up
	ip link add "$bridge" type bridge
	ip addr add "$node_ip/${pod_cidr#*/}" dev "$bridge"
	ip link set "$bridge" up
	ip route add "$service_cidr" dev "$bridge"
	# These are the network namespace's own.
	echo 1 >/proc/sys/net/ipv4/ip_forward
	echo 1 >/proc/sys/net/bridge/bridge-nf-call-iptables

	local dir
	for dir in /run /var/lib /var/log; do
		mount -t tmpfs -o mode=0755 tmpfs "$dir"
	done
	# Volume mounts that kubelet makes under its root must reach the
	# containers that runc starts.
	mount --make-rshared /var/lib
	mkdir -p /run/lin-node/sysctl
	local sysctl value
	for sysctl in vm/overcommit_memory=1 kernel/panic=10 kernel/panic_on_oops=1; do
		value=${sysctl#*=}
		sysctl=${sysctl%=*}
		echo "$value" >"/run/lin-node/sysctl/${sysctl//\//.}"
		mount --bind "/run/lin-node/sysctl/${sysctl//\//.}" "/proc/sys/$sysctl"
	done

	export LIN_NODE_NETNS=1 LIN_NODE_IP=$node_ip LIN_NODE_BRIDGE=$bridge \
		LIN_NODE_POD_CIDR=$pod_cidr LIN_NODE_SERVICE_CIDR=$service_cidr \
		KUBECACHEDIR=/run/lin-node/kube-cache TMPDIR=/run/lin-node/tmp
	mkdir -p "$TMPDIR"
	# This shell is the namespace's init: it reaps the orphans (exited
	# container shims) and passes signals on.
	"$@" &
	local child=$!
	trap 'kill -TERM $child 2>/dev/null' TERM INT
	local rc=0
	while :; do
		wait "$child" && rc=0 || rc=$?
		kill -0 "$child" 2>/dev/null || break
	done
	return "$rc"
}

if [ "${1:-}" = --inside ]; then
	shift
	inside "$@"
	exit $?
fi

if [ $# -eq 0 ]; then
	echo "usage: $0 COMMAND [ARG...]" >&2
	exit 2
fi
if [ "$(uname -s)" != Linux ] || [ "$(id -u)" != 0 ]; then
	log "a real node needs Linux and root"
	exit 1
fi

# Cgroups of runs whose script was killed: their processes are gone with
# their PID namespace, so the folders are empty.
for dir in /sys/fs/cgroup/*/"$cgroup_prefix"*; do
	[ -d "$dir" ] || continue
	pid=${dir##*"$cgroup_prefix"}
	pid=${pid%%-*}
	kill -0 "$pid" 2>/dev/null || remove_cgroups "$(basename "$dir")"
done

LIN_NODE_CGROUP_ROOT=/$cgroup_prefix$$-$RANDOM
export LIN_NODE_CGROUP_ROOT
watchdog=
cleanup() {
	# The watchdog must not outlive unshare: it would signal a pid that
	# may by then be another process's.
	[ -n "$watchdog" ] && kill "$watchdog" 2>/dev/null
	remove_cgroups "${LIN_NODE_CGROUP_ROOT#/}"
	[ -n "${LIN_NODE_PID_FILE:-}" ] && rm -f "$LIN_NODE_PID_FILE"
	return 0
}
trap cleanup EXIT
# In the background, so that a signal to this script is handled at once.
unshare --net --mount --pid --fork --kill-child --mount-proc --propagation private -- \
	"$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")" --inside "$@" &
ns=$!
# unshare is in the new network and mount namespaces (only its child is in
# the new PID one): hack/node-shell.sh enters them through it.
if [ -n "${LIN_NODE_PID_FILE:-}" ]; then
	echo "$ns" >"$LIN_NODE_PID_FILE"
fi
# A signal asks the command to stop, through the namespace's init, and gives
# it stop_grace seconds; then unshare's end ends the namespaces
# (--kill-child), and the EXIT trap runs.
stop_grace=20
stop() {
	local init
	init=$(cat "/proc/$ns/task/$ns/children" 2>/dev/null) || true
	[ -n "$init" ] && kill -TERM $init 2>/dev/null
	if [ -z "$watchdog" ]; then
		(sleep "$stop_grace" && kill -KILL "$ns" 2>/dev/null) &
		watchdog=$!
	fi
}
trap stop TERM INT HUP
rc=0
while :; do
	wait "$ns" && rc=0 || rc=$?
	kill -0 "$ns" 2>/dev/null || break
done
exit $rc
