#!/usr/bin/env bash
# Builds the control-plane binaries that the tests and `make run` start (etcd,
# kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and kwok),
# the parts of the real-node cluster (kubelet, kube-proxy, containerd, ctr,
# containerd-shim-runc-v2, CoreDNS and local-path-provisioner), and helm, which the chart's tests run, from
# the Go module proxy into a cache folder outside the repository, keyed by their
# versions. A binary already in the cache is not built again, so a second call
# returns in seconds. Prints the cache's bin folder last.
set -euo pipefail

KUBE_VERSION=v1.37.2
ETCD_VERSION=v3.6.16
KWOK_VERSION=v0.8.0
HELM_VERSION=v4.3.2
CONTAINERD_VERSION=v2.4.2
COREDNS_VERSION=v1.14.7
LOCAL_PATH_VERSION=v0.0.30

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=hack/lib.sh
source "$root/hack/lib.sh"
cache=${LIN_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lin-operator/k8s-${KUBE_VERSION}-etcd-${ETCD_VERSION}-kwok-${KWOK_VERSION}-helm-${HELM_VERSION}-containerd-${CONTAINERD_VERSION}-coredns-${COREDNS_VERSION}-local-path-${LOCAL_PATH_VERSION}}
bin=$cache/bin
mkdir -p "$bin"

log() { printf '[build-tools] %s\n' "$*" >&2; }

# build NAME MODULE_DIR PACKAGE [LDFLAGS]: builds PACKAGE inside the tools module
# MODULE_DIR into $bin/NAME unless it is there already. The binary is written
# under a temporary name first, so an interrupted build never leaves a broken one.
build() {
	local name=$1 dir=$2 pkg=$3 ldflags=${4:-}
	if [ -x "$bin/$name" ]; then
		log "$name: cached"
		return
	fi
	log "$name: building $pkg (first time only; this can take minutes)"
	local start=$SECONDS
	if ! (cd "$root/hack/tools/$dir" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $ldflags" -o "$bin/.$name.tmp" "$pkg"); then
		rm -f "$bin/.$name.tmp"
		log "$name: BUILD FAILED (see the go build output above)"
		exit 1
	fi
	mv "$bin/.$name.tmp" "$bin/$name"
	log "$name: built in $((SECONDS - start))s"
}

minor=${KUBE_VERSION#v1.}
minor=${minor%%.*}
kube_ldflags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	kube_ldflags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
	kube_ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

build etcd etcd go.etcd.io/etcd/server/v3
build kube-apiserver kubernetes k8s.io/kubernetes/cmd/kube-apiserver "$kube_ldflags"
build kube-controller-manager kubernetes k8s.io/kubernetes/cmd/kube-controller-manager "$kube_ldflags"
build kube-scheduler kubernetes k8s.io/kubernetes/cmd/kube-scheduler "$kube_ldflags"
build kubectl kubernetes k8s.io/kubernetes/cmd/kubectl "$kube_ldflags"
build kubelet kubernetes k8s.io/kubernetes/cmd/kubelet "$kube_ldflags"
build kube-proxy kubernetes k8s.io/kubernetes/cmd/kube-proxy "$kube_ldflags"
build kwok kwok sigs.k8s.io/kwok/cmd/kwok
ctr_ldflags="-X github.com/containerd/containerd/v2/version.Version=$CONTAINERD_VERSION"
build containerd containerd github.com/containerd/containerd/v2/cmd/containerd "$ctr_ldflags"
build containerd-shim-runc-v2 containerd github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 "$ctr_ldflags"
build ctr containerd github.com/containerd/containerd/v2/cmd/ctr "$ctr_ldflags"
build coredns coredns github.com/coredns/coredns
build local-path-provisioner local-path-provisioner github.com/rancher/local-path-provisioner
build helm helm helm.sh/helm/v4/cmd/helm "-X helm.sh/helm/v4/internal/version.version=$HELM_VERSION -X helm.sh/helm/v4/internal/version.gitTreeState=clean"

# kwok refuses to start without stages; its module ships them as YAML.
stages=$cache/kwok-stages.yaml
if [ ! -s "$stages" ]; then
	# The kwok binary may be cached while the module cache is empty.
	kwok_dir=$(cd "$root/hack/tools/kwok" && module_dir sigs.k8s.io/kwok)
	tmp=$(mktemp)
	for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
		pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
		[ -f "$kwok_dir/kustomize/stage/$f" ] || { log "kwok stage $f not found in $kwok_dir"; exit 1; }
		printf -- '---\n' >>"$tmp"
		cat "$kwok_dir/kustomize/stage/$f" >>"$tmp"
	done
	mv "$tmp" "$stages"
fi
# krew, which test/plugin builds from hack/tools/krew when it runs (in
# seconds, from Go's build cache): its modules are fetched here, so that no
# test reaches the module proxy.
if ! (cd "$root/hack/tools/krew" && go mod download); then
	log "krew: DOWNLOAD FAILED (see the go output above)"
	exit 1
fi
log "all tools ready in $bin"
echo "$bin"
