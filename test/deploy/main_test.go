// Package deploy tests what users install: the kustomizations of deploy/
// applied with kubectl to a whole control plane (kwok runs the pods), the
// operator binary, built as the Makefile and the Dockerfile build it, running
// as the ServiceAccount of deploy/ under its RBAC, leader election between
// operator processes, installation selectors, metrics and health endpoints.
package deploy

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
	// operatorBinary is the operator built for the tests.
	operatorBinary string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

// run builds the operator and runs the tests against a fresh control plane:
// no CRD installed, since installing it is the kustomization's job, and the
// admission plugin that checks the permission to block an owner's deletion,
// which some clusters run, so that the RBAC is tested against it too.
func run(m *testing.M) int {
	root, err := env.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	repoRoot = root
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
	opts := env.Options{
		Mode:      env.Cluster,
		SkipCRDs:  true,
		ExtraArgs: map[string][]string{"kube-apiserver": {"--enable-admission-plugins=OwnerReferencesPermissionEnforcement"}},
	}
	return env.RunMain(m, opts, func(e *env.Env) {
		testEnv = e
		linClient = versioned.NewForConfigOrDie(e.Config)
	})
}
