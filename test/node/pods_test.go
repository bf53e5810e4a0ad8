package node_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"lin.dev/lin-operator/test/harness"
	"lin.dev/lin-operator/test/node"
)

// restrictedNamespace makes a namespace for the test in which Pod Security
// enforces the restricted profile, as the operator's own namespace does.
func restrictedNamespace(t *testing.T) string {
	t.Helper()
	ns := harness.Namespace(t, cluster.Client)
	patch := `{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"restricted"}}}`
	if _, err := cluster.Client.CoreV1().Namespaces().Patch(t.Context(), ns, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	return ns
}

// restricted is a security context that Pod Security restricted accepts.
func restricted() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// testAppPod is a pod of testapp, ready when it answers /healthz, with a
// ConfigMap volume at /config and an emptyDir at /data.
func testAppPod(ns, name, image string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{
				Name:            "app",
				Image:           image,
				ImagePullPolicy: corev1.PullNever,
				Ports:           []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}},
					PeriodSeconds: 1,
				},
				VolumeMounts:    []corev1.VolumeMount{{Name: "config", MountPath: "/config"}, {Name: "data", MountPath: "/data"}},
				SecurityContext: restricted(),
			}},
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: name},
				}}},
				{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
		},
	}
}

// waitPodReady waits until the pod is Ready and returns it.
func waitPodReady(t *testing.T, ns, name string, timeout time.Duration) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	harness.Eventually(t, timeout, "pod "+ns+"/"+name+" to be Ready", func(ctx context.Context) (bool, error) {
		var err error
		if pod, err = cluster.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, fmt.Errorf("phase %s, containers %s", pod.Status.Phase, containerStates(pod))
	})
	return pod
}

// containerStates describes why a pod's containers are not running.
func containerStates(pod *corev1.Pod) string {
	var b strings.Builder
	for _, s := range pod.Status.ContainerStatuses {
		switch {
		case s.State.Waiting != nil:
			fmt.Fprintf(&b, "%s waiting: %s %s; ", s.Name, s.State.Waiting.Reason, s.State.Waiting.Message)
		case s.State.Terminated != nil:
			fmt.Fprintf(&b, "%s terminated: %s; ", s.Name, s.State.Terminated.Reason)
		default:
			fmt.Fprintf(&b, "%s running, ready %v; ", s.Name, s.Ready)
		}
	}
	return b.String()
}

// httpDo sends a request to testapp and returns the body of a 200 answer.
func httpDo(t *testing.T, method, url, body string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %s: %s", method, url, resp.Status, data)
	}
	return string(data)
}

// TestNodeRunsRealContainers: the Node is a kubelet on containerd; a pod of
// a nonroot image under Pod Security restricted becomes Ready on a real HTTP
// probe, reads its ConfigMap volume, writes and reads back its emptyDir, and
// from inside sees the cluster's DNS and reaches a Service's ClusterIP.
func TestNodeRunsRealContainers(t *testing.T) {
	n, err := cluster.Client.CoreV1().Nodes().Get(t.Context(), node.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rt := n.Status.NodeInfo.ContainerRuntimeVersion; !strings.HasPrefix(rt, "containerd://2.") {
		t.Errorf("container runtime %q, want containerd 2", rt)
	}
	t.Logf("node %s: kubelet %s, %s; Ready %v after the start (control plane %v)", n.Name,
		n.Status.NodeInfo.KubeletVersion, n.Status.NodeInfo.ContainerRuntimeVersion,
		cluster.Timings.NodeReady.Round(time.Millisecond), cluster.Timings.ControlPlane.Round(time.Millisecond))

	// Pods reach the API server as in any cluster: through the kubernetes
	// Service, whose endpoint is the node's address.
	endpoints, err := cluster.Client.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault).List(t.Context(), metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=kubernetes"})
	if err != nil {
		t.Fatal(err)
	}
	if len(endpoints.Items) != 1 || len(endpoints.Items[0].Endpoints) != 1 || endpoints.Items[0].Endpoints[0].Addresses[0] != cluster.Network.NodeIP {
		t.Errorf("the kubernetes Service's endpoints are %+v, want the node's address %s", endpoints.Items, cluster.Network.NodeIP)
	}

	ns := restrictedNamespace(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns}, Data: map[string]string{"greeting": "hello from a ConfigMap"}}
	if _, err := cluster.Client.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	created := time.Now()
	if _, err := cluster.Client.CoreV1().Pods(ns).Create(t.Context(), testAppPod(ns, "app", node.TestAppImage), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := waitPodReady(t, ns, "app", time.Minute)
	t.Logf("pod Ready %v after its creation, IP %s", time.Since(created).Round(time.Millisecond), pod.Status.PodIP)

	base := "http://" + pod.Status.PodIP + ":8080"
	if got := httpDo(t, http.MethodGet, base+"/file?path=/config/greeting", ""); got != cm.Data["greeting"] {
		t.Errorf("the ConfigMap volume holds %q, want %q", got, cm.Data["greeting"])
	}
	httpDo(t, http.MethodPut, base+"/file?path=/data/written", "bytes on a volume")
	if got := httpDo(t, http.MethodGet, base+"/file?path=/data/written", ""); got != "bytes on a volume" {
		t.Errorf("read back %q from the emptyDir", got)
	}

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "app"},
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromString("http")}},
		},
	}
	if svc, err = cluster.Client.CoreV1().Services(ns).Create(t.Context(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	name := "app." + ns + ".svc.cluster.local"
	harness.Eventually(t, 30*time.Second, "the pod to resolve its Service and reach itself through it", func(ctx context.Context) (bool, error) {
		resp, err := http.Get(base + "/lookup?name=" + name)
		if err != nil {
			return false, err
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.TrimSpace(string(data)) != svc.Spec.ClusterIP {
			return false, fmt.Errorf("%s resolves to %q in the pod, want %s", name, data, svc.Spec.ClusterIP)
		}
		// Through the ClusterIP back to itself: kube-proxy's rules and
		// the bridge's hairpin mode.
		resp, err = http.Get(base + "/get?url=http://" + name + "/healthz")
		if err != nil {
			return false, err
		}
		data, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(data) != "200\nok" {
			return false, fmt.Errorf("through the Service: %q", data)
		}
		return true, nil
	})
}

// TestBadPodsFailClearly: a pod whose image the node does not have fails at
// once with ErrImageNeverPull (or, when it may pull, with an image pull
// error, since nothing can be reached), and a root image under runAsNonRoot
// is refused by the kubelet itself.
func TestBadPodsFailClearly(t *testing.T) {
	ns := harness.Namespace(t, cluster.Client)
	for _, tc := range []struct {
		name, image string
		policy      corev1.PullPolicy
		reasons     []string
	}{
		{"never", "lin.dev/absent:1", corev1.PullNever, []string{"ErrImageNeverPull"}},
		{"if-not-present", "lin.dev/absent:1", corev1.PullIfNotPresent, []string{"ErrImagePull", "ImagePullBackOff"}},
		{"root", node.RootTestAppImage, corev1.PullNever, []string{"CreateContainerConfigError"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testAppPod(ns, tc.name, tc.image)
			pod.Spec.Volumes, pod.Spec.Containers[0].VolumeMounts = nil, nil
			pod.Spec.Containers[0].ImagePullPolicy = tc.policy
			if _, err := cluster.Client.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			harness.Eventually(t, time.Minute, "pod "+tc.name+" to report "+strings.Join(tc.reasons, " or "), func(ctx context.Context) (bool, error) {
				p, err := cluster.Client.CoreV1().Pods(ns).Get(ctx, tc.name, metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				for _, s := range p.Status.ContainerStatuses {
					if s.State.Waiting != nil && slices.Contains(tc.reasons, s.State.Waiting.Reason) {
						t.Logf("%s: %s", s.State.Waiting.Reason, s.State.Waiting.Message)
						return true, nil
					}
				}
				return false, fmt.Errorf("containers: %s", containerStates(p))
			})
		})
	}
}
