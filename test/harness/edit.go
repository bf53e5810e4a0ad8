package harness

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/client/clientset/versioned"
)

// EditInstallation changes an Installation with change and updates it,
// reading it again and retrying when the update conflicts with another
// writer (the operator writing status, say).
func EditInstallation(t testing.TB, client versioned.Interface, ns, name string, change func(*linv1.Installation)) {
	t.Helper()
	Eventually(t, 30*time.Second, "an edit of "+name, func(ctx context.Context) (bool, error) {
		inst, err := client.LinV1().Installations(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		change(inst)
		_, err = client.LinV1().Installations(ns).Update(ctx, inst, metav1.UpdateOptions{})
		return err == nil, err
	})
}
