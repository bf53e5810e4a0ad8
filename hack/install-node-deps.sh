#!/usr/bin/env bash
# Installs what the real-node cluster (test/node, `make run NODE=real`) takes
# from Debian rather than from the Go module proxy: runc (built with seccomp,
# which the RuntimeDefault profile of Pod Security restricted needs), the CNI
# plugins (bridge, host-local, loopback, portmap), iptables for kube-proxy,
# conntrack, and the static busybox that the storage provisioner's helper
# pods run. Does nothing when they are all there. Needs root and apt-get.
set -euo pipefail

log() { printf '[install-node-deps] %s\n' "$*" >&2; }

# command -> Debian package; the CNI plugins are files, not commands.
missing=()
command -v runc >/dev/null || missing+=(runc)
[ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/host-local ] && [ -x /usr/lib/cni/loopback ] && [ -x /usr/lib/cni/portmap ] ||
	missing+=(containernetworking-plugins)
command -v iptables >/dev/null || missing+=(iptables)
command -v conntrack >/dev/null || missing+=(conntrack)
# Debian's busybox package has a dynamic /bin/busybox, useless in an image.
dpkg -s busybox-static >/dev/null 2>&1 || missing+=(busybox-static)
# unshare, nsenter and ip make the cluster's namespaces.
command -v unshare >/dev/null && command -v nsenter >/dev/null || missing+=(util-linux)
command -v ip >/dev/null || missing+=(iproute2)
if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	log "missing: ${missing[*]}; a real node needs root. Run as root: apt-get install -y ${missing[*]}"
	exit 1
fi
if ! command -v apt-get >/dev/null; then
	log "missing: ${missing[*]}, and there is no apt-get to install them; install those packages by other means"
	exit 1
fi
log "installing ${missing[*]}"
start=$SECONDS
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
log "installed in $((SECONDS - start))s"
