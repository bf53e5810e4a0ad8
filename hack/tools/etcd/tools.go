//go:build tools

// Package tools pins the etcd server that the tests and `make run` start;
// hack/build-tools.sh builds it from this module.
package tools

import _ "go.etcd.io/etcd/server/v3"
