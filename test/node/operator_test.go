package node_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/client/clientset/versioned"
	"lin.dev/lin-operator/pkg/metrics"
	"lin.dev/lin-operator/test/harness"
	"lin.dev/lin-operator/test/node"
)

const (
	// operatorName names the Deployment, the ServiceAccount and the Lease
	// of both installs.
	operatorName = "lin-operator"
	// timeout bounds a wait for real pods: starting a container, a
	// readiness probe, a graceful stop of 30 s at most.
	timeout = 2 * time.Minute
)

// operatorInstall is one install of the operator's image: its namespace, and
// how to take it away so that the next one has the cluster to itself.
type operatorInstall struct {
	namespace string
	remove    func(t *testing.T)
}

// TestOperatorImageAsADeployment installs deploy/ through an overlay that
// names the imported image, as a user would, and checks the operator as
// real pods: two Ready under restricted, one leader, an Installation of real
// pods reconciled, metrics from a pod's IP, then the handovers of a deleted
// leader and of a rollout restart.
func TestOperatorImageAsADeployment(t *testing.T) {
	overlay := t.TempDir()
	base, err := filepath.Rel(overlay, filepath.Join(repoRoot, "deploy"))
	if err != nil {
		t.Fatal(err)
	}
	name, tag, _ := strings.Cut(node.OperatorImage, ":")
	kustomization := fmt.Sprintf("resources:\n  - %s\nimages:\n  - name: lin-operator\n    newName: %s\n    newTag: %s\n", base, name, tag)
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
		t.Fatal(err)
	}
	applied := time.Now()
	if _, err := cluster.Kubectl(t.Context(), "apply", "--server-side", "-k", overlay); err != nil {
		t.Fatal(err)
	}
	// All of it goes afterwards, the CRD too, as the chart installs its own.
	install := operatorInstall{namespace: "lin-system", remove: func(t *testing.T) {
		if _, err := cluster.Kubectl(context.Background(), "delete", "-k", overlay, "--wait"); err != nil {
			t.Error(err)
		}
	}}
	checkOperator(t, install, applied)
}

// TestOperatorImageThroughHelm does the same through `helm install` of the
// chart, with the image set, into a namespace of its own.
func TestOperatorImageThroughHelm(t *testing.T) {
	const namespace = "lin-helm"
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}}
	if _, err := cluster.Client.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	name, tag, _ := strings.Cut(node.OperatorImage, ":")
	applied := time.Now()
	helm(t, "install", "lin", filepath.Join(repoRoot, "charts", "lin-operator"), "--namespace", namespace,
		"--set", "image.repository="+name, "--set", "image.tag="+tag, "--set", "fullnameOverride="+operatorName)
	install := operatorInstall{namespace: namespace, remove: func(t *testing.T) { helm(t, "uninstall", "lin", "--namespace", namespace, "--wait") }}
	checkOperator(t, install, applied)
}

// helm runs helm against the cluster with args (harness.Helm).
func helm(t *testing.T, args ...string) {
	t.Helper()
	harness.Helm(t, cluster.BinDir, cluster.KubeconfigPath, args...)
}

// checkOperator checks an install of the operator's image, applied at
// applied, and removes it at the end.
func checkOperator(t *testing.T, install operatorInstall, applied time.Time) {
	defer install.remove(t)
	harness.WaitDeploymentAvailable(t, cluster.Client, install.namespace, operatorName, timeout)
	t.Logf("two operator pods Ready %v after the apply", time.Since(applied).Round(time.Millisecond))
	leader := waitLeader(t, install.namespace, "")
	t.Logf("leader: %s", leader)

	lin := versioned.NewForConfigOrDie(cluster.Config)
	ns := restrictedNamespace(t)
	inst, err := lin.LinV1().Installations(ns).Create(t.Context(), testAppInstallation(ns, "app"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	harness.WaitPhase(t, lin, ns, inst.Name, linv1.PhaseReady, timeout)
	scrapeMetrics(t, install.namespace, leader)

	t.Run("leader deleted", func(t *testing.T) {
		gaps := watchLeaderless(t, install.namespace)
		deleted := time.Now()
		if err := cluster.Client.CoreV1().Pods(install.namespace).Delete(t.Context(), leader, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		next := waitLeader(t, install.namespace, leader)
		led := time.Since(deleted)
		observed, ready := editAndWait(t, lin, ns, inst.Name, "leader-deleted")
		t.Logf("pod %s deleted: %s leads %v later (leaderless %v); an edit then was reconciled %v and Ready %v after the delete",
			leader, next, led.Round(time.Millisecond), gaps(), observed.Sub(deleted).Round(time.Millisecond), ready.Sub(deleted).Round(time.Millisecond))
		leader = next
		harness.WaitDeploymentAvailable(t, cluster.Client, install.namespace, operatorName, timeout)
	})
	t.Run("rollout restart", func(t *testing.T) {
		gaps := watchLeaderless(t, install.namespace)
		restarted := time.Now()
		if _, err := cluster.Kubectl(t.Context(), "rollout", "restart", "deployment/"+operatorName, "-n", install.namespace); err != nil {
			t.Fatal(err)
		}
		if _, err := cluster.Kubectl(t.Context(), "rollout", "status", "deployment/"+operatorName, "-n", install.namespace, "--timeout=2m"); err != nil {
			t.Fatal(err)
		}
		rolled := time.Since(restarted)
		next := waitLeader(t, install.namespace, leader)
		edited := time.Now()
		observed, ready := editAndWait(t, lin, ns, inst.Name, "rollout-restart")
		t.Logf("rollout restart done in %v; %s leads (leaderless %v); an edit after it was reconciled in %v and Ready in %v",
			rolled.Round(time.Millisecond), next, gaps(), observed.Sub(edited).Round(time.Millisecond), ready.Sub(edited).Round(time.Millisecond))
	})
}

// waitLeader waits until a pod of the namespace other than previous holds
// the operator's Lease, and returns its name.
func waitLeader(t *testing.T, namespace, previous string) string {
	t.Helper()
	var leader string
	harness.Eventually(t, timeout, "a new leader in "+namespace, func(ctx context.Context) (bool, error) {
		lease, err := cluster.Client.CoordinationV1().Leases(namespace).Get(ctx, operatorName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		holder := ptr.Deref(lease.Spec.HolderIdentity, "")
		pod, _, _ := strings.Cut(holder, "_")
		if pod == "" || pod == previous {
			return false, fmt.Errorf("the Lease is held by %q", holder)
		}
		if _, err := cluster.Client.CoreV1().Pods(namespace).Get(ctx, pod, metav1.GetOptions{}); err != nil {
			return false, err
		}
		leader = pod
		return true, nil
	})
	return leader
}

// watchLeaderless watches the operator's Lease and returns a function that
// lists the spells in which no one held it: from a release (an empty
// holder, which a leader writes on SIGTERM) to the next holder.
func watchLeaderless(t *testing.T, namespace string) func() []time.Duration {
	t.Helper()
	w, err := cluster.Client.CoordinationV1().Leases(namespace).Watch(t.Context(), metav1.ListOptions{FieldSelector: "metadata.name=" + operatorName})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var gaps []time.Duration
	go func() {
		var released time.Time
		for ev := range w.ResultChan() {
			lease, ok := ev.Object.(*coordinationv1.Lease)
			if !ok {
				continue
			}
			now := time.Now()
			holder := ptr.Deref(lease.Spec.HolderIdentity, "")
			switch {
			case holder == "" && released.IsZero():
				released = now
			case holder != "" && !released.IsZero():
				mu.Lock()
				gaps = append(gaps, now.Sub(released).Round(time.Millisecond))
				mu.Unlock()
				released = time.Time{}
			}
		}
	}()
	return func() []time.Duration {
		w.Stop()
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(gaps)
	}
}

// editAndWait changes the Installation's config and waits until the
// operator has rolled it out. It returns when the operator first reported
// the edit observed, and when the Installation was Ready with it.
func editAndWait(t *testing.T, lin versioned.Interface, ns, name, value string) (observed, ready time.Time) {
	t.Helper()
	harness.EditInstallation(t, lin, ns, name, func(inst *linv1.Installation) {
		inst.Spec.Config["edit"] = value
	})
	harness.Eventually(t, timeout, "the edit to be observed", func(ctx context.Context) (bool, error) {
		inst, err := lin.LinV1().Installations(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return inst.Status.ObservedGeneration == inst.Generation, nil
	})
	observed = time.Now()
	harness.WaitPhase(t, lin, ns, name, linv1.PhaseReady, timeout)
	return observed, time.Now()
}

// scrapeMetrics reads the leader's metrics from its pod IP over HTTPS, as
// Prometheus does, with the token of a ServiceAccount bound to the
// ClusterRole lin-operator-metrics-reader that the install ships, and checks
// that it counted reconciles, and that a scrape without a token is refused.
func scrapeMetrics(t *testing.T, namespace, leader string) {
	t.Helper()
	ctx := t.Context()
	pod, err := cluster.Client.CoreV1().Pods(namespace).Get(ctx, leader, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	token := harness.ScraperToken(t, cluster.Client, namespace, "prometheus", operatorName+"-metrics-reader")
	defer func() {
		if err := cluster.Client.RbacV1().ClusterRoleBindings().Delete(context.Background(), namespace+"-prometheus", metav1.DeleteOptions{}); err != nil {
			t.Error(err)
		}
	}()
	url := "https://" + net.JoinHostPort(pod.Status.PodIP, "8443") + "/metrics"
	// The certificate is self-signed, as the ServiceMonitor expects.
	transport := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	defer transport.CloseIdleConnections()
	client := &http.Client{Timeout: 10 * time.Second, Transport: transport}
	scrape := func(token string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	if code, body := scrape(""); code != http.StatusUnauthorized {
		t.Errorf("GET %s without a token: %d, want 401:\n%.300s", url, code, body)
	}
	code, body := scrape(token)
	if code != http.StatusOK || !strings.Contains(body, metrics.Prefix+"reconcile_total") {
		t.Errorf("the leader's metrics at %s: %d, want 200 with %sreconcile_total:\n%.300s", url, code, metrics.Prefix, body)
	}
	t.Logf("scraped %s: %d with the token of a ServiceAccount bound to %s-metrics-reader, 401 without", url, code, operatorName)
}

// testAppInstallation is an Installation of testapp: one shard of two real
// pods, ready on an HTTP probe, under Pod Security restricted.
func testAppInstallation(ns, name string) *linv1.Installation {
	inst := harness.NewInstallation(ns, name)
	inst.Spec.Image = node.TestAppImage
	inst.Spec.ImagePullPolicy = corev1.PullNever
	inst.Spec.Replicas = ptr.To[int32](2)
	inst.Spec.SecurityContext = restricted()
	inst.Spec.ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}},
		PeriodSeconds: 1,
	}
	inst.Spec.Pod.SecurityContext = &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	return inst
}
