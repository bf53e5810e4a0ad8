package harness

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Process is a program that a test runs as a child of its own, the operator
// binary above all, as it runs in a cluster: its output goes to a log file
// in the test's temporary folder, it is in a process group of its own and
// dies with the test binary whatever happens, and the test's end stops it
// with SIGTERM, as a Deployment rollout does.
type Process struct {
	// Name tells the processes of a test apart in its log.
	Name string
	// LogPath receives the program's standard output and error.
	LogPath string

	cmd *exec.Cmd
	// done is closed when the process has exited; err then says how.
	done chan struct{}
	err  error
}

// StopTimeout is how long Stop waits after SIGTERM before it kills.
const StopTimeout = 30 * time.Second

// Detectors turn on client-go's cache mutation detector (a change to an
// object in an informer's cache panics) and its watch-list consistency
// detector (an informer whose streamed list differs from a LIST at the same
// resourceVersion panics). client-go reads them once, at start, from the
// environment; the Makefile sets them for the tests themselves.
var Detectors = []string{"KUBE_CACHE_MUTATION_DETECTOR=true", "KUBE_WATCHLIST_INCONSISTENCY_DETECTOR=true"}

// StartProcess runs path with args until the test ends, with the
// Detectors on, also when the test itself runs without them.
func StartProcess(t testing.TB, name, path string, args ...string) *Process {
	t.Helper()
	return StartProcessEnv(t, name, path, Detectors, args...)
}

// StartProcessEnv is StartProcess with env, entries of the form
// NAME=value, in place of the Detectors, on top of this process's
// environment.
func StartProcessEnv(t testing.TB, name, path string, env []string, args ...string) *Process {
	t.Helper()
	p := &Process{Name: name, LogPath: filepath.Join(t.TempDir(), name+".log"), done: make(chan struct{})}
	logFile, err := os.Create(p.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	p.cmd = exec.Command(path, args...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() { p.Stop(t) })
	return p
}

// Pid is the process's ID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Signal sends sig to the process.
func (p *Process) Signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil && !p.Exited() {
		t.Fatalf("signalling %s: %v", p.Name, err)
	}
}

// Kill sends SIGKILL, as the kernel's OOM killer or a node failure would, and
// waits until the process is gone.
func (p *Process) Kill(t testing.TB) {
	t.Helper()
	p.Signal(t, syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s (pid %d) is still there 10s after SIGKILL", p.Name, p.Pid())
	}
}

// Wait waits up to timeout for the process to exit and returns its exit
// code, or fails the test.
func (p *Process) Wait(t testing.TB, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		t.Fatalf("%s did not exit within %s", p.Name, timeout)
	}
	var exit *exec.ExitError
	if errors.As(p.err, &exit) {
		return exit.ExitCode()
	}
	if p.err != nil {
		t.Fatalf("%s: %v", p.Name, p.err)
	}
	return 0
}

// Stop sends SIGTERM and waits for the process to exit; after StopTimeout it
// kills the process group and fails the test.
func (p *Process) Stop(t testing.TB) {
	t.Helper()
	if p.Exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(StopTimeout):
		_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
		<-p.done
		t.Errorf("%s did not exit within %s of SIGTERM; its log ends with:\n%s", p.Name, StopTimeout, p.LogTail(30))
	}
}

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err is how the process exited; nil while it runs.
func (p *Process) Err() error {
	if !p.Exited() {
		return nil
	}
	return p.err
}

// Log returns the process's output so far.
func (p *Process) Log(t testing.TB) string {
	t.Helper()
	data, err := os.ReadFile(p.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// LogTail returns the last n lines of the process's output.
func (p *Process) LogTail(n int) string {
	data, err := os.ReadFile(p.LogPath)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// FreeAddress returns a loopback address with a port that was free a
// moment ago, for a program's endpoints.
func FreeAddress(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
