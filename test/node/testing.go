package node

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"lin.dev/lin-operator/test/env"
)

// RunMain runs a test package against one real-node cluster, from TestMain:
//
//	func TestMain(m *testing.M) {
//		os.Exit(node.RunMain(m, buildImages, func(c *node.Cluster) { cluster = c }))
//	}
//
// Run by go test, outside any namespace, it runs the test binary again
// inside hack/node-netns.sh and checks afterwards that the machine is as it
// was. There, it calls images (if not nil) for the tarballs to import,
// starts the cluster, passes it to set, runs the tests and stops it.
//
// A machine that cannot run a real node (Unavailable) skips the package
// with a message saying what is missing, except under CI=true, where that
// is a failure: CI must run these tests.
func RunMain(m *testing.M, images func() ([]string, error), set func(*Cluster)) int {
	if _, err := CurrentNetwork(); err == errOutside {
		if why, fail := missing(); why != "" {
			if fail {
				fmt.Fprintf(os.Stderr, "FAIL: %s\n", why)
				return 1
			}
			fmt.Fprintf(os.Stderr, "skipping the real-node tests: %s\n", why)
			return 0
		}
		return reexec()
	} else if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return runInside(m, images, set)
}

// SkipUnavailable skips t on a machine that cannot run a real node, saying
// what is missing, and fails it instead under CI=true, as RunMain does, for
// a test that starts a real node itself.
func SkipUnavailable(t testing.TB) {
	t.Helper()
	if why, fail := missing(); fail {
		t.Fatal(why)
	} else if why != "" {
		t.Skip(why)
	}
}

// missing says why this machine cannot run a real node (Unavailable), or
// "", and whether that is a failure: under CI=true, CI must run the
// real-node tests.
func missing() (why string, fail bool) {
	why = Unavailable()
	if why != "" && os.Getenv("CI") == "true" {
		return "CI must run the real-node tests, and " + why, true
	}
	return why, false
}

// runInside is RunMain inside the namespaces.
func runInside(m *testing.M, images func() ([]string, error), set func(*Cluster)) int {
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	opts := Options{Logf: logf}
	if images != nil {
		var err error
		if opts.Images, err = images(); err != nil {
			logf("building the images: %v", err)
			return 1
		}
	}
	// A signal cancels a start; during the tests it ends this process, and
	// the namespaces take everything with them.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	c, err := Start(ctx, opts)
	stop()
	if err != nil {
		logf("starting the real-node cluster: %v", err)
		return 1
	}
	set(c)
	code := m.Run()
	if code != 0 {
		// The logs are on the namespace's tmpfs, which goes with it.
		for _, p := range c.Processes() {
			if p.Name == "kubelet" || p.Name == "containerd" {
				logf("--- the end of %s's log (%s):\n%s", p.Name, p.LogPath, env.LogTail(p.LogPath))
			}
		}
	}
	if err := c.Stop(); err != nil {
		logf("stopping the real-node cluster: %v", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
