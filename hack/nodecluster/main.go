// Command nodecluster runs the operator against a cluster with one real
// node (test/node: containerd, runc, kubelet, kube-proxy, CoreDNS and a
// default StorageClass), for `make run NODE=real`. It must run inside the
// namespaces of hack/node-netns.sh, which hack/run.sh puts it in:
//
//	hack/node-netns.sh bin/nodecluster --state .state/node -- bin/lin-operator [FLAGS]
//
// It builds the images that the node runs (pause, busybox, testapp and the
// operator's own) and imports them, starts the cluster, writes its
// kubeconfig to the state folder for hack/node-shell.sh, and runs the
// operator with that kubeconfig in the foreground. When the operator exits,
// or on Ctrl-C, it stops the cluster; the namespaces take the rest.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"

	"lin.dev/lin-operator/test/env"
	"lin.dev/lin-operator/test/node"
)

func main() {
	state := flag.String("state", ".state/node", "folder for the kubeconfig that hack/node-shell.sh uses")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: nodecluster [--state DIR] -- OPERATOR [FLAGS]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*state, flag.Args()); err != nil {
		fmt.Fprintf(os.Stderr, "nodecluster: %v\n", err)
		os.Exit(1)
	}
}

// run starts the cluster, runs the operator until it exits or a signal
// comes, and stops the cluster.
func run(state string, operator []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	root, err := env.RepoRoot()
	if err != nil {
		return err
	}
	state, err = filepath.Abs(state)
	if err != nil {
		return err
	}
	// TMPDIR is the namespace's tmpfs.
	dir, err := os.MkdirTemp("", "lin-node-images-")
	if err != nil {
		return err
	}
	logf("Building the images (pause, busybox, testapp, the operator's) ...")
	images, err := node.BuildImages(root, dir)
	if err != nil {
		return err
	}
	c, err := node.Start(ctx, node.Options{Images: images.All(), Logf: logf})
	if err != nil {
		return err
	}
	defer func() {
		logf("Stopping the cluster ...")
		if err := c.Stop(); err != nil {
			logf("stopping the cluster: %v", err)
		}
	}()
	kubeconfig := filepath.Join(state, "kubeconfig")
	if err := copyKubeconfig(c.KubeconfigPath, kubeconfig); err != nil {
		return err
	}
	defer os.Remove(kubeconfig)
	fmt.Fprintf(os.Stderr, `
The operator runs against a cluster with one real node (%s, containerd),
in network and mount namespaces of its own. Images load from no registry:
the node has %s, %s and %s (imagePullPolicy Never or IfNotPresent).
In another shell, as root:

    hack/node-shell.sh kubectl get pods -A
    hack/node-shell.sh            # a shell inside, with KUBECONFIG and kubectl

Ctrl-C stops the operator and the cluster.

`, node.Name, node.OperatorImage, node.TestAppImage, node.BusyboxImage)
	return runOperator(ctx, operator, c.KubeconfigPath)
}

// copyKubeconfig copies the cluster's kubeconfig to to, where
// hack/node-shell.sh finds it.
func copyKubeconfig(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o600)
}

// runOperator runs the operator command against kubeconfig until it exits,
// or until ctx is done, when it stops it with SIGTERM, as a Deployment
// does: it drains its queue and releases its Lease.
func runOperator(ctx context.Context, operator []string, kubeconfig string) error {
	cmd := exec.Command(operator[0], append(operator[1:], "--kubeconfig", kubeconfig)...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		_ = cmd.Process.Signal(syscall.SIGTERM)
		err := <-done
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.Exited() {
			return err
		}
		return nil
	}
}
