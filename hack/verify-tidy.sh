#!/usr/bin/env bash
# Fails when go.mod or go.sum of the operator, of a tools module or of the
# benchmark's controller-runtime peer is not tidy.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
status=0
for dir in . hack/tools/*/ cmd/bench/peer/; do
	(cd "$dir" && go mod tidy -diff) || { echo "go.mod in $dir is not tidy: run go mod tidy there" >&2; status=1; }
done
exit $status
