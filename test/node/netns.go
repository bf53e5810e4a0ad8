package node

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"lin.dev/lin-operator/test/env"
)

// isolated checks that the network namespace holds loopback, the bridge and
// the pods' veths, and nothing that leads out of the machine.
func isolated(bridge string) error {
	ifaces, err := net.Interfaces()
	if err != nil {
		return err
	}
	for _, i := range ifaces {
		if i.Name != "lo" && i.Name != bridge && !strings.HasPrefix(i.Name, "veth") {
			return fmt.Errorf("the network namespace has interface %s, which may lead outside; a real node runs only in the namespace of hack/node-netns.sh", i.Name)
		}
	}
	return nil
}

// Unavailable says why this machine cannot run a real node, or "" when it
// can: it needs Linux, root and the programs of hack/install-node-deps.sh.
// The parts that hack/build-tools.sh builds are not checked here: the
// tests build them on first use like the control plane's.
func Unavailable() string {
	if runtime.GOOS != "linux" {
		return "a real node needs Linux, this is " + runtime.GOOS
	}
	if os.Geteuid() != 0 {
		return "a real node needs root (namespaces, mounts, cgroups, iptables)"
	}
	if err := checkHostParts(); err != nil {
		return err.Error()
	}
	return ""
}

// reexec runs this test binary again, with the same arguments, inside the
// namespaces of hack/node-netns.sh, and returns its exit code. Around it, it
// checks that the run left the machine as it found it.
func reexec() int {
	root, err := env.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Built here, outside, where the module proxy is reachable; the tools
	// are then only run inside, from the folder found here.
	binDir, err := env.ResolveBinDir("")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	before, err := snapshotHost()
	if err != nil {
		fmt.Fprintln(os.Stderr, "reading the machine's state:", err)
		return 1
	}
	cmd := exec.Command(filepath.Join(root, "hack", "node-netns.sh"), os.Args...)
	cmd.Env = append(os.Environ(), "LIN_TOOLS_BIN="+binDir)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// The script's trap ends the namespace when this process dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	code := 0
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			fmt.Fprintln(os.Stderr, "running hack/node-netns.sh:", err)
			return 1
		}
		code = exit.ExitCode()
	}
	after, err := snapshotHost()
	if err != nil {
		fmt.Fprintln(os.Stderr, "reading the machine's state:", err)
		return 1
	}
	if diff := before.diff(after); diff != "" {
		fmt.Fprintf(os.Stderr, "FAIL: the run left the machine changed:\n%s", diff)
		return 1
	}
	fmt.Fprintln(os.Stderr, "node: the machine's links, routes, mounts, network namespaces, iptables rules, sysctls and cgroups are as before the run")
	return code
}

// hostState is what a run of the real node must leave as it found it, by
// aspect, each as sorted lines.
type hostState map[string][]string

// watchedSysctls are the ones kubelet, kube-proxy and the CNI plugins would
// set in the machine's namespace.
var watchedSysctls = []string{
	"vm/overcommit_memory", "kernel/panic", "kernel/panic_on_oops",
	"net/ipv4/ip_forward", "net/bridge/bridge-nf-call-iptables",
	"net/ipv4/conf/all/route_localnet", "net/netfilter/nf_conntrack_max",
}

// snapshotHost reads the machine's links, routes, mounts, named network
// namespaces, iptables rules, the watched sysctls and the cgroup folders.
func snapshotHost() (hostState, error) {
	s := hostState{}
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	for _, i := range ifaces {
		s["links"] = append(s["links"], i.Name+" "+i.Flags.String())
	}
	for aspect, argv := range map[string][]string{
		"routes":             {"ip", "route", "show", "table", "all"},
		"iptables":           {"iptables", "-S"},
		"iptables nat":       {"iptables", "-t", "nat", "-S"},
		"network namespaces": {"ip", "netns", "list"},
	} {
		out, err := exec.Command(argv[0], argv[1:]...).Output()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
		}
		s[aspect] = lines(string(out))
	}
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	for _, l := range lines(string(mountinfo)) {
		// The mount point and what is mounted there; the ids change
		// with no mount made.
		if f := strings.Fields(l); len(f) > 4 {
			s["mounts"] = append(s["mounts"], f[4]+" "+f[3])
		}
	}
	for _, name := range watchedSysctls {
		if data, err := os.ReadFile(filepath.Join("/proc/sys", name)); err == nil {
			s["sysctls"] = append(s["sysctls"], name+"="+strings.TrimSpace(string(data)))
		}
	}
	dirs, err := cgroupControllers()
	if err != nil {
		return nil, err
	}
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if e.IsDir() && !runningCgroupRoot(e.Name()) {
				s["cgroups"] = append(s["cgroups"], filepath.Join(dir, e.Name()))
			}
		}
	}
	for _, v := range s {
		slices.Sort(v)
	}
	return s, nil
}

// runningCgroupRoot reports whether name is the cgroup root of a real node
// that runs now, beside this one (hack/node-netns.sh names it
// lin-node-PID-N, PID being its own): that run removes it, not this one.
func runningCgroupRoot(name string) bool {
	rest, ok := strings.CutPrefix(name, "lin-node-")
	if !ok {
		return false
	}
	pid, _, _ := strings.Cut(rest, "-")
	n, err := strconv.Atoi(pid)
	return err == nil && n > 0 && syscall.Kill(n, 0) == nil
}

// diff describes what differs between s and after, or "" when nothing does.
func (s hostState) diff(after hostState) string {
	var b strings.Builder
	for _, aspect := range slices.Sorted(maps.Keys(s)) {
		for _, l := range after[aspect] {
			if !slices.Contains(s[aspect], l) {
				fmt.Fprintf(&b, "  %s: new: %s\n", aspect, l)
			}
		}
		for _, l := range s[aspect] {
			if !slices.Contains(after[aspect], l) {
				fmt.Fprintf(&b, "  %s: gone: %s\n", aspect, l)
			}
		}
	}
	return b.String()
}

// lines splits text into its non-empty lines.
func lines(text string) []string {
	var out []string
	for l := range strings.SplitSeq(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}
