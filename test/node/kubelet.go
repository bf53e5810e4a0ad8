package node

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var kubeletDir = filepath.Join(stateDir, "kubelet")

// kubeletHealthz is where kubelet answers /healthz: loopback only.
const kubeletHealthz = "127.0.0.1:10248"

// kubeletConfig is kubelet's configuration. What each setting is for:
//   - failCgroupV1: the machines mount cgroups in hybrid v1 mode, which
//     kubelet 1.35 and later refuse unless told; cgroupfs, as containerd;
//   - cgroupRoot: every pod's cgroup under one folder of the run, which
//     hack/node-netns.sh removes afterwards;
//   - address and healthzBindAddress: listeners on the bridge and loopback
//     only; no read-only port;
//   - authentication and authorization open: kube-apiserver has no client
//     certificate to show in test/env, and nothing but the run's own
//     processes can reach the bridge;
//   - clusterDNS: CoreDNS, on the node's address (dns.go); a resolv.conf of
//     its own, which names no outside server;
//   - no swap check, a volume plugin folder of its own, attach and detach
//     by kubelet itself (the controller manager does not run that
//     controller), no image garbage collection (nothing can be pulled back),
//     and eviction thresholds loose enough for a small tmpfs;
//   - syncFrequency of 5 s, not 1 min: kubelet refreshes a mounted
//     ConfigMap when it syncs the pod, so a changed topology.json reaches
//     running pods within seconds, which the scaling tests wait for.
const kubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: %[1]s
containerRuntimeEndpoint: unix://%[2]s
address: %[3]s
healthzBindAddress: 127.0.0.1
healthzPort: 10248
readOnlyPort: 0
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
clusterDNS: [%[3]s]
clusterDomain: cluster.local
resolvConf: %[4]s
failSwapOn: false
volumePluginDir: %[5]s
enableControllerAttachDetach: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%%
  nodefs.inodesFree: 1%%
  imagefs.available: 1%%
maxPods: 110
serializeImagePulls: false
podLogsDir: /var/log/pods
syncFrequency: 5s
`

// cgroupControllers are the cgroup v1 hierarchies (and the v2 one of the
// hybrid mode) in which kubelet expects its cgroup root to exist.
func cgroupControllers() ([]string, error) {
	entries, err := os.ReadDir("/sys/fs/cgroup")
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, e := range entries {
		path := filepath.Join("/sys/fs/cgroup", e.Name())
		if st, err := os.Stat(path); err == nil && st.IsDir() {
			dirs = append(dirs, path)
		}
	}
	return dirs, nil
}

// makeCgroupRoot makes the cgroup root in every hierarchy; kubelet refuses
// to start when it is missing. A new cpuset cgroup has no CPUs or memory
// nodes; it gets its parent's.
func (c *Cluster) makeCgroupRoot() error {
	dirs, err := cgroupControllers()
	if err != nil {
		return err
	}
	for _, dir := range dirs {
		root := filepath.Join(dir, c.Network.CgroupRoot)
		if err := os.MkdirAll(root, 0o755); err != nil {
			return fmt.Errorf("making the cgroup root: %w", err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if data, err := os.ReadFile(filepath.Join(dir, f)); err == nil {
				if err := os.WriteFile(filepath.Join(root, f), data, 0o644); err != nil {
					return fmt.Errorf("copying %s to the cgroup root: %w", f, err)
				}
			}
		}
	}
	return nil
}

// startKubelet writes kubelet's configuration and runs it; the Node
// registers itself and waitNodeReady waits for it.
func (c *Cluster) startKubelet(ctx context.Context) error {
	if err := c.makeCgroupRoot(); err != nil {
		return err
	}
	resolvConf := filepath.Join(kubeletDir, "resolv.conf")
	if err := writeFile(resolvConf, []byte("# no upstream: the cluster's names are served by CoreDNS\n")); err != nil {
		return err
	}
	config := fmt.Sprintf(kubeletConfig, c.Network.CgroupRoot, containerdSocket, c.Network.NodeIP,
		resolvConf, filepath.Join(kubeletDir, "volume-plugins"))
	configPath := filepath.Join(kubeletDir, "config.yaml")
	if err := writeFile(configPath, []byte(config)); err != nil {
		return err
	}
	if _, err := c.Run("kubelet", filepath.Join(c.BinDir, "kubelet"),
		"--config", configPath,
		"--kubeconfig", c.KubeconfigPath,
		"--node-ip", c.Network.NodeIP,
		"--hostname-override", Name,
		"--root-dir", kubeletDir,
		"--cert-dir", filepath.Join(kubeletDir, "pki"),
		"--v", "1",
	); err != nil {
		return err
	}
	return c.WaitFor(ctx, "kubelet /healthz", []string{"kubelet", "containerd"}, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+kubeletHealthz+"/healthz", nil)
		if err != nil {
			return false, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// waitNodeReady waits until the Node is Ready with no taint that keeps
// pods away.
func (c *Cluster) waitNodeReady(ctx context.Context) error {
	return c.WaitFor(ctx, "node "+Name+" to be Ready", []string{"kubelet", "containerd", "kube-proxy", "coredns"}, func(ctx context.Context) (bool, error) {
		node, err := c.Client.CoreV1().Nodes().Get(ctx, Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if len(node.Spec.Taints) > 0 {
			return false, fmt.Errorf("node %s has taints %v", Name, node.Spec.Taints)
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				if cond.Status != corev1.ConditionTrue {
					return false, fmt.Errorf("node %s not Ready: %s", Name, strings.TrimSpace(cond.Message))
				}
				return true, nil
			}
		}
		return false, nil
	})
}
