package node

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/template"
	"time"
)

var (
	containerdDir    = filepath.Join(stateDir, "containerd")
	containerdSocket = "/run/lin-node/containerd/containerd.sock"
	cniConfDir       = filepath.Join(stateDir, "cni", "net.d")
)

// PauseImage is the sandbox image that containerd pins; images.go builds it
// from test/node/pause.
const PauseImage = "lin.dev/pause:test"

// containerdConfig is containerd's configuration (version 3, containerd
// 2.x). What each setting is for:
//   - root, state and the sockets of its own, under the run's tmpfs;
//   - restrict_oom_score_adj: the machines have no CAP_SYS_RESOURCE, so
//     nothing may lower oom_score_adj; unrestricted, runc fails every
//     sandbox with "can't get final child's PID from pipe";
//   - the sandbox image pinned to the imported pause image, which is never
//     pulled, and BinaryName, Debian's runc, built with seccomp;
//   - SystemdCgroup false: there is no systemd, kubelet uses cgroupfs too;
//   - the CNI plugins of Debian and a configuration folder of its own;
//   - the streaming server (exec, logs, port-forward) on loopback, network
//     namespaces under its state folder, and NRI off.
var containerdConfig = template.Must(template.New("containerd").Parse(`version = 3
root = "{{.Root}}"
state = "/run/lin-node/containerd"

[grpc]
  address = "{{.Socket}}"

[ttrpc]
  address = "{{.Socket}}.ttrpc"

[plugins]
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = '{{.Pause}}'

  [plugins.'io.containerd.cri.v1.runtime']
    restrict_oom_score_adj = true
    netns_mounts_under_state_dir = true
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = 'runc'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = 'io.containerd.runc.v2'
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          BinaryName = '{{.Runc}}'
          SystemdCgroup = false
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ['/usr/lib/cni']
      conf_dir = '{{.CNIConfDir}}'

  [plugins.'io.containerd.grpc.v1.cri']
    stream_server_address = '127.0.0.1'
    stream_server_port = '0'

  [plugins.'io.containerd.nri.v1.nri']
    disable = true
`))

// cniConfig is the pods' network: the bridge that hack/node-netns.sh made,
// as their gateway (isGateway), with a default route through it (which
// isGateway alone does not add) and hairpin mode, so that a pod reaches
// itself through a Service; no masquerade, since nothing lies beyond.
var cniConfig = template.Must(template.New("cni").Parse(`{
  "cniVersion": "1.0.0",
  "name": "lin",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "{{.Bridge}}",
      "isGateway": true,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "{{.PodCIDR}}", "gateway": "{{.NodeIP}}"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": "{{.IPAMDir}}"
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`))

// render fills tmpl with data.
func render(tmpl *template.Template, data any) ([]byte, error) {
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, data); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// startContainerd writes containerd's and CNI's configurations, runs
// containerd and waits until it answers.
func (c *Cluster) startContainerd(ctx context.Context) error {
	runc, err := exec.LookPath("runc")
	if err != nil {
		return fmt.Errorf("runc: %w; run hack/install-node-deps.sh", err)
	}
	config, err := render(containerdConfig, map[string]string{
		"Root": containerdDir, "Socket": containerdSocket, "Pause": PauseImage,
		"Runc": runc, "CNIConfDir": cniConfDir,
	})
	if err != nil {
		return err
	}
	configPath := filepath.Join(containerdDir, "config.toml")
	if err := writeFile(configPath, config); err != nil {
		return err
	}
	cni, err := render(cniConfig, map[string]string{
		"Bridge": c.Network.Bridge, "PodCIDR": c.Network.PodCIDR, "NodeIP": c.Network.NodeIP,
		"IPAMDir": filepath.Join(stateDir, "cni", "ipam"),
	})
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(cniConfDir, "10-lin.conflist"), cni); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(containerdSocket), 0o755); err != nil {
		return err
	}
	if _, err := c.Run("containerd", filepath.Join(c.BinDir, "containerd"), "--config", configPath, "--log-level", "warn"); err != nil {
		return err
	}
	c.ctr = func(ctx context.Context, args ...string) error {
		cmd := exec.CommandContext(ctx, filepath.Join(c.BinDir, "ctr"), append([]string{"--address", containerdSocket, "--namespace", "k8s.io"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	return c.WaitFor(ctx, "containerd to answer", []string{"containerd"}, func(ctx context.Context) (bool, error) {
		err := c.ctr(ctx, "version")
		return err == nil, err
	})
}

// ImportImage imports a docker-archive or OCI tarball into the node's
// containerd, where kubelet finds it under the names it is tagged with.
func (c *Cluster) ImportImage(ctx context.Context, tarball string) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := c.ctr(ctx, "images", "import", "--local", tarball); err != nil {
		return fmt.Errorf("importing %s: %w", tarball, err)
	}
	c.logf("node: imported %s in %v", filepath.Base(tarball), time.Since(start).Round(time.Millisecond))
	return nil
}
