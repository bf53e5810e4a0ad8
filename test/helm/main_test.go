// Package helm tests the chart charts/lin-operator with the real helm binary
// (built from the Go module proxy by hack/build-tools.sh): helm lint, helm
// template against the kustomizations of deploy/, and helm install, upgrade
// and uninstall on a whole control plane whose pods kwok runs, with the
// operator binary running as the chart's ServiceAccount with the chart's
// arguments.
package helm

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"lin.dev/lin-operator/pkg/client/clientset/versioned"
	"lin.dev/lin-operator/test/env"
	"lin.dev/lin-operator/test/harness"
)

var (
	// testEnv is the control plane shared by the package's tests.
	testEnv *env.Env
	// linClient talks to it as an admin.
	linClient versioned.Interface
	// repoRoot is the module's root folder.
	repoRoot string
	// chartDir is the chart under test.
	chartDir string
	// operatorBinary is the operator built for the tests.
	operatorBinary string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

// run builds the operator and runs the tests against a fresh control plane
// with no CRD installed: installing it is the chart's job.
func run(m *testing.M) int {
	root, err := env.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	repoRoot, chartDir = root, filepath.Join(root, "charts", "lin-operator")
	bin, err := os.MkdirTemp("", "lin-operator-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(bin)
	operatorBinary = filepath.Join(bin, "lin-operator")
	if err := harness.BuildOperator(root, operatorBinary); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return env.RunMain(m, env.Options{Mode: env.Cluster, SkipCRDs: true}, func(e *env.Env) {
		testEnv = e
		linClient = versioned.NewForConfigOrDie(e.Config)
	})
}
