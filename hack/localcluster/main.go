// Command localcluster runs a local development cluster: etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler and kwok with fake
// Nodes, started by the test/env package in Cluster mode and left running in
// the background, for `make run` and for trying the operator by hand. Its
// default StorageClass has volumes for claims to bind to (env.ProvideVolumes).
//
//	go run ./hack/localcluster up     [--dir .state/cluster] [--nodes 2] [--volumes 64] [--fsync]
//	go run ./hack/localcluster status [--dir .state/cluster]
//	go run ./hack/localcluster down   [--dir .state/cluster]
//
// up starts a cluster, or reuses the one already running from the same dir,
// and prints the path of its kubeconfig on standard output (the only thing it
// prints there, so that scripts can capture it) and how to use it on standard
// error. down stops every program of the cluster and removes the dir.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"lin.dev/lin-operator/test/env"
)

const (
	// stateFile, in the cluster's dir, is written once the cluster is up.
	// The programs themselves are recorded by test/env as it starts them,
	// so that down can stop them even after an up that did not finish.
	stateFile = "state.json"
	// markerFile is written before the cluster starts, so that down can
	// recognise (and remove) the dir of an up that failed half way, and so
	// that up never wipes a dir it did not make.
	markerFile = ".localcluster"
	// stopTimeout is how long each program gets to exit after SIGTERM.
	stopTimeout = 5 * time.Second
	// defaultVolumes and volumeSize make the default StorageClass's volumes:
	// enough for the examples many times over, and larger than any claim
	// one would try by hand, since under kwok they take no room.
	defaultVolumes = 64
	volumeSize     = "1Ti"
)

// state is the content of stateFile.
type state struct {
	// Kubeconfig is the absolute path of the admin kubeconfig.
	Kubeconfig string `json:"kubeconfig"`
	// BinDir is the folder of the binaries, kubectl among them.
	BinDir string `json:"binDir"`
	// Started is when the cluster became ready.
	Started time.Time `json:"started"`
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "up":
		err = up(args)
	case "down":
		err = down(args)
	case "status":
		err = status(args)
	case "-h", "--help", "help":
		usage()
	default:
		fmt.Fprintf(os.Stderr, "unknown command %q\n", cmd)
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "localcluster: %v\n", err)
		os.Exit(1)
	}
}

// usage prints how to call the command and exits.
func usage() {
	fmt.Fprintf(os.Stderr, `usage: localcluster up|status|down [--dir DIR]

  up      start a local cluster in DIR, or reuse the one running there, and
          print its kubeconfig path
  status  say whether the cluster in DIR is running (exit status 1 if not)
  down    stop the cluster in DIR and remove DIR

Run "localcluster COMMAND -h" for a command's flags.
`)
	os.Exit(2)
}

// parse parses a command's flags, which all take the state dir, and returns
// it as an absolute path.
func parse(fs *flag.FlagSet, args []string) (string, error) {
	dir := fs.String("dir", ".state/cluster", "folder holding the cluster's state, logs and kubeconfig")
	if err := fs.Parse(args); err != nil {
		return "", err
	}
	if fs.NArg() > 0 {
		return "", fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	return filepath.Abs(*dir)
}

// up starts a cluster, or reuses the one running in the dir.
func up(args []string) error {
	fs := flag.NewFlagSet("up", flag.ExitOnError)
	nodes := fs.Int("nodes", 2, "number of fake kwok Nodes")
	volumes := fs.Int("volumes", defaultVolumes, "number of volumes of the default StorageClass for claims to bind to")
	fsync := fs.Bool("fsync", false, "make etcd sync writes to disk (slower; the cluster is thrown away on the next up anyway)")
	dir, err := parse(fs, args)
	if err != nil {
		return err
	}
	if running, err := clearDir(dir); err != nil || running {
		return err
	}
	// A Ctrl-C or a closed terminal during the start cancels it, and Start
	// then stops what it had started; the programs themselves, in sessions
	// of their own, never see the terminal's signals. A reader of the output
	// that goes away (say, "| head") must not kill this command half way
	// either, so writes to a closed pipe fail quietly instead.
	signal.Ignore(syscall.SIGPIPE)
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer cancel()
	began := time.Now()
	st, err := startDetached(ctx, dir, env.Options{Mode: env.Cluster, Dir: dir, Nodes: *nodes, Fsync: *fsync, Detach: true}, *volumes)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "Cluster started in %v (logs in %s).\n", time.Since(began).Round(time.Millisecond), filepath.Join(dir, "logs"))
	printUsage(dir, st)
	fmt.Println(st.Kubeconfig)
	return nil
}

// clearDir makes dir ready for a new cluster, and reports whether the
// cluster recorded there is running, which it then leaves as it is and
// prints how to use.
func clearDir(dir string) (bool, error) {
	st, err := readState(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	procs, err := env.RecordedProcesses(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	if st != nil && running(st, procs) {
		fmt.Fprintf(os.Stderr, "The cluster in %s is already running.\n", dir)
		printUsage(dir, st)
		fmt.Println(st.Kubeconfig)
		return true, nil
	}
	if len(procs) > 0 {
		// A cluster that is partly gone (a reboot, a killed program, an
		// up that did not finish) is not worth mending: its survivors go
		// and a new one starts.
		fmt.Fprintf(os.Stderr, "The cluster recorded in %s is not running; starting a new one.\n", dir)
		env.StopProcesses(procs, stopTimeout)
	}
	if err := removeOwnDir(dir); err != nil {
		return false, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	return false, os.WriteFile(filepath.Join(dir, markerFile), []byte("made by hack/localcluster\n"), 0o644)
}

// startDetached starts the cluster of opts in dir with volumes for claims,
// records it there, and leaves its programs running; a failure or an
// interruption stops what was started.
func startDetached(ctx context.Context, dir string, opts env.Options, volumes int) (*state, error) {
	opts.Logf = func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
	}
	e, err := env.Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	if err := e.ProvideVolumes(ctx, volumes, volumeSize); err != nil {
		return nil, errors.Join(err, e.Stop())
	}
	if ctx.Err() != nil {
		return nil, errors.Join(errors.New("interrupted"), e.Stop())
	}
	st := &state{Kubeconfig: e.KubeconfigPath, BinDir: e.BinDir, Started: time.Now()}
	if err := writeState(dir, st); err != nil {
		return nil, errors.Join(fmt.Errorf("recording the cluster: %w", err), e.Stop())
	}
	// Returning without e.Stop leaves the programs running: that is the
	// point of Detach.
	return st, nil
}

// printUsage tells a developer how to reach the cluster.
func printUsage(dir string, st *state) {
	fmt.Fprintf(os.Stderr, `
Use it with:
  export KUBECONFIG=%s
  %s get nodes
Stop it with:
  go run ./hack/localcluster down --dir %s

`, st.Kubeconfig, filepath.Join(st.BinDir, "kubectl"), relative(dir))
}

// relative shortens dir for display when it is below the working directory.
func relative(dir string) string {
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, dir); err == nil && !strings.HasPrefix(rel, "..") {
			return rel
		}
	}
	return dir
}

// down stops the cluster recorded in the dir and removes the dir.
func down(args []string) error {
	dir, err := parse(flag.NewFlagSet("down", flag.ExitOnError), args)
	if err != nil {
		return err
	}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(os.Stderr, "No cluster in %s.\n", dir)
		return nil
	}
	procs, err := env.RecordedProcesses(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	stopped := env.StopProcesses(procs, stopTimeout)
	fmt.Fprintf(os.Stderr, "Stopped %d process(es) of the cluster in %s.\n", stopped, dir)
	return removeOwnDir(dir)
}

// status reports on the cluster recorded in the dir; it fails if the
// cluster is not fully running.
func status(args []string) error {
	dir, err := parse(flag.NewFlagSet("status", flag.ExitOnError), args)
	if err != nil {
		return err
	}
	procs, err := env.RecordedProcesses(dir)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no cluster in %s", dir)
	} else if err != nil {
		return err
	}
	for _, p := range procs {
		s := "gone"
		if p.Alive() {
			s = "running"
		}
		fmt.Fprintf(os.Stderr, "%-24s pid %-8d %s\n", p.Name, p.Pid, s)
	}
	st, err := readState(dir)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("the cluster in %s did not finish starting", dir)
	} else if err != nil {
		return err
	}
	if !running(st, procs) {
		return fmt.Errorf("the cluster in %s is not running", dir)
	}
	fmt.Fprintf(os.Stderr, "The cluster in %s is running since %s.\n", dir, st.Started.Format(time.RFC3339))
	fmt.Println(st.Kubeconfig)
	return nil
}

// readState reads the dir's stateFile.
func readState(dir string) (*state, error) {
	data, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return nil, err
	}
	st := &state{}
	if err := json.Unmarshal(data, st); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, stateFile), err)
	}
	return st, nil
}

// writeState writes the state through a temporary file, so that a reader
// never sees half of it.
func writeState(dir string, st *state) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, stateFile+".tmp")
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, stateFile))
}

// removeOwnDir removes dir if it is missing, empty or made by this command;
// anything else is left alone, since the user may have pointed --dir at the
// wrong place.
func removeOwnDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	if len(entries) > 0 {
		if _, err := os.Stat(filepath.Join(dir, markerFile)); err != nil {
			return fmt.Errorf("%s is not empty and was not made by localcluster; not touching it", dir)
		}
	}
	return os.RemoveAll(dir)
}

// running reports whether every program of the cluster is alive and the
// apiserver answers.
func running(st *state, procs []env.Process) bool {
	if len(procs) == 0 {
		return false
	}
	for _, p := range procs {
		if !p.Alive() {
			return false
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", st.Kubeconfig)
	if err != nil {
		return false
	}
	cfg.Timeout = 5 * time.Second
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return false
	}
	body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background())
	return err == nil && strings.TrimSpace(string(body)) == "ok"
}
