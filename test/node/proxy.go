package node

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// proxyConfig is kube-proxy's configuration: iptables mode; NodePorts on
// the bridge's address only, and not on loopback (which would need
// route_localnet); every conntrack setting at 0, which leaves the kernel's
// conntrack sysctls as they are; its health and metrics listeners on
// loopback.
const proxyConfig = `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %[1]s
mode: iptables
clusterCIDR: %[2]s
hostnameOverride: %[3]s
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
nodePortAddresses: [%[4]s/32]
iptables:
  localhostNodePorts: false
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`

// startProxy runs kube-proxy and waits until it has programmed the
// kubernetes Service, which every pod that talks to the API server needs.
func (c *Cluster) startProxy(ctx context.Context) error {
	configPath := filepath.Join(stateDir, "kube-proxy", "config.yaml")
	config := fmt.Sprintf(proxyConfig, c.KubeconfigPath, c.Network.PodCIDR, Name, c.Network.NodeIP)
	if err := writeFile(configPath, []byte(config)); err != nil {
		return err
	}
	if _, err := c.Run("kube-proxy", filepath.Join(c.BinDir, "kube-proxy"), "--config", configPath); err != nil {
		return err
	}
	return c.WaitFor(ctx, "kube-proxy to program the kubernetes Service", []string{"kube-proxy"}, func(ctx context.Context) (bool, error) {
		out, err := exec.CommandContext(ctx, "iptables-save", "-t", "nat").Output()
		if err != nil {
			return false, err
		}
		return strings.Contains(string(out), "default/kubernetes:https"), nil
	})
}
