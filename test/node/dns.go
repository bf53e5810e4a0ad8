package node

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"time"
)

// corefile serves the cluster domain from the API server, and nothing else:
// with no upstream, a name outside the cluster gets an answer at once
// instead of a query that can leave nowhere. CoreDNS listens on the node's
// address, which kubelet gives pods as their name server.
const corefile = `.:53 {
    bind %[1]s
    errors
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig %[2]s
        pods insecure
    }
    cache 5
}
`

// startDNS runs CoreDNS and waits until it resolves the kubernetes Service.
func (c *Cluster) startDNS(ctx context.Context) error {
	path := filepath.Join(stateDir, "coredns", "Corefile")
	if err := writeFile(path, fmt.Appendf(nil, corefile, c.Network.NodeIP, c.KubeconfigPath)); err != nil {
		return err
	}
	if _, err := c.Run("coredns", filepath.Join(c.BinDir, "coredns"), "-conf", path); err != nil {
		return err
	}
	resolver := c.Resolver()
	return c.WaitFor(ctx, "CoreDNS to resolve the kubernetes Service", []string{"coredns"}, func(ctx context.Context) (bool, error) {
		addrs, err := resolver.LookupHost(ctx, "kubernetes.default.svc.cluster.local")
		return err == nil && len(addrs) > 0, err
	})
}

// Resolver asks the cluster's DNS, as a pod does.
func (c *Cluster) Resolver() *net.Resolver {
	server := net.JoinHostPort(c.Network.NodeIP, "53")
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		d := net.Dialer{Timeout: 2 * time.Second}
		return d.DialContext(ctx, network, server)
	}}
}
