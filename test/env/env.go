// Package env starts a real Kubernetes control plane on the loopback
// interface, for tests and for a local development cluster.
//
// In APIServer mode it runs etcd and kube-apiserver, and installs the
// project's CRDs: enough for tests that only need the API (objects are stored,
// validated and watched, but nothing acts on them). Cluster mode adds
// kube-controller-manager, kube-scheduler and kwok, which plays the kubelet
// for fake Nodes, so that StatefulSets get Pods that are scheduled and become
// Ready, PersistentVolumeClaims bind, and owner references are garbage
// collected, all without containers.
//
// For reliability tests, RestartAPIServer restarts kube-apiserver on the same
// port and etcd, and CompactEtcd discards etcd's history (faults.go).
//
// The binaries come from hack/build-tools.sh, which builds them once into a
// cache outside the repository. The package is Linux-only: it relies on
// process groups and on Pdeathsig so that no program outlives its test.
package env

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Mode selects which parts of a control plane Start runs.
type Mode string

const (
	// APIServer runs etcd and kube-apiserver only.
	APIServer Mode = "apiserver"
	// Cluster also runs kube-controller-manager, kube-scheduler and kwok with
	// fake Nodes.
	Cluster Mode = "cluster"
)

// Options configures Start. The zero value starts an APIServer-mode
// environment in a temporary folder with the repository's CRDs.
type Options struct {
	// Mode is APIServer (the default) or Cluster.
	Mode Mode
	// Dir holds the environment's state: etcd data, keys, kubeconfig and one
	// log file per program under logs/. Empty means a new temporary folder,
	// removed by Stop. A given Dir is kept, and is reused as it is by a later
	// Start.
	Dir string
	// KeepDir keeps the temporary folder made when Dir is empty, for
	// inspecting the logs of a run.
	KeepDir bool
	// Fsync makes etcd sync its writes to disk. It is off by default
	// (etcd runs with --unsafe-no-fsync), which is faster and fine for data
	// that a test throws away; a benchmark of write throughput wants it on.
	Fsync bool
	// ServiceClusterIPRange is kube-apiserver's Service CIDR. The default,
	// 10.96.0.0/16, holds far more than the 1000 Services of a scale test;
	// a /24 runs out at about 250.
	ServiceClusterIPRange string
	// APIServerAddress is where kube-apiserver listens, the address it
	// advertises as the kubernetes Service's endpoint and the server of the
	// kubeconfig. Empty means 127.0.0.1, where no pod could reach it; the
	// real node of test/node gives its bridge's address, so that pods do.
	APIServerAddress string
	// CRDDir is a folder of CRD manifests (.yaml, .yml or .json, several
	// documents a file allowed) installed before Start returns. Empty means
	// deploy/crds in the module root, found by walking up from the working
	// directory to the folder holding go.mod.
	CRDDir string
	// SkipCRDs installs no CRDs at all.
	SkipCRDs bool
	// Nodes is the number of fake kwok Nodes in Cluster mode; 0 means 2, and a
	// negative number means none, and no kwok either: the real node of
	// test/node brings its own kubelet.
	Nodes int
	// NodeCapacity is each fake Node's capacity and allocatable. Empty means
	// 64 CPUs, 256Gi of memory and 1000 Pods, so that scheduling never fails
	// for lack of room.
	NodeCapacity corev1.ResourceList
	// BinDir is the folder of the control-plane binaries. Empty means the
	// LIN_TOOLS_BIN environment variable, else the folder printed by
	// hack/build-tools.sh (which builds what is missing). kwok's stages are
	// read from kwok-stages.yaml in BinDir's parent.
	BinDir string
	// Detach starts the programs in sessions of their own, not tied to the
	// calling process, so that they keep running after it exits (for a local
	// cluster). Without it each program is killed by the kernel when the
	// calling process dies, however it dies.
	Detach bool
	// StartTimeout bounds Start; 0 means 3 minutes. A cold apiserver on a
	// busy 2-core machine can take a good part of a minute.
	StartTimeout time.Duration
	// StopTimeout is how long Stop waits after SIGTERM before it sends
	// SIGKILL; 0 means 5 seconds.
	StopTimeout time.Duration
	// ExtraArgs adds flags to a program, keyed by its name: "etcd",
	// "kube-apiserver", "kube-controller-manager", "kube-scheduler" or
	// "kwok". A flag given twice takes the last value, so these override the
	// defaults.
	ExtraArgs map[string][]string
	// Logf, if set, receives progress messages with timings.
	Logf func(format string, args ...any)
}

// Timings records how long the phases of Start took, each measured from the
// beginning of Start.
type Timings struct {
	// APIServerReady is when kube-apiserver first answered /readyz.
	APIServerReady time.Duration
	// CRDsReady is when every CRD was Established and served.
	CRDsReady time.Duration
	// ClusterReady is when, in Cluster mode, every fake Node was Ready and
	// schedulable and the controllers were working.
	ClusterReady time.Duration
}

// Env is a running control plane.
type Env struct {
	// Config is an admin client configuration (member of system:masters).
	// Its QPS and Burst are raised well above client-go's defaults so that
	// tests are not throttled on the client side; copy it and lower them to
	// measure a client under its real limits.
	Config *rest.Config
	// Client is a clientset for Config.
	Client kubernetes.Interface
	// KubeconfigPath is a kubeconfig file in Dir with the same credentials,
	// for kubectl and for the operator's --kubeconfig.
	KubeconfigPath string
	// Dir is the state folder.
	Dir string
	// BinDir is the folder of the binaries that were started.
	BinDir string
	// Mode is the mode the environment was started in.
	Mode Mode
	// Timings says how long the start took.
	Timings Timings

	opts      Options
	removeDir bool
	mu        sync.Mutex
	procs     []*process
	stopOnce  sync.Once
	stopErr   error

	// etcdURL is etcd's client URL, for the fault injections of faults.go.
	etcdURL string
}

// Start starts a control plane as opts says and returns once it is ready: the
// apiserver answers /readyz, every CRD is Established and, in Cluster mode,
// the fake Nodes are Ready. ctx bounds the start only; the programs run until
// Stop. On error nothing is left running.
func Start(ctx context.Context, opts Options) (*Env, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	for attempt := 1; ; attempt++ {
		e, err := start(ctx, opts)
		if err == nil {
			return e, nil
		}
		// Free ports are picked before the programs bind them, so another
		// process can take one in between; that is worth another go.
		if attempt == 3 || !portInUse(err) || ctx.Err() != nil {
			return nil, err
		}
		opts.Logf("env: a port was taken before it was bound, starting again: %v", err)
	}
}

// setDefaults fills the zero fields of o and checks the rest.
func (o *Options) setDefaults() error {
	switch o.Mode {
	case "":
		o.Mode = APIServer
	case APIServer, Cluster:
	default:
		return fmt.Errorf("unknown mode %q", o.Mode)
	}
	if o.APIServerAddress == "" {
		o.APIServerAddress = "127.0.0.1"
	}
	if o.ServiceClusterIPRange == "" {
		o.ServiceClusterIPRange = "10.96.0.0/16"
	}
	if !o.SkipCRDs && o.CRDDir == "" {
		root, err := RepoRoot()
		if err != nil {
			return fmt.Errorf("finding deploy/crds: %w", err)
		}
		o.CRDDir = filepath.Join(root, "deploy", "crds")
	}
	if o.Nodes == 0 {
		o.Nodes = 2
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 3 * time.Minute
	}
	if o.StopTimeout == 0 {
		o.StopTimeout = 5 * time.Second
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	binDir, err := ResolveBinDir(o.BinDir)
	if err != nil {
		return err
	}
	o.BinDir = binDir
	return checkBinaries(o.BinDir, o.Mode)
}

// start makes one attempt at starting the environment.
func start(ctx context.Context, opts Options) (_ *Env, err error) {
	began := time.Now()
	e := &Env{Mode: opts.Mode, BinDir: opts.BinDir, opts: opts}
	if opts.Dir == "" {
		removeStaleTempDirs()
		if e.Dir, err = os.MkdirTemp("", tempDirPrefix); err != nil {
			return nil, err
		}
		e.removeDir = !opts.KeepDir
		if e.removeDir {
			// Marks the folder as disposable once this process is gone.
			if err := os.WriteFile(filepath.Join(e.Dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
				return nil, err
			}
		}
	} else {
		if e.Dir, err = filepath.Abs(opts.Dir); err != nil {
			return nil, err
		}
	}
	defer func() {
		if err != nil {
			if stopErr := e.Stop(); stopErr != nil {
				opts.Logf("env: cleaning up after a failed start: %v", stopErr)
			}
		}
	}()
	for _, sub := range []string{"logs", "pki", "apiserver", "controller-manager", "scheduler"} {
		if err := os.MkdirAll(filepath.Join(e.Dir, sub), 0o755); err != nil {
			return nil, err
		}
	}
	// One port each for etcd's clients and peers, the apiserver, and the
	// health endpoints of the controller manager and the scheduler.
	ports, err := freePorts(5)
	if err != nil {
		return nil, err
	}
	etcdPort, peerPort, apiPort, cmPort, schedPort := ports[0], ports[1], ports[2], ports[3], ports[4]

	if err := e.startEtcd(ctx, etcdPort, peerPort); err != nil {
		return nil, err
	}
	if err := e.startAPIServer(ctx, etcdPort, apiPort); err != nil {
		return nil, err
	}
	e.Timings.APIServerReady = time.Since(began)
	opts.Logf("env: kube-apiserver ready on port %d after %v", apiPort, e.Timings.APIServerReady.Round(time.Millisecond))

	if !opts.SkipCRDs {
		n, err := e.installCRDs(ctx, opts.CRDDir)
		if err != nil {
			return nil, err
		}
		e.Timings.CRDsReady = time.Since(began)
		opts.Logf("env: %d CRD(s) from %s established after %v", n, opts.CRDDir, e.Timings.CRDsReady.Round(time.Millisecond))
	}

	if opts.Mode == Cluster {
		if err := e.startCluster(ctx, cmPort, schedPort); err != nil {
			return nil, err
		}
		e.Timings.ClusterReady = time.Since(began)
		opts.Logf("env: cluster with %d node(s) ready after %v", max(opts.Nodes, 0), e.Timings.ClusterReady.Round(time.Millisecond))
	} else if err := e.createDefaultServiceAccount(ctx); err != nil {
		return nil, err
	}
	return e, nil
}

const (
	// tempDirPrefix names the temporary folders Start makes.
	tempDirPrefix = "lin-env-"
	// ownerFile, in a temporary folder, holds the pid of the process that
	// made it.
	ownerFile = "owner.pid"
)

// removeStaleTempDirs removes the temporary folders of earlier test processes
// that died without running Stop (killed, or timed out): their programs died
// with them, but their folders, etcd data included, would pile up. A folder
// whose owner is still alive, or that was kept on purpose (no owner file), is
// left alone.
func removeStaleTempDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), tempDirPrefix+"*"))
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || pid <= 0 || syscall.Kill(pid, 0) != syscall.ESRCH {
			continue
		}
		_ = os.RemoveAll(dir)
	}
}

// tier orders the programs for Stop: the ones that talk to the apiserver go
// first, then the apiserver, then etcd, so that none spends its grace period
// retrying a server that is already gone.
func tier(name string) int {
	switch name {
	case "etcd":
		return 0
	case "kube-apiserver":
		return 1
	default:
		return 2
	}
}

// run starts one program with its default args followed by the user's extra
// ones, logging to logs/<name>.log.
func (e *Env) run(name string, args ...string) (*process, error) {
	return e.runPath(name, filepath.Join(e.BinDir, name), args...)
}

// runPath is run with the binary at path.
func (e *Env) runPath(name, path string, args ...string) (*process, error) {
	args = append(args, e.opts.ExtraArgs[name]...)
	p, err := startProcess(name, path, args, filepath.Join(e.Dir, "logs", name+".log"), e.opts.Detach)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.procs = append(e.procs, p)
	e.mu.Unlock()
	if err := e.recordProcesses(); err != nil {
		return nil, fmt.Errorf("recording the started programs: %w", err)
	}
	return p, nil
}

// processesFile, in Dir, lists the programs started so far. It is rewritten
// as each one starts, so that a caller that dies during Start in Detach mode
// (whose programs do not die with it) still leaves a record from which
// StopProcesses can stop them.
const processesFile = "processes.json"

// recordProcesses writes processesFile through a temporary file, so that a
// reader never sees half of it.
func (e *Env) recordProcesses() error {
	data, err := json.MarshalIndent(e.Processes(), "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(e.Dir, processesFile)
	if err := os.WriteFile(path+".tmp", append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

// RecordedProcesses returns the programs that Start recorded in dir as it
// started them, for stopping a detached environment from another process
// with StopProcesses. It returns an error satisfying errors.Is(err,
// fs.ErrNotExist) when dir holds no record.
func RecordedProcesses(dir string) ([]Process, error) {
	data, err := os.ReadFile(filepath.Join(dir, processesFile))
	if err != nil {
		return nil, err
	}
	var procs []Process
	if err := json.Unmarshal(data, &procs); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, processesFile), err)
	}
	return procs, nil
}

// startEtcd runs a single-member etcd and waits until it is healthy.
func (e *Env) startEtcd(ctx context.Context, port, peerPort int) error {
	client := "http://127.0.0.1:" + strconv.Itoa(port)
	peer := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	e.etcdURL = client
	args := []string{
		"--name", "lin-env",
		"--data-dir", filepath.Join(e.Dir, "etcd"),
		"--listen-client-urls", client,
		"--advertise-client-urls", client,
		"--listen-peer-urls", peer,
		// The initial cluster has to name the peer URL, or etcd refuses a
		// peer port other than 2380.
		"--initial-advertise-peer-urls", peer,
		"--initial-cluster", "lin-env=" + peer,
		"--log-level", "warn",
	}
	if !e.opts.Fsync {
		args = append(args, "--unsafe-no-fsync")
	}
	p, err := e.run("etcd", args...)
	if err != nil {
		return err
	}
	return e.waitFor(ctx, "etcd to be healthy", []*process{p}, func(ctx context.Context) (bool, error) {
		body, err := httpGet(ctx, http.DefaultClient, client+"/health", "")
		return err == nil && bytes.Contains(body, []byte(`"health":"true"`)), err
	})
}

// startAPIServer runs kube-apiserver, waits for /readyz, and then writes the
// kubeconfig and builds the clients.
func (e *Env) startAPIServer(ctx context.Context, etcdPort, port int) error {
	pki := filepath.Join(e.Dir, "pki")
	saKey, saPub := filepath.Join(pki, "sa.key"), filepath.Join(pki, "sa.pub")
	if err := writeServiceAccountKeys(saKey, saPub); err != nil {
		return fmt.Errorf("writing the service account keys: %w", err)
	}
	token, err := writeTokenFile(filepath.Join(pki, "tokens.csv"))
	if err != nil {
		return fmt.Errorf("writing the token file: %w", err)
	}
	certDir := filepath.Join(e.Dir, "apiserver")
	address := e.opts.APIServerAddress
	// The default advertise address is that of a non-loopback interface,
	// which may not exist. A loopback one is refused as an endpoint of the
	// kubernetes Service, but then nothing runs in the cluster to call that
	// Service, so its endpoints are not kept.
	reconciler := "none"
	if address != "127.0.0.1" {
		reconciler = "lease"
	}
	p, err := e.run("kube-apiserver",
		"--etcd-servers", "http://127.0.0.1:"+strconv.Itoa(etcdPort),
		"--bind-address", address,
		"--advertise-address", address,
		"--endpoint-reconciler-type", reconciler,
		"--secure-port", strconv.Itoa(port),
		// kube-apiserver makes its own CA and serving certificate here.
		"--cert-dir", certDir,
		"--token-auth-file", filepath.Join(pki, "tokens.csv"),
		"--authorization-mode", "RBAC",
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file", saPub,
		"--service-account-signing-key-file", saKey,
		"--service-cluster-ip-range", e.opts.ServiceClusterIPRange,
		"--allow-privileged=true",
	)
	if err != nil {
		return err
	}
	certFile := filepath.Join(certDir, "apiserver.crt")
	server := "https://" + net.JoinHostPort(address, strconv.Itoa(port))
	readyz := server + "/readyz"
	err = e.waitFor(ctx, "kube-apiserver /readyz", []*process{p}, func(ctx context.Context) (bool, error) {
		// The certificate appears shortly after the start; it is read
		// again on every try so that a half-written file is not kept.
		ca, err := os.ReadFile(certFile)
		if err != nil {
			return false, err
		}
		client, err := httpsClient(ca)
		if err != nil {
			return false, err
		}
		body, err := httpGet(ctx, client, readyz, token)
		return err == nil && strings.TrimSpace(string(body)) == "ok", err
	})
	if err != nil {
		return err
	}
	// The serving certificate file also holds the CA that signed it, which
	// is what clients need to trust.
	ca, err := os.ReadFile(certFile)
	if err != nil {
		return err
	}
	e.KubeconfigPath = filepath.Join(e.Dir, "kubeconfig")
	if err := writeKubeconfig(e.KubeconfigPath, server, ca, token); err != nil {
		return fmt.Errorf("writing the kubeconfig: %w", err)
	}
	if e.Config, err = clientcmd.BuildConfigFromFlags("", e.KubeconfigPath); err != nil {
		return err
	}
	e.Config.QPS, e.Config.Burst = 1000, 2000
	e.Client, err = kubernetes.NewForConfig(e.Config)
	return err
}

// createDefaultServiceAccount creates the default namespace's default
// ServiceAccount, which Pods need to pass admission. In Cluster mode the
// serviceaccount controller does this in every namespace; in APIServer mode
// nothing would.
func (e *Env) createDefaultServiceAccount(ctx context.Context) error {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: metav1.NamespaceDefault}}
	_, err := e.Client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Create(ctx, sa, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the default ServiceAccount: %w", err)
	}
	return nil
}

// pollInterval is how often readiness is checked: short, since every
// millisecond of start-up is paid by every test package.
const pollInterval = 100 * time.Millisecond

// waitFor calls check until it reports true. It fails early, with the end of
// the program's log, if one of the watched programs exits meanwhile, and on a
// timeout reports the last error and the end of the last watched program's
// log.
func (e *Env) waitFor(ctx context.Context, what string, watched []*process, check func(context.Context) (bool, error)) error {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	var lastErr error
	for {
		for _, p := range watched {
			if p.exited() {
				return fmt.Errorf("waiting for %s: %w", what, p.exitError())
			}
		}
		checkCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ok, err := check(checkCtx)
		cancel()
		if ok {
			return nil
		}
		if err != nil {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			reason := fmt.Sprintf("gave up waiting for %s: %v", what, ctx.Err())
			if lastErr != nil {
				reason += " (last error: " + lastErr.Error() + ")"
			}
			if len(watched) == 0 {
				return errors.New(reason)
			}
			p := watched[len(watched)-1]
			return &ProcessError{Process: p.Process, Reason: reason, LogTail: LogTail(p.LogPath)}
		case <-tick.C:
		}
	}
}

// httpsClient trusts only the given CA bundle.
func httpsClient(caPEM []byte) (*http.Client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("no certificate in the CA file yet")
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}, nil
}

// insecureClient is for the health endpoints of the controller manager and
// the scheduler, which serve certificates they generate in memory and that
// nothing can verify; the endpoints are on loopback and carry no data.
var insecureClient = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}

// httpGet returns the body of a 200 answer to a GET of url.
func httpGet(ctx context.Context, client *http.Client, url, token string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return body, fmt.Errorf("GET %s: %s: %s", url, resp.Status, lastLines(string(body), 10))
	}
	return body, nil
}

// Run starts one more program, path with args, logging to logs/<name>.log,
// under the same care as the control plane's own: it is tied to this process
// unless Options.Detach, recorded, and stopped by Stop before kube-apiserver
// and etcd. It is for the parts of a cluster that other packages add, such as
// the kubelet of test/node.
func (e *Env) Run(name, path string, args ...string) (Process, error) {
	p, err := e.runPath(name, path, args...)
	if err != nil {
		return Process{}, err
	}
	return p.Process, nil
}

// WaitFor calls check every pollInterval until it reports true, ctx ends, or
// one of the programs named in watch exits (the error then carries the end
// of its log).
func (e *Env) WaitFor(ctx context.Context, what string, watch []string, check func(context.Context) (bool, error)) error {
	return e.waitFor(ctx, what, e.processes(watch...), check)
}

// Processes returns the programs that were started, in the order they were
// started.
func (e *Env) Processes() []Process {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]Process, len(e.procs))
	for i, p := range e.procs {
		out[i] = p.Process
	}
	return out
}

// Stop stops every program (SIGTERM to its process group, then SIGKILL after
// Options.StopTimeout) and removes Dir if Start made it. It may be called more
// than once and from several goroutines; later calls return the first
// result.
func (e *Env) Stop() error {
	e.stopOnce.Do(func() { e.stopErr = e.stop() })
	return e.stopErr
}

// stop does the work of Stop, once.
func (e *Env) stop() error {
	e.mu.Lock()
	procs := append([]*process(nil), e.procs...)
	e.mu.Unlock()
	var errs []error
	for t := 2; t >= 0; t-- {
		// The programs of one tier do not depend on each other, so they
		// stop together, which keeps Stop within one timeout per tier.
		var wg sync.WaitGroup
		var errMu sync.Mutex
		for _, p := range procs {
			if tier(p.Name) != t {
				continue
			}
			wg.Go(func() {
				if err := p.stop(e.opts.StopTimeout); err != nil {
					errMu.Lock()
					errs = append(errs, err)
					errMu.Unlock()
				}
			})
		}
		wg.Wait()
	}
	if e.removeDir {
		if err := os.RemoveAll(e.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Kubectl runs the built kubectl against the environment and returns its
// standard output. On failure the error carries kubectl's standard error.
func (e *Env) Kubectl(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(e.BinDir, "kubectl"), append([]string{"--kubeconfig", e.KubeconfigPath}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
