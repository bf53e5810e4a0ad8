#!/usr/bin/env bash
# Regenerates everything generated from the API types in pkg/apis: deepcopy and
# register code, the clientset, listers, informers and apply configurations in
# pkg/client, and the CRD YAML in deploy/crds. The generators are pinned in go.mod.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
# shellcheck source=hack/lib.sh
source "$root/hack/lib.sh"
module=$(go list -m)
codegen_root=$(module_dir k8s.io/code-generator)

# shellcheck source=/dev/null
source "$codegen_root/kube_codegen.sh"

kube::codegen::gen_helpers \
	--boilerplate "$root/hack/boilerplate.go.txt" \
	"$root/pkg/apis"

kube::codegen::gen_register \
	--boilerplate "$root/hack/boilerplate.go.txt" \
	"$root/pkg/apis"

kube::codegen::gen_client \
	--with-watch \
	--with-applyconfig \
	--output-dir "$root/pkg/client" \
	--output-pkg "$module/pkg/client" \
	--boilerplate "$root/hack/boilerplate.go.txt" \
	"$root/pkg/apis"

rm -rf "$root/deploy/crds"
go tool controller-gen crd:crdVersions=v1 paths="./pkg/apis/..." output:crd:artifacts:config=deploy/crds

# The Helm chart carries copies of what deploy/ holds, for Helm reads only
# the chart's own folder: the CRD in crds/ (Helm's convention) and the alerts
# and the dashboard of deploy/monitoring, which its templates read.
chart=charts/lin-operator
rm -rf "$chart/crds" "$chart/files"
mkdir -p "$chart/crds" "$chart/files"
cp deploy/crds/*.yaml "$chart/crds/"
cp deploy/monitoring/prometheusrule.yaml deploy/monitoring/dashboard.json "$chart/files/"
