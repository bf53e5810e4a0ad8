package harness

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/client/clientset/versioned"
)

// Eventually polls cond every 100ms until it holds, and fails the test after
// timeout, naming what it waited for and the last error.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true,
		func(ctx context.Context) (bool, error) {
			ok, err := cond(ctx)
			if err != nil {
				last = err
				return false, nil
			}
			return ok, nil
		})
	if err != nil {
		t.Fatalf("waiting %s for %s: last error: %v", timeout, what, last)
	}
}

// WaitPhase waits until the Installation ns/name reports phase for its
// current generation, and returns it.
func WaitPhase(t testing.TB, client versioned.Interface, ns, name string, phase linv1.Phase, timeout time.Duration) *linv1.Installation {
	t.Helper()
	var inst *linv1.Installation
	Eventually(t, timeout, fmt.Sprintf("Installation %s/%s to be %s", ns, name, phase), func(ctx context.Context) (bool, error) {
		var err error
		if inst, err = client.LinV1().Installations(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		if inst.Status.ObservedGeneration != inst.Generation || inst.Status.Phase != phase {
			return false, fmt.Errorf("generation %d observed %d, phase %q, ready %q",
				inst.Generation, inst.Status.ObservedGeneration, inst.Status.Phase, inst.Status.Ready)
		}
		return true, nil
	})
	return inst
}
