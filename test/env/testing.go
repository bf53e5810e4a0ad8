package env

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
)

// StartForTest starts an environment for one test, stops it when the test
// and its subtests are done, and fails the test if it cannot start. Progress
// goes to the test log unless opts.Logf is set.
func StartForTest(t testing.TB, opts Options) *Env {
	t.Helper()
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	// t.Context is cancelled when the test ends, which is the right bound
	// for a start; the programs themselves are not tied to it.
	e, err := Start(t.Context(), opts)
	if err != nil {
		t.Fatalf("starting the control plane: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Errorf("stopping the control plane: %v", err)
		}
	})
	return e
}

// RunMain starts one environment shared by a test package, passes it to set
// (if not nil), runs the tests and stops the environment. Use it from TestMain, because
// starting a control plane takes seconds and a package's tests rarely need one
// each:
//
//	var testEnv *env.Env
//
//	func TestMain(m *testing.M) {
//		os.Exit(env.RunMain(m, env.Options{}, func(e *env.Env) { testEnv = e }))
//	}
//
// It returns the exit code for os.Exit. A SIGINT or SIGTERM, during the start
// or the tests, stops the environment and exits at once, so that an
// interrupted run leaves neither programs nor a temporary folder behind.
func RunMain(m *testing.M, opts Options, set func(*Env)) int {
	if opts.Logf == nil {
		opts.Logf = func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, format+"\n", args...)
		}
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var e *Env
	started := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		select {
		case sig := <-sigs:
			fmt.Fprintf(os.Stderr, "%v: stopping the control plane\n", sig)
			// Cancelling makes a start in progress clean up after itself.
			cancel()
			<-started
			if e != nil {
				if err := e.Stop(); err != nil {
					fmt.Fprintf(os.Stderr, "stopping the control plane: %v\n", err)
				}
			}
			os.Exit(1)
		case <-finished:
		}
	}()

	var err error
	e, err = Start(ctx, opts)
	close(started)
	if err != nil {
		close(finished)
		fmt.Fprintf(os.Stderr, "starting the control plane: %v\n", err)
		return 1
	}
	if set != nil {
		set(e)
	}
	code := m.Run()
	close(finished)
	if err := e.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping the control plane: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
