package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"

	"lin.dev/lin-operator/cmd/bench/measured"
	"lin.dev/lin-operator/pkg/operator"
	"lin.dev/lin-operator/test/harness"
)

// contender is a controller that the benchmark measures against the floor.
type contender string

const (
	// theOperator is lin-operator, run by this program again (-operator-child).
	theOperator contender = "operator"
	// thePeer is the controller-runtime peer of cmd/bench/peer.
	thePeer contender = "peer"
)

// childOptions say how a contender's process runs, beyond its namespace.
type childOptions struct {
	// resync is its resync period.
	resync time.Duration
	// keepManagedFields and watchAllChildren turn the operator's memory
	// practices off, one or both.
	keepManagedFields, watchAllChildren bool
	// cpuProfile, if set, names a file for the operator's CPU profile over
	// its whole life.
	cpuProfile string
	// heapProfile, if set, names a file for a heap profile of the operator
	// with its memory figures; the operator then records every allocation,
	// so that the profile accounts for all it holds.
	heapProfile string
}

// child is a contender running in a process of its own, as it runs in a
// cluster: its CPU time and memory are its own, and both contenders are
// measured the same way.
type child struct {
	cmd   *exec.Cmd
	stats *measured.Client
	// exited receives the process's end.
	exited chan error
	// startedAt is when the process was started.
	startedAt time.Time
}

// startChild starts c on ns and returns once its caches have synced, with
// the time from its start until then. Its log goes to the control plane's
// logs folder.
func (b *bench) startChild(ctx context.Context, c contender, ns string, co childOptions) (*child, time.Duration, error) {
	b.children++
	dir := filepath.Join(b.env.Dir, "logs")
	socket := filepath.Join(dir, fmt.Sprintf("%s-%d.sock", c, b.children))
	var cmd *exec.Cmd
	switch c {
	case theOperator:
		exe, err := os.Executable()
		if err != nil {
			return nil, 0, err
		}
		cmd = exec.Command(exe, "-operator-child", "-kubeconfig", b.env.KubeconfigPath, "-namespace", ns,
			"-workers", strconv.Itoa(b.o.workers), "-qps", fmt.Sprint(b.o.qps), "-burst", strconv.Itoa(b.o.burst),
			"-child-resync", co.resync.String(), "-stats-socket", socket, "-child-cpuprofile", co.cpuProfile,
			"-child-heap-profile="+strconv.FormatBool(co.heapProfile != ""),
			"-keep-managed-fields="+strconv.FormatBool(co.keepManagedFields),
			"-watch-all-children="+strconv.FormatBool(co.watchAllChildren))
	case thePeer:
		cmd = exec.Command(b.peerBinary, "-namespace", ns, "-workers", strconv.Itoa(b.o.workers),
			"-sync-period", co.resync.String(), "-cluster-domain", clusterDomain, "-stats-socket", socket)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+b.env.KubeconfigPath)
	}
	logFile, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%d.log", c, b.children)))
	if err != nil {
		return nil, 0, err
	}
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// The kernel kills the child if the benchmark dies first, as test/env
	// does its control planes: no contender outlives a run.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	ch := &child{cmd: cmd, stats: measured.NewClient(socket), exited: make(chan error, 1), startedAt: time.Now()}
	if err := cmd.Start(); err != nil {
		return nil, 0, fmt.Errorf("starting the %s: %w", c, err)
	}
	go func() { ch.exited <- cmd.Wait() }()
	err = wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-ch.exited:
			ch.exited <- err
			return false, fmt.Errorf("the %s exited (%v); its log is %s", c, err, logFile.Name())
		default:
		}
		s, err := ch.stats.Get(ctx, false, "")
		return err == nil && s.Synced, nil
	})
	if err != nil {
		return nil, 0, errors.Join(fmt.Errorf("waiting for the %s's caches: %w", c, err), ch.stop())
	}
	return ch, time.Since(ch.startedAt), nil
}

// requests returns the child's requests so far.
func (ch *child) requests(ctx context.Context) (map[string]int, error) {
	s, err := ch.stats.Get(ctx, false, "")
	return s.Requests, err
}

// cpu returns the CPU time the child has used so far.
func (ch *child) cpu() (time.Duration, error) { return measured.CPUTime(ch.cmd.Process.Pid) }

// stop ends the child with SIGTERM, as a pod's end would, and waits for it.
func (ch *child) stop() error {
	if err := ch.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case err := <-ch.exited:
		return err
	case <-time.After(30 * time.Second):
		_ = ch.cmd.Process.Kill()
		return fmt.Errorf("process %d did not end within 30s of SIGTERM", ch.cmd.Process.Pid)
	}
}

// runOperatorChild is the whole life of an operator child: it runs the
// operator on the namespace it was given, serving its figures on the stats
// socket, until SIGTERM.
func runOperatorChild(o options) (err error) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if o.child.cpuProfile != "" {
		stopProfile, err := profile(o.child.cpuProfile)
		if err != nil {
			return err
		}
		defer stopProfile()
	}
	base, err := clientcmd.BuildConfigFromFlags("", o.child.kubeconfig)
	if err != nil {
		return err
	}
	op, err := harness.RunOperator(restConfig(base, o.qps, o.burst), operator.Config{
		Namespaces: []string{o.child.namespace}, Workers: o.workers, ResyncPeriod: o.child.resync, ClusterDomain: clusterDomain,
		KeepManagedFields: o.child.keepManagedFields, WatchAllChildren: o.child.watchAllChildren,
	})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, op.Stop()) }()
	return measured.Serve(ctx, o.child.statsSocket, op.Requests, op.Controller.HasSynced)
}
