// Package chaos tests the operator's reliability against a real control
// plane: bad input in every field, and, behind the build tag `chaos` (`make
// test-chaos`), the faults of a long-running installation: kube-apiserver
// restarts, etcd compaction, SIGKILL of the operator, and concurrent writers.
// A guard fails every scenario that sees a PersistentVolumeClaim deleted
// while its Installation's reclaimPolicy is Retain.
package chaos

import (
	"fmt"
	"os"
	"testing"

	"lin.dev/lin-operator/pkg/client/clientset/versioned"
	"lin.dev/lin-operator/test/env"
)

var (
	// testEnv is the Cluster-mode control plane shared by the package's tests.
	testEnv *env.Env
	// linClient talks to it as an admin.
	linClient versioned.Interface
	// setups run once before the tests, each given a temporary folder that
	// is removed after them; the chaos scenarios build the operator there.
	setups []func(dir string) error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "lin-chaos-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, setup := range setups {
		if err := setup(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := env.RunMain(m, env.Options{Mode: env.Cluster}, func(e *env.Env) {
		testEnv = e
		linClient = versioned.NewForConfigOrDie(e.Config)
	})
	os.RemoveAll(dir)
	os.Exit(code)
}
