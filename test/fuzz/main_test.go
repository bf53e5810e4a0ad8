// Package fuzz checks the renderer against a real API server: whatever
// Installation the CRD's schema accepts, every child the operator renders
// from it is accepted too, or the renderer says why not (InvalidSpec), and
// rendering is deterministic. `go test` runs the committed seed corpus;
// `go test -run '^$' -fuzz FuzzRenderedChildrenAreAccepted` explores.
package fuzz

import (
	"fmt"
	"os"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"lin.dev/lin-operator/pkg/client/clientset/versioned"
	"lin.dev/lin-operator/test/env"
)

// kubeconfigEnv names the kubeconfig of the API server to check against. The
// test sets it for the fuzzing workers, which are processes of their own
// started with the test's environment, so that they share its API server.
const kubeconfigEnv = "LIN_FUZZ_KUBECONFIG"

var (
	// kubeClient and linClient talk to the API server as an admin.
	kubeClient kubernetes.Interface
	linClient  versioned.Interface
)

func TestMain(m *testing.M) {
	if path := os.Getenv(kubeconfigEnv); path != "" {
		if err := connect(path); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(m.Run())
	}
	os.Exit(env.RunMain(m, env.Options{Mode: env.APIServer}, func(e *env.Env) {
		if err := connect(e.KubeconfigPath); err != nil {
			panic(err)
		}
		os.Setenv(kubeconfigEnv, e.KubeconfigPath)
	}))
}

// connect builds the clients from a kubeconfig.
func connect(kubeconfig string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("%s=%s: %w", kubeconfigEnv, kubeconfig, err)
	}
	// Nothing is stored, so the only limit worth having is the server's.
	cfg.QPS, cfg.Burst = 1000, 2000
	if kubeClient, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	linClient, err = versioned.NewForConfig(cfg)
	return err
}
