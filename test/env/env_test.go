package env

import (
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	linclient "lin.dev/lin-operator/pkg/client/clientset/versioned"
)

// eventually polls cond until it returns true or timeout passes, then fails
// the test with the last error cond reported.
func eventually(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) time.Duration {
	t.Helper()
	began := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	var lastErr error
	for {
		ok, err := cond(ctx)
		if ok {
			return time.Since(began)
		}
		if err != nil {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not done after %v (last error: %v)", what, timeout, lastErr)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stopAndCheck stops e and fails the test if any of its programs, or anything
// else in their process groups, is still alive afterwards.
func stopAndCheck(t *testing.T, e *Env) {
	t.Helper()
	procs := e.Processes()
	if len(procs) == 0 {
		t.Fatal("the environment reports no processes")
	}
	began := time.Now()
	if err := e.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	t.Logf("stopped %d processes in %v", len(procs), time.Since(began).Round(time.Millisecond))
	for _, p := range procs {
		if err := syscall.Kill(p.Pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("%s (pid %d) is still there after Stop: kill 0 = %v", p.Name, p.Pid, err)
		}
		if err := syscall.Kill(-p.Pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process group of %s (%d) is still there after Stop: kill 0 = %v", p.Name, p.Pid, err)
		}
	}
}

func TestAPIServerMode(t *testing.T) {
	e := StartForTest(t, Options{})
	ctx := t.Context()
	t.Logf("apiserver ready after %v, CRDs after %v", e.Timings.APIServerReady, e.Timings.CRDsReady)

	ext, err := apiextensionsclient.NewForConfig(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	crd, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "installations.lin.dev", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !established(crd) {
		t.Fatalf("CRD installations.lin.dev is not Established: %+v", crd.Status.Conditions)
	}

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "env-test"}}
	if _, err := e.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The CRD is served: an Installation can be stored and listed.
	lin, err := linclient.NewForConfig(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	inst := &linv1.Installation{
		ObjectMeta: metav1.ObjectMeta{Name: "sample", Namespace: "env-test"},
		Spec: linv1.InstallationSpec{
			Image: "example.com/app:1",
			Ports: []linv1.InstallationPort{{Name: "http", ContainerPort: 8080}},
		},
	}
	if _, err := lin.LinV1().Installations("env-test").Create(ctx, inst, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating an Installation: %v", err)
	}

	out, err := e.Kubectl(ctx, "get", "installations", "-n", "env-test", "-o", "name")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(out)) != "installation.lin.dev/sample" {
		t.Errorf("kubectl get installations printed %q", out)
	}

	dir := e.Dir
	stopAndCheck(t, e)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("temporary dir %s still exists after Stop: %v", dir, err)
	}
}

func TestClusterMode(t *testing.T) {
	e := StartForTest(t, Options{Mode: Cluster})
	ctx := t.Context()
	t.Logf("apiserver ready after %v, cluster after %v", e.Timings.APIServerReady, e.Timings.ClusterReady)
	c := e.Client
	const ns = metav1.NamespaceDefault

	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 2 {
		t.Fatalf("got %d nodes, want 2", len(nodes.Items))
	}

	t.Run("StatefulSet", func(t *testing.T) {
		labels := map[string]string{"app": "web"}
		replicas := int32(3)
		sts := &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
			Spec: appsv1.StatefulSetSpec{
				Replicas:    &replicas,
				ServiceName: "web",
				Selector:    &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{
						Name:  "app",
						Image: "example.com/app:1",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU:    resource.MustParse("1"),
							corev1.ResourceMemory: resource.MustParse("1Gi"),
						}},
					}}},
				},
			},
		}
		if _, err := c.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		took := eventually(t, 2*time.Minute, "StatefulSet web 3/3 ready", func(ctx context.Context) (bool, error) {
			got, err := c.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return got.Status.ReadyReplicas == 3, nil
		})
		t.Logf("StatefulSet 3/3 ready after %v", took.Round(time.Millisecond))
		pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" || p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" {
				t.Errorf("pod %s: node %q, phase %s, IP %q", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.PodIP)
			}
		}
	})

	t.Run("PVCBinds", func(t *testing.T) {
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: "pv-1"},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
				// Nothing mounts it; a CSI source with a made-up driver is
				// the least a PersistentVolume must have.
				PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
					Driver: "fake.lin.dev", VolumeHandle: "pv-1",
				}},
			},
		}
		if _, err := c.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		noClass := ""
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: ns},
			Spec: corev1.PersistentVolumeClaimSpec{
				StorageClassName: &noClass,
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceStorage: resource.MustParse("500Mi"),
				}},
			},
		}
		if _, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		took := eventually(t, time.Minute, "PVC data bound", func(ctx context.Context) (bool, error) {
			got, err := c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return got.Status.Phase == corev1.ClaimBound && got.Spec.VolumeName == "pv-1", nil
		})
		t.Logf("PVC bound after %v", took.Round(time.Millisecond))
	})

	t.Run("GarbageCollection", func(t *testing.T) {
		owner, err := c.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		dependent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: "dependent",
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID,
			}},
		}}
		if _, err := c.CoreV1().ConfigMaps(ns).Create(ctx, dependent, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := c.CoreV1().ConfigMaps(ns).Delete(ctx, "owner", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		took := eventually(t, time.Minute, "dependent ConfigMap collected", func(ctx context.Context) (bool, error) {
			_, err := c.CoreV1().ConfigMaps(ns).Get(ctx, "dependent", metav1.GetOptions{})
			return apierrors.IsNotFound(err), err
		})
		t.Logf("dependent collected after %v", took.Round(time.Millisecond))
	})

	stopAndCheck(t, e)
}
