#!/usr/bin/env bash
# Fails when go.mod or go.sum of the operator or of a tools module is not tidy.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
status=0
for dir in . hack/tools/*/; do
	(cd "$dir" && go mod tidy -diff) || { echo "go.mod in $dir is not tidy: run go mod tidy there" >&2; status=1; }
done
exit $status
