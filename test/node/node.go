// Package node starts a Kubernetes cluster with one real node: the control
// plane of test/env (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler) with containerd and runc running real containers, kubelet,
// kube-proxy in iptables mode and CoreDNS. It is the third kind of test
// cluster, beside test/env's API-server-only and kwok ones: pods here run
// processes, probes are real, volumes hold bytes, and an evicted pod takes as
// long to come back as it takes to start.
//
// The cluster, and the process that talks to it, live in the network, mount
// and PID namespaces that hack/node-netns.sh makes: loopback and one bridge,
// no interface to the outside, so no packet can leave the machine; tmpfs over
// /run, /var/lib and /var/log, so no file is left on it; and every process
// ends with the namespace. RunMain runs a test binary there by running itself
// again through that script, and checks afterwards that the machine looks as
// it did before.
//
// Each part has its file: containerd.go, kubelet.go, proxy.go, dns.go and
// storage.go (local-path-provisioner and the default StorageClass);
// images.go builds and imports the images that pods run.
package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"lin.dev/lin-operator/test/env"
)

// Name is the Node's name.
const Name = "lin-node"

// stateDir holds the node's files: containerd's root, kubelet's root, the
// configurations. It is on the tmpfs that hack/node-netns.sh mounts over
// /var/lib, so it goes with the namespace.
const stateDir = "/var/lib/lin-node"

// Network is what hack/node-netns.sh set up, read from its environment.
type Network struct {
	// NodeIP is the bridge's address: the node's InternalIP, where
	// kube-apiserver, kubelet and CoreDNS listen, and the pods' gateway.
	NodeIP string
	// Bridge is the bridge's name, which the CNI configuration names too.
	Bridge string
	// PodCIDR is the range that pods get their addresses from.
	PodCIDR string
	// ServiceCIDR is kube-apiserver's Service range.
	ServiceCIDR string
	// CgroupRoot is the cgroup under which kubelet puts every pod, removed
	// by the script after the run.
	CgroupRoot string
}

// errOutside is returned when the caller is not inside the namespaces of
// hack/node-netns.sh.
var errOutside = errors.New("not inside the namespaces of hack/node-netns.sh (LIN_NODE_NETNS is not set); a real node runs only there")

// Inside says whether this process runs inside the namespaces of
// hack/node-netns.sh, as RunMain's second run does.
func Inside() bool {
	return os.Getenv("LIN_NODE_NETNS") == "1"
}

// CurrentNetwork returns the Network of the namespace this process runs in,
// or an error when it does not run inside hack/node-netns.sh.
func CurrentNetwork() (Network, error) {
	if !Inside() {
		return Network{}, errOutside
	}
	n := Network{
		NodeIP:      os.Getenv("LIN_NODE_IP"),
		Bridge:      os.Getenv("LIN_NODE_BRIDGE"),
		PodCIDR:     os.Getenv("LIN_NODE_POD_CIDR"),
		ServiceCIDR: os.Getenv("LIN_NODE_SERVICE_CIDR"),
		CgroupRoot:  os.Getenv("LIN_NODE_CGROUP_ROOT"),
	}
	if n.NodeIP == "" || n.Bridge == "" || n.PodCIDR == "" || n.ServiceCIDR == "" || n.CgroupRoot == "" {
		return Network{}, fmt.Errorf("hack/node-netns.sh left part of its environment empty: %+v", n)
	}
	return n, isolated(n.Bridge)
}

// Options configures Start.
type Options struct {
	// Images are docker-archive or OCI tarballs imported into containerd
	// before the node registers, so that the first pod finds them.
	Images []string
	// Logf, if set, receives progress messages with timings.
	Logf func(format string, args ...any)
}

// Timings records how long the phases of Start took, each from its start.
type Timings struct {
	// ControlPlane is when kube-apiserver and the controllers were ready.
	ControlPlane time.Duration
	// NodeReady is when the Node was Ready and schedulable and DNS
	// answered.
	NodeReady time.Duration
}

// Cluster is a running control plane with one real node.
type Cluster struct {
	// Env is the control plane: clients, kubeconfig, logs. Its Stop stops
	// the node's programs too.
	*env.Env
	// Network is the node's network.
	Network Network
	// Timings says how long the start took.
	Timings Timings

	// ctr runs containerd's client against this node's containerd.
	ctr func(ctx context.Context, args ...string) error
	// logf receives progress messages.
	logf func(format string, args ...any)
}

// Start starts the cluster and returns once the Node is Ready, kube-proxy
// has programmed the kubernetes Service and CoreDNS answers. It must run
// inside hack/node-netns.sh. On error nothing is left running.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	began := time.Now()
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	network, err := CurrentNetwork()
	if err != nil {
		return nil, err
	}
	binDir, err := env.ResolveBinDir("")
	if err != nil {
		return nil, err
	}
	if err := checkParts(binDir); err != nil {
		return nil, err
	}
	// containerd finds its shim on PATH.
	if err := os.Setenv("PATH", binDir+string(os.PathListSeparator)+os.Getenv("PATH")); err != nil {
		return nil, err
	}
	e, err := env.Start(ctx, env.Options{
		Mode:                  env.Cluster,
		Nodes:                 -1,
		BinDir:                binDir,
		ServiceClusterIPRange: network.ServiceCIDR,
		APIServerAddress:      network.NodeIP,
		Logf:                  opts.Logf,
		ExtraArgs:             controlPlaneArgs(),
	})
	if err != nil {
		return nil, err
	}
	c := &Cluster{Env: e, Network: network, logf: opts.Logf}
	defer func() {
		if err != nil {
			if stopErr := e.Stop(); stopErr != nil {
				opts.Logf("node: stopping after a failed start: %v", stopErr)
			}
		}
	}()
	c.Timings.ControlPlane = time.Since(began)
	opts.Logf("node: control plane ready after %v", c.Timings.ControlPlane.Round(time.Millisecond))

	if err := c.startContainerd(ctx); err != nil {
		return nil, err
	}
	for _, image := range opts.Images {
		if err := c.ImportImage(ctx, image); err != nil {
			return nil, err
		}
	}
	if err := c.startKubelet(ctx); err != nil {
		return nil, err
	}
	if err := c.startProxy(ctx); err != nil {
		return nil, err
	}
	if err := c.startDNS(ctx); err != nil {
		return nil, err
	}
	if err := c.startStorage(ctx); err != nil {
		return nil, err
	}
	if err := c.waitNodeReady(ctx); err != nil {
		return nil, err
	}
	c.Timings.NodeReady = time.Since(began)
	opts.Logf("node: %s Ready after %v", Name, c.Timings.NodeReady.Round(time.Millisecond))
	return c, nil
}

// controlPlaneArgs are the flags that fit test/env's control plane to the
// node: kube-apiserver, which listens on the bridge's address
// (Options.APIServerAddress, so that pods reach it through the kubernetes
// Service), reaches kubelet by the Node's InternalIP, not by a host name
// that no DNS resolves.
func controlPlaneArgs() map[string][]string {
	return map[string][]string{
		"kube-apiserver": {"--kubelet-preferred-address-types", "InternalIP"},
		"kube-controller-manager": {
			// Its default is under /usr/libexec, outside the run.
			"--flex-volume-plugin-dir", filepath.Join(stateDir, "controller-manager", "volume-plugins"),
		},
	}
}

// parts are the programs of the node that hack/build-tools.sh builds.
var parts = []string{"containerd", "containerd-shim-runc-v2", "ctr", "kubelet", "kube-proxy", "coredns", "local-path-provisioner"}

// hostParts are the programs of the node that come from Debian
// (hack/install-node-deps.sh), with the package of each.
var hostParts = map[string]string{
	"runc":                "runc",
	"iptables":            "iptables",
	"conntrack":           "conntrack",
	"unshare":             "util-linux",
	"nsenter":             "util-linux",
	"ip":                  "iproute2",
	"/usr/lib/cni/bridge": "containernetworking-plugins",
	busyboxBinary:         "busybox-static",
}

// checkParts reports the first program of the node that is missing.
func checkParts(binDir string) error {
	for _, name := range parts {
		if _, err := os.Stat(filepath.Join(binDir, name)); err != nil {
			return fmt.Errorf("%s is not in %s; run hack/build-tools.sh", name, binDir)
		}
	}
	return checkHostParts()
}

// checkHostParts reports the first program from Debian that is missing.
func checkHostParts() error {
	for name, pkg := range hostParts {
		if _, err := exec.LookPath(name); err != nil {
			return fmt.Errorf("%s is missing (Debian package %s); run hack/install-node-deps.sh as root", name, pkg)
		}
	}
	return nil
}

// writeFile writes data to path, making its folder first.
func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
