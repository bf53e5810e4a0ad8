#!/usr/bin/env bash
# Fails when the committed generated code, CRD YAML or the chart's copies are not what
# hack/update-codegen.sh makes from the current API types: it regenerates in a
# copy of the tree and compares.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cd "$root"
git ls-files --cached --others --exclude-standard -z | xargs -0 cp --parents -t "$tmp" 2>/dev/null || true
"$tmp/hack/update-codegen.sh" >/dev/null

status=0
for dir in pkg/apis pkg/client deploy/crds charts/lin-operator/crds charts/lin-operator/files; do
	if ! diff -ruN "$root/$dir" "$tmp/$dir"; then
		status=1
	fi
done
if [ "$status" -ne 0 ]; then
	echo "Generated code is stale: run hack/update-codegen.sh and commit the result." >&2
	exit 1
fi
echo "Generated code is up to date."
