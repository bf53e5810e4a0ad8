#!/usr/bin/env bash
# Helpers that the hack/ scripts source. They assume nothing is in the Go
# module cache yet: a fresh machine starts with an empty one.

# module_dir MODULE: prints the folder of MODULE, at the version that the Go
# module of the working directory requires, after downloading it into the
# module cache if it is not there. `go list -m -f '{{.Dir}}'` alone prints
# nothing for a module that is not downloaded yet. Fails, naming the module,
# when it cannot be had.
module_dir() {
	local module=$1 dir
	if ! go mod download "$module"; then
		echo "cannot download Go module $module (required by $(go list -m)); is the module proxy reachable?" >&2
		return 1
	fi
	dir=$(go list -m -f '{{.Dir}}' "$module")
	if [ -z "$dir" ] || [ ! -d "$dir" ]; then
		echo "Go module $module is not in the module cache ($(go env GOMODCACHE)) after downloading it" >&2
		return 1
	fi
	echo "$dir"
}
