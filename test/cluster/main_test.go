// Package cluster tests the operator against a whole control plane: etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler and kwok with fake
// nodes, so that pods, StatefulSet status, PVC binding and garbage collection
// are real.
package cluster

import (
	"os"
	"testing"

	"lin.dev/lin-operator/pkg/client/clientset/versioned"
	"lin.dev/lin-operator/test/env"
)

var (
	// testEnv is the control plane shared by the package's tests.
	testEnv *env.Env
	// linClient talks to it as an admin.
	linClient versioned.Interface
)

func TestMain(m *testing.M) {
	os.Exit(env.RunMain(m, env.Options{Mode: env.Cluster}, func(e *env.Env) {
		testEnv = e
		linClient = versioned.NewForConfigOrDie(e.Config)
	}))
}
