// Package apps runs real clustered applications under the operator on a
// real node (test/node): etcd, a quorum database, from examples/etcd.yaml,
// and examples/shardapp, a sharded store that follows topology.json. Each
// test drives a day-2 event (a rolling change, a drain, an upgrade of the
// operator, a crash-looping release, scaling, stop and delete, the operator
// killed) while a client writes through the client Service, and counts every
// write that failed and every acknowledged write that was lost; it prints
// its numbers with t.Log.
package apps

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"lin.dev/lin-operator/test/env"
	"lin.dev/lin-operator/test/harness"
	"lin.dev/lin-operator/test/node"
)

var (
	// cluster is the real-node cluster shared by the package's tests, one
	// at a time.
	cluster *node.Cluster
	// repoRoot is the module's root folder.
	repoRoot string
	// operatorBinary is the current operator, built as `make build` does.
	operatorBinary string
)

// baseEnv names the folder of the base release's operator, built outside
// the namespaces, where the module proxy is reachable.
const baseEnv = "LIN_APPS_BASE_DIR"

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

// run builds the base release's operator outside the namespaces, where the
// module proxy is reachable (it may need modules that the current code
// does not), then runs the tests in them.
func run(m *testing.M) int {
	if !node.Inside() && node.Unavailable() == "" {
		root, err := env.RepoRoot()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		dir, err := os.MkdirTemp("", "lin-apps-base-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		if _, err := harness.BuildBase(root, dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		os.Setenv(baseEnv, dir)
	}
	return node.RunMain(m, buildImages, func(c *node.Cluster) { cluster = c })
}

// buildImages builds the test's images and the current operator into a
// temporary folder on the namespace's tmpfs.
func buildImages() ([]string, error) {
	root, err := env.RepoRoot()
	if err != nil {
		return nil, err
	}
	repoRoot = root
	dir, err := os.MkdirTemp("", "lin-apps-images-")
	if err != nil {
		return nil, err
	}
	imgs, err := node.BuildImages(root, dir)
	if err != nil {
		return nil, err
	}
	apps, err := node.BuildAppImages(root, dir)
	if err != nil {
		return nil, err
	}
	operatorBinary = filepath.Join(dir, "lin-operator")
	return append(imgs.All(), apps...), nil
}

// baseOperator is the base release's operator that outside built.
func baseOperator(t *testing.T) harness.Base {
	t.Helper()
	dir := os.Getenv(baseEnv)
	if dir == "" {
		t.Fatalf("%s is not set: the base release is built before the run enters the namespaces", baseEnv)
	}
	return harness.Base{Tree: dir, Binary: filepath.Join(dir, "bin", "lin-operator")}
}
