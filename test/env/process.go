package env

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Process describes one control-plane program started by Start.
type Process struct {
	// Name is the program's name, such as "etcd" or "kube-apiserver".
	Name string `json:"name"`
	// Pid is its process id. It is also the id of its process group (or of
	// its session in Detach mode), which holds nothing else.
	Pid int `json:"pid"`
	// Path is the absolute path of the binary that was executed.
	Path string `json:"path"`
	// LogPath is the file that receives its standard output and error.
	LogPath string `json:"logPath"`
}

// process is a running child together with what is needed to stop it and to
// explain its failure.
type process struct {
	Process
	cmd *exec.Cmd
	// done is closed once the child has exited and been reaped; waitErr is
	// set before that.
	done    chan struct{}
	waitErr error
}

// startProcess runs path with args, sending its output to logPath.
//
// The child gets a process group of its own so that stopping it reaches
// anything it might spawn and so that a Ctrl-C meant for the test binary does
// not kill it before the Env has a chance to stop it in order. Unless detach is
// set, it also gets Pdeathsig: the kernel kills it when the thread that forked
// it dies, which covers a test binary that panics, times out or is killed
// outright. The Go runtime does not end threads that are not locked to a
// goroutine, so in practice the thread lives as long as the process.
//
// With detach the child instead starts a session of its own (which also makes
// it a process group leader) and is not tied to this process at all, so that a
// local cluster outlives the command that started it and a terminal hang-up
// does not reach it.
func startProcess(name, path string, args []string, logPath string, detach bool) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	// The parent's copy is not needed once the child holds its own.
	defer logFile.Close()
	// The command line heads the log so that a failure can be reproduced by hand.
	fmt.Fprintf(logFile, "# %s: %s %s\n", time.Now().Format(time.RFC3339), path, strings.Join(args, " "))

	cmd := exec.Command(path, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	if detach {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{
		Process: Process{Name: name, Pid: cmd.Process.Pid, Path: path, LogPath: logPath},
		cmd:     cmd,
		done:    make(chan struct{}),
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the child has already exited.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exitError describes how the child ended, with the end of its log. It may
// only be called once exited reports true.
func (p *process) exitError() error {
	state := "exited"
	if p.waitErr != nil {
		state = p.waitErr.Error()
	}
	return &ProcessError{Process: p.Process, Reason: state, LogTail: LogTail(p.LogPath)}
}

// stop sends SIGTERM to the child's process group, then SIGKILL if it has not
// exited after timeout.
func (p *process) stop(timeout time.Duration) error {
	if !p.exited() {
		killGroup(p.Pid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(timeout):
			killGroup(p.Pid, syscall.SIGKILL)
			select {
			case <-p.done:
			case <-time.After(10 * time.Second):
				return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.Name, p.Pid)
			}
		}
	}
	// Whatever the leader left behind in its group goes too; none of these
	// programs forks, so this normally finds nothing.
	killGroup(p.Pid, syscall.SIGKILL)
	return nil
}

// killGroup signals every process in the process group pgid; a group that is
// already gone is not an error.
func killGroup(pgid int, sig syscall.Signal) {
	_ = syscall.Kill(-pgid, sig)
}

// ProcessError reports a control-plane program that failed, with the end of
// its log, which usually says why.
type ProcessError struct {
	Process Process
	// Reason is what went wrong, such as "exit status 1" or a readiness
	// timeout.
	Reason string
	// LogTail is the last lines of the program's log.
	LogTail string
}

// Error implements error.
func (e *ProcessError) Error() string {
	return fmt.Sprintf("%s (pid %d): %s; log %s ends with:\n%s", e.Process.Name, e.Process.Pid, e.Reason, e.Process.LogPath, e.LogTail)
}

// portInUse reports whether a start failed because a port picked as free was
// taken by someone else before the program bound it; Start then tries again.
func portInUse(err error) bool {
	var pe *ProcessError
	return errors.As(err, &pe) && strings.Contains(pe.LogTail, "address already in use")
}

// logTailLines is how much of a failing program's log an error carries:
// enough for the fatal message and what led to it, short enough to read.
const logTailLines = 40

// LogTail returns the last logTailLines lines of the file at path.
func LogTail(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read the log: %v)", err)
	}
	defer f.Close()
	// Reading only the end keeps this cheap on a large apiserver log.
	const maxBytes = 16 << 10
	if st, err := f.Stat(); err == nil && st.Size() > maxBytes {
		if _, err := f.Seek(-maxBytes, io.SeekEnd); err != nil {
			return fmt.Sprintf("(cannot read the log: %v)", err)
		}
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return fmt.Sprintf("(cannot read the log: %v)", err)
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > logTailLines {
		lines = lines[len(lines)-logTailLines:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// Alive reports whether p is still running the binary it was started from.
// It is meant for processes started with Options.Detach by another process,
// whose pids were recorded: checking the binary, not just the pid, keeps a
// caller from signalling an unrelated program that got the pid after a
// reboot. A zombie has no /proc/PID/exe, so it counts as gone.
func (p Process) Alive() bool {
	exe, err := os.Readlink("/proc/" + strconv.Itoa(p.Pid) + "/exe")
	if err != nil {
		return false
	}
	// A binary replaced since the start, as a rebuild does, shows as
	// deleted.
	exe = strings.TrimSuffix(exe, " (deleted)")
	if exe == p.Path {
		return true
	}
	resolved, err := filepath.EvalSymlinks(p.Path)
	return err == nil && exe == resolved
}

// StopProcesses stops programs recorded from an Env started with
// Options.Detach, from any process: it sends SIGTERM to the process group of
// each one still alive, in the same order as Env.Stop (clients of the
// apiserver, then the apiserver, then etcd), and SIGKILL to those still there
// after timeout. It returns how many were alive.
func StopProcesses(procs []Process, timeout time.Duration) int {
	stopped := 0
	for t := 2; t >= 0; t-- {
		var live []Process
		for _, p := range procs {
			if tier(p.Name) == t && p.Alive() {
				live = append(live, p)
			}
		}
		stopped += len(live)
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
			for _, p := range live {
				// Each program leads its own group, so the group id is
				// its pid; the liveness check above makes sure the
				// group is still ours.
				killGroup(p.Pid, sig)
			}
			deadline := time.Now().Add(timeout)
			for time.Now().Before(deadline) && anyAlive(live) {
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
	return stopped
}

// anyAlive reports whether one of procs is alive.
func anyAlive(procs []Process) bool {
	for _, p := range procs {
		if p.Alive() {
			return true
		}
	}
	return false
}
