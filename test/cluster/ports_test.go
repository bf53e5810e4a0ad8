package cluster

import (
	"context"
	"fmt"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/test/harness"
)

// headlessEndpoints waits until the EndpointSlices of the headless Service
// of name list n pods, which is what gives each pod its DNS name.
func headlessEndpoints(t *testing.T, ns, name string, n int) {
	t.Helper()
	harness.Eventually(t, timeout, fmt.Sprintf("the headless Service of %s to list %d pods", name, n), func(ctx context.Context) (bool, error) {
		slices, err := testEnv.Client.DiscoveryV1().EndpointSlices(ns).List(ctx,
			metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + name + "-headless"})
		if err != nil {
			return false, err
		}
		found := 0
		for _, s := range slices.Items {
			found += len(s.Endpoints)
		}
		if found != n {
			return false, fmt.Errorf("%d endpoints in %d slices", found, len(slices.Items))
		}
		return true, nil
	})
}

// TestAnInstallationWithoutPortsRunsAndLosesItsClientService runs an
// Installation with no ports to Ready, its pods named by the headless
// Service, then gives it a port and takes the port away again: the client
// Service comes and goes, and the pods keep their DNS names.
func TestAnInstallationWithoutPortsRunsAndLosesItsClientService(t *testing.T) {
	ns, _ := setup(t, harness.Options{})
	inst := newInstallation(ns, "demo", 1, 2, "")
	inst.Spec.Ports = nil
	if got := createReady(t, inst); got.Status.Endpoint != "" {
		t.Errorf("status.endpoint = %q, want empty", got.Status.Endpoint)
	}
	ctx := context.Background()
	if _, err := testEnv.Client.CoreV1().Services(ns).Get(ctx, "demo", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("client Service of an Installation without ports: %v, want none", err)
	}
	headlessEndpoints(t, ns, "demo", 2)

	edit(t, ns, "demo", func(inst *linv1.Installation) {
		inst.Spec.Ports = []linv1.InstallationPort{{Name: "http", ContainerPort: 8080}}
	})
	if got := waitPhase(t, ns, "demo", linv1.PhaseReady); got.Status.Endpoint != "demo."+ns+".svc.cluster.local" {
		t.Errorf("status.endpoint = %q once there is a port", got.Status.Endpoint)
	}
	if _, err := testEnv.Client.CoreV1().Services(ns).Get(ctx, "demo", metav1.GetOptions{}); err != nil {
		t.Errorf("client Service once there is a port: %v", err)
	}

	edit(t, ns, "demo", func(inst *linv1.Installation) { inst.Spec.Ports = nil })
	if got := waitPhase(t, ns, "demo", linv1.PhaseReady); got.Status.Endpoint != "" {
		t.Errorf("status.endpoint = %q after the ports were removed", got.Status.Endpoint)
	}
	harness.Eventually(t, timeout, "the client Service to be deleted", func(ctx context.Context) (bool, error) {
		_, err := testEnv.Client.CoreV1().Services(ns).Get(ctx, "demo", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	headlessEndpoints(t, ns, "demo", 2)
}
