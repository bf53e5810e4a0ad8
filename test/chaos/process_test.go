//go:build chaos

package chaos

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"lin.dev/lin-operator/test/env"
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
// it runs in a cluster: a process of its own that a test can kill.
type operatorProcess struct {
	cmd *exec.Cmd
	log string
	// done is closed when the process has exited; err says how.
	done chan struct{}
	err  error
}

// startOperator runs the operator binary with --kubeconfig and args, logging
// to a file in the test's temporary folder. Its HTTP endpoints are off, so
// that operators of tests running side by side need no free ports. The
// test's cleanup stops it, and the kernel kills it if the test binary dies
// first.
func startOperator(t *testing.T, kubeconfig string, args ...string) *operatorProcess {
	t.Helper()
	logFile, err := os.CreateTemp(t.TempDir(), "operator-*.log")
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	args = append([]string{"--kubeconfig", kubeconfig, "--metrics-bind-address=0", "--health-probe-bind-address=0"}, args...)
	cmd := exec.Command(operatorBinary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the operator: %v", err)
	}
	p := &operatorProcess{cmd: cmd, log: logFile.Name(), done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() { p.stop(t) })
	return p
}

// kill sends SIGKILL, as the kernel's OOM killer or a node failure would, and
// waits until the process is gone.
func (p *operatorProcess) kill(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("the operator (pid %d) is still there 10s after SIGKILL", p.cmd.Process.Pid)
	}
}

// stop sends SIGTERM and waits for the operator to drain its queue and exit,
// then checks that it never panicked.
func (p *operatorProcess) stop(t *testing.T) {
	t.Helper()
	if !p.exited() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Signal(syscall.SIGKILL)
			<-p.done
			t.Errorf("the operator did not exit within 30s of SIGTERM; log ends with:\n%s", p.logTail())
		}
	}
	p.checkNoPanic(t)
	if t.Failed() {
		t.Logf("the operator's log ends with:\n%s", p.logTail())
	}
}

// exited reports whether the process has exited.
func (p *operatorProcess) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// checkAlive fails the test if the operator has exited.
func (p *operatorProcess) checkAlive(t *testing.T) {
	t.Helper()
	if p.exited() {
		t.Fatalf("the operator exited (%v); its log ends with:\n%s", p.err, p.logTail())
	}
}

// checkNoPanic fails the test if the operator's log shows a panic, even one
// that a handler recovered from.
func (p *operatorProcess) checkNoPanic(t *testing.T) {
	t.Helper()
	data, err := os.ReadFile(p.log)
	if err != nil {
		t.Fatal(err)
	}
	if i := bytes.Index(data, []byte("panic")); i >= 0 {
		t.Errorf("the operator's log shows a panic:\n%s", data[i:min(len(data), i+4000)])
	}
}

// logTail returns the last lines of the operator's log.
func (p *operatorProcess) logTail() string {
	data, err := os.ReadFile(p.log)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-30):], "\n")
}
