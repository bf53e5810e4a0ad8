package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"lin.dev/lin-operator/test/env"
	"lin.dev/lin-operator/test/harness"
	"lin.dev/lin-operator/test/node"
)

// installation is an Installation of the node's test server with a claim
// of the default StorageClass: what a user of `make run NODE=real` tries.
const installation = `apiVersion: lin.dev/v1
kind: Installation
metadata:
  name: app
spec:
  image: ` + node.TestAppImage + `
  imagePullPolicy: Never
  ports:
    - name: http
      containerPort: 8080
  readinessProbe:
    httpGet: {path: /healthz, port: 8080}
    periodSeconds: 1
  storage:
    size: 1Gi
    mountPath: /data
`

// TestMakeRunNodeReal runs `make run NODE=real` as the README says, reaches
// the cluster with hack/node-shell.sh from outside, applies an Installation
// of real pods with a claim, waits for Ready, and stops it with Ctrl-C.
func TestMakeRunNodeReal(t *testing.T) {
	node.SkipUnavailable(t)
	root, err := env.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	run := exec.Command("make", "run", "NODE=real")
	run.Dir = root
	run.Env = append(os.Environ(), "NODE_STATE_DIR="+state)
	// A file, which make's output reaches whatever happens to this test.
	out, err := os.Create(filepath.Join(t.TempDir(), "make-run.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	output := func() string { b, _ := os.ReadFile(out.Name()); return string(b) }
	run.Stdout, run.Stderr = out, out
	// Programs of the cluster may hold the output open after a kill.
	run.WaitDelay = 10 * time.Second
	// A group of its own, as a terminal gives it, for the Ctrl-C below.
	run.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	// exited is closed when make has exited, with waitErr set.
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = run.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = syscall.Kill(-run.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})

	shell := func(ctx context.Context, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "node-shell.sh"), args...)
		cmd.Env = append(os.Environ(), "NODE_STATE_DIR="+state)
		cmd.Stdin = strings.NewReader(installation)
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	// The first run may build the tools; the cluster then starts in seconds.
	harness.Eventually(t, 20*time.Minute, "the node to be Ready through hack/node-shell.sh", func(ctx context.Context) (bool, error) {
		select {
		case <-exited:
			t.Fatalf("make run NODE=real exited: %v\n%s", waitErr, output())
		default:
		}
		got, err := shell(ctx, "kubectl", "get", "node", node.Name, "-o", "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}")
		if err != nil {
			return false, fmt.Errorf("%v: %s", err, got)
		}
		return got == "True", nil
	})
	if got, err := shell(t.Context(), "kubectl", "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v: %s", err, got)
	}
	if got, err := shell(t.Context(), "kubectl", "wait", "installation/app", "--for=jsonpath={.status.phase}=Ready", "--timeout=2m"); err != nil {
		t.Fatalf("the Installation did not become Ready: %v: %s", err, got)
	}

	if err := syscall.Kill(-run.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(time.Minute):
		t.Fatalf("make run NODE=real did not stop within a minute of Ctrl-C:\n%s", output())
	}
	if !strings.Contains(output(), "Stopping the cluster") {
		t.Errorf("make run NODE=real did not stop its cluster:\n%s", output())
	}
	if _, err := os.Stat(filepath.Join(state, "pid")); !os.IsNotExist(err) {
		t.Errorf("the pid file is still there after the stop: %v", err)
	}
}
