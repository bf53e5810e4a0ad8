//go:build chaos

package chaos

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"lin.dev/lin-operator/test/env"
	"lin.dev/lin-operator/test/harness"
)

// operatorBinary is the operator command, built once for the package by
// buildOperator.
var operatorBinary string

func init() { setups = append(setups, buildOperator) }

// buildOperator builds cmd/operator into dir, as `make build` does.
func buildOperator(dir string) error {
	root, err := env.RepoRoot()
	if err != nil {
		return err
	}
	operatorBinary = filepath.Join(dir, "lin-operator")
	cmd := exec.Command("go", "build", "-o", operatorBinary, "./cmd/operator")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building the operator: %w\n%s", err, out)
	}
	return nil
}

// operatorProcess is the operator binary running against a control plane, as
// it runs in a cluster: a process of its own that a test can kill, whose log
// must never show a panic.
type operatorProcess struct {
	*harness.Process
}

// startOperator runs the operator binary with --kubeconfig and args. Its
// HTTP endpoints are off, so that operators of tests running side by side
// need no free ports. The test's cleanup stops it and checks its log.
func startOperator(t *testing.T, kubeconfig string, args ...string) *operatorProcess {
	t.Helper()
	args = append([]string{"--kubeconfig", kubeconfig, "--metrics-bind-address=0", "--health-probe-bind-address=0"}, args...)
	p := &operatorProcess{harness.StartProcess(t, "operator", operatorBinary, args...)}
	t.Cleanup(func() {
		// Runs before the Process's own cleanup, so stop it here first.
		p.Stop(t)
		p.checkNoPanic(t)
		if t.Failed() {
			t.Logf("the operator's log ends with:\n%s", p.LogTail(30))
		}
	})
	return p
}

// checkAlive fails the test if the operator has exited.
func (p *operatorProcess) checkAlive(t *testing.T) {
	t.Helper()
	if p.Exited() {
		t.Fatalf("the operator exited (%v); its log ends with:\n%s", p.Err(), p.LogTail(30))
	}
}

// checkNoPanic fails the test if the operator's log shows a panic, even one
// that a handler recovered from.
func (p *operatorProcess) checkNoPanic(t *testing.T) {
	t.Helper()
	data := p.Log(t)
	if i := strings.Index(data, "panic"); i >= 0 {
		t.Errorf("the operator's log shows a panic:\n%s", data[i:min(len(data), i+4000)])
	}
}
