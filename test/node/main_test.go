package node_test

import (
	"fmt"
	"os"
	"testing"

	"lin.dev/lin-operator/test/env"
	"lin.dev/lin-operator/test/node"
)

var (
	// cluster is the real-node cluster shared by the package's tests.
	cluster *node.Cluster
	// repoRoot is the module's root folder.
	repoRoot string
)

func TestMain(m *testing.M) {
	os.Exit(node.RunMain(m, buildImages, func(c *node.Cluster) { cluster = c }))
}

// buildImages builds the images of the tests into a temporary folder, on the
// tmpfs of hack/node-netns.sh, which goes with the namespace.
func buildImages() ([]string, error) {
	root, err := env.RepoRoot()
	if err != nil {
		return nil, err
	}
	repoRoot = root
	dir, err := os.MkdirTemp("", "lin-node-images-")
	if err != nil {
		return nil, err
	}
	imgs, err := node.BuildImages(root, dir)
	if err != nil {
		return nil, fmt.Errorf("building the images: %w", err)
	}
	return imgs.All(), nil
}
