// Package integration tests the CRD and the operator against a real
// kube-apiserver and etcd (no controller-manager: no pods, no garbage
// collection), with the operator running in the test process.
package integration

import (
	"os"
	"testing"

	"k8s.io/client-go/dynamic"

	"lin.dev/lin-operator/pkg/client/clientset/versioned"
	"lin.dev/lin-operator/test/env"
)

var (
	// testEnv is the control plane shared by the package's tests.
	testEnv *env.Env
	// linClient and dynClient talk to it as an admin.
	linClient versioned.Interface
	dynClient dynamic.Interface
)

func TestMain(m *testing.M) {
	os.Exit(env.RunMain(m, env.Options{Mode: env.APIServer}, func(e *env.Env) {
		testEnv = e
		linClient = versioned.NewForConfigOrDie(e.Config)
		dynClient = dynamic.NewForConfigOrDie(e.Config)
	}))
}
