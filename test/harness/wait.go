package harness

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
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
