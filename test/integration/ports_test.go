package integration

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/test/harness"
)

// serviceNames lists the Services in ns.
func serviceNames(t *testing.T, ns string) []string {
	t.Helper()
	svcs, err := testEnv.Client.CoreV1().Services(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range svcs.Items {
		names = append(names, s.Name)
	}
	return names
}

// TestTheSmallestInstallationHasNoClientServiceUntilItHasPorts creates the
// smallest Installation a user writes, an image alone, then gives it a port
// and takes the port away again.
func TestTheSmallestInstallationHasNoClientServiceUntilItHasPorts(t *testing.T) {
	ns, _ := setup(t)
	ctx := context.Background()
	if _, err := dynClient.Resource(installationsGVR).Namespace(ns).Create(ctx,
		installation(ns, "demo", map[string]any{"image": "example.com/app:1"}), metav1.CreateOptions{}); err != nil {
		t.Fatalf("the API server refused an Installation of an image alone: %v", err)
	}
	got := waitObserved(t, ns, "demo")
	if got.Status.Endpoint != "" {
		t.Errorf("status.endpoint = %q, want empty: there is no client Service", got.Status.Endpoint)
	}
	statefulSet(t, ns, "demo-0", "to exist", func(*appsv1.StatefulSet) bool { return true })
	headless, err := testEnv.Client.CoreV1().Services(ns).Get(ctx, "demo-headless", metav1.GetOptions{})
	if err != nil || len(headless.Spec.Ports) != 0 {
		t.Fatalf("headless Service = %+v, %v; want one with no ports", headless, err)
	}
	if names := serviceNames(t, ns); len(names) != 1 {
		t.Errorf("Services %v, want only the headless one", names)
	}

	edit(t, ns, "demo", func(inst *linv1.Installation) {
		inst.Spec.Ports = []linv1.InstallationPort{{Name: "http", ContainerPort: 8080}}
	})
	if got := waitObserved(t, ns, "demo"); got.Status.Endpoint != "demo."+ns+".svc.cluster.local" {
		t.Errorf("status.endpoint = %q once there is a port", got.Status.Endpoint)
	}
	harness.Eventually(t, timeout, "the client Service to be made", func(ctx context.Context) (bool, error) {
		_, err := testEnv.Client.CoreV1().Services(ns).Get(ctx, "demo", metav1.GetOptions{})
		return err == nil, err
	})

	edit(t, ns, "demo", func(inst *linv1.Installation) { inst.Spec.Ports = nil })
	harness.Eventually(t, timeout, "the client Service to be deleted", func(ctx context.Context) (bool, error) {
		_, err := testEnv.Client.CoreV1().Services(ns).Get(ctx, "demo", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if got := waitObserved(t, ns, "demo"); got.Status.Endpoint != "" {
		t.Errorf("status.endpoint = %q after the ports were removed, want empty", got.Status.Endpoint)
	}
	harness.Eventually(t, timeout, "the headless Service to lose its port", func(ctx context.Context) (bool, error) {
		svc, err := testEnv.Client.CoreV1().Services(ns).Get(ctx, "demo-headless", metav1.GetOptions{})
		return err == nil && len(svc.Spec.Ports) == 0, err
	})
}
