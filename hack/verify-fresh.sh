#!/usr/bin/env bash
# Runs the checks of CI the way a new machine would: in a clean clone of HEAD,
# with the Go module cache, build cache and GOPATH in empty temporary folders,
# it runs `make verify` and the unit tests. With FULL=1 it runs the whole
# .ci/run instead, with an empty tool cache (XDG_CACHE_HOME) as well, so the
# control-plane binaries are built from nothing too (about 10 minutes more).
# It tests what is committed: commit first. Prints the time of each step.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lin-fresh.XXXXXX")
# The module cache is read-only by design; make it writable to remove it.
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT

log() { printf '[verify-fresh] %s\n' "$*" >&2; }

if [ -n "$(git -C "$root" status --porcelain --untracked-files=no)" ]; then
	log "warning: uncommitted changes are not tested; this checks HEAD ($(git -C "$root" rev-parse --short HEAD))"
fi
git clone --quiet --no-local "$root" "$tmp/src"

export GOPATH=$tmp/gopath GOMODCACHE=$tmp/gopath/pkg/mod GOCACHE=$tmp/gocache
unset GOFLAGS LIN_TOOLS_BIN LIN_TOOLS_DIR
if [ "${FULL:-}" = 1 ]; then
	export XDG_CACHE_HOME=$tmp/xdg-cache
	steps=(".ci/run")
else
	steps=("make verify" "make test-unit")
fi

cd "$tmp/src"
total=$SECONDS
for step in "${steps[@]}"; do
	log "$step: starting with empty caches in $tmp"
	start=$SECONDS
	if ! $step; then
		log "$step: FAILED after $((SECONDS - start))s"
		exit 1
	fi
	log "$step: passed in $((SECONDS - start))s"
done
log "all passed in $((SECONDS - total))s"
