package cluster

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/test/harness"
)

// TestServiceOptionsAndChildMetadataReachTheChildren runs an Installation
// with a LoadBalancer Service (class, source ranges, Local traffic, a fixed
// node port) and labels and annotations for the headless Service, the
// StatefulSets and the claims, and checks them on the live objects; then it
// removes the traffic policy and the StatefulSets' labels from the spec,
// which go from the children without a pod restarting.
func TestServiceOptionsAndChildMetadataReachTheChildren(t *testing.T) {
	ns, _ := setup(t, harness.Options{})
	harness.CreateVolumes(t, testEnv.Client, harness.Volumes{Prefix: ns, Count: 1})
	inst := newInstallation(ns, "demo", 1, 1, "")
	inst.Spec.Ports = []linv1.InstallationPort{{Name: "client", ContainerPort: 9000, NodePort: 32123}}
	inst.Spec.Service = linv1.ServiceSpec{
		Type:                     corev1.ServiceTypeLoadBalancer,
		ExternalTrafficPolicy:    corev1.ServiceExternalTrafficPolicyLocal,
		LoadBalancerSourceRanges: []string{"10.0.0.0/8"},
		LoadBalancerClass:        ptr.To("example.com/internal"),
	}
	inst.Spec.HeadlessService = &linv1.ObjectLabels{Labels: map[string]string{"mesh": "off"}}
	inst.Spec.StatefulSets = &linv1.ObjectLabels{Labels: map[string]string{"tier": "data"},
		Annotations: map[string]string{"owner.example.com/team": "storage"}}
	inst.Spec.Storage = &linv1.StorageSpec{Size: resource.MustParse("1Gi"), ReclaimPolicy: linv1.ReclaimRetain,
		Labels: map[string]string{"backup.example.com/policy": "daily"}, Annotations: map[string]string{"backup.example.com/retain": "30d"}}
	createReady(t, inst)
	pods := podUIDs(t, ns, "demo")

	ctx := context.Background()
	svc, err := testEnv.Client.CoreV1().Services(ns).Get(ctx, "demo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s := svc.Spec; s.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal || ptr.Deref(s.LoadBalancerClass, "") != "example.com/internal" ||
		len(s.LoadBalancerSourceRanges) != 1 || s.Ports[0].NodePort != 32123 {
		t.Errorf("client Service spec = %+v", s)
	}
	headless, err := testEnv.Client.CoreV1().Services(ns).Get(ctx, "demo-headless", metav1.GetOptions{})
	if err != nil || headless.Labels["mesh"] != "off" {
		t.Errorf("headless Service labels = %v, %v", headless.Labels, err)
	}
	sts, err := testEnv.Client.AppsV1().StatefulSets(ns).Get(ctx, "demo-0", metav1.GetOptions{})
	if err != nil || sts.Labels["tier"] != "data" || sts.Annotations["owner.example.com/team"] != "storage" {
		t.Errorf("StatefulSet metadata = %v, %v, %v", sts.Labels, sts.Annotations, err)
	}
	claim, err := testEnv.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-demo-0-0", metav1.GetOptions{})
	if err != nil || claim.Labels["backup.example.com/policy"] != "daily" || claim.Annotations["backup.example.com/retain"] != "30d" {
		t.Errorf("claim metadata = %v, %v, %v", claim.Labels, claim.Annotations, err)
	}

	edit(t, ns, "demo", func(i *linv1.Installation) {
		i.Spec.Service.ExternalTrafficPolicy = ""
		i.Spec.StatefulSets = nil
	})
	harness.Eventually(t, timeout, "the traffic policy and the StatefulSet's labels to go", func(ctx context.Context) (bool, error) {
		svc, err := testEnv.Client.CoreV1().Services(ns).Get(ctx, "demo", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		sts, err := testEnv.Client.AppsV1().StatefulSets(ns).Get(ctx, "demo-0", metav1.GetOptions{})
		return err == nil && svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyCluster &&
			sts.Labels["tier"] == "" && sts.Annotations["owner.example.com/team"] == "", err
	})
	waitPhase(t, ns, "demo", linv1.PhaseReady)
	if got := podUIDs(t, ns, "demo"); replaced(pods, got) != 0 {
		t.Errorf("pods restarted: before %v, after %v", pods, got)
	}
}
