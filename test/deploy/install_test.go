package deploy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"lin.dev/lin-operator/test/harness"
)

const (
	// systemNamespace is where deploy/ installs the operator.
	systemNamespace = "lin-system"
	// operatorName names the ServiceAccount, the Deployment and the default Lease.
	operatorName = "lin-operator"
	// timeout bounds waits on the control plane: scheduling, kwok marking
	// pods ready, garbage collection and operators starting take seconds.
	timeout = 2 * time.Minute
)

var (
	installOnce sync.Once
	installErr  error
)

// install applies deploy/ once for the package, as a user would, and waits
// until the CRD it installs is served.
func install(t *testing.T) {
	t.Helper()
	installOnce.Do(func() {
		ctx := context.Background()
		if _, installErr = testEnv.Kubectl(ctx, "apply", "--server-side", "-k", filepath.Join(repoRoot, "deploy")); installErr != nil {
			return
		}
		// kubectl wait gives up at once, instead of waiting, when it reads the
		// CRD before the API server has written any condition on it.
		deadline := time.Now().Add(2 * time.Minute)
		for {
			_, installErr = testEnv.Kubectl(ctx, "wait", "--for=condition=Established", "--timeout=2m",
				"customresourcedefinition/installations.lin.dev")
			if installErr == nil || !strings.Contains(installErr.Error(), ".status.conditions accessor error") || time.Now().After(deadline) {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
	if installErr != nil {
		t.Fatalf("kubectl apply --server-side -k deploy/: %v", installErr)
	}
}

// render returns the objects that the kustomization in dir makes.
func render(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	out, err := testEnv.Kubectl(t.Context(), "kustomize", dir)
	if err != nil {
		t.Fatal(err)
	}
	return harness.DecodeObjects(t, "kubectl kustomize "+dir, out)
}

// restrictedViolation is a pod that Pod Security `restricted` refuses.
func restrictedViolation(namespace string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "runs-as-root", Namespace: namespace},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
}

func TestApplyInstallsEverythingAndThePodsPassRestricted(t *testing.T) {
	install(t)
	ctx := t.Context()
	ns, err := testEnv.Client.CoreV1().Namespaces().Get(ctx, systemNamespace, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ns.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
		t.Errorf("namespace %s labels = %v, want Pod Security restricted enforced", systemNamespace, ns.Labels)
	}
	// The admission plugin enforces the level, so the pods it admitted pass it.
	_, err = testEnv.Client.CoreV1().Pods(systemNamespace).Create(ctx, restrictedViolation(systemNamespace),
		metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "PodSecurity") {
		t.Fatalf("a pod that violates restricted was not refused in %s: %v", systemNamespace, err)
	}
	harness.WaitDeploymentAvailable(t, testEnv.Client, systemNamespace, operatorName, timeout)
	pods, err := testEnv.Client.CoreV1().Pods(systemNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + operatorName})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 2 {
		t.Errorf("%d operator pods, want 2", len(pods.Items))
	}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || p.Spec.ServiceAccountName != operatorName {
			t.Errorf("pod %s: phase %s, service account %q", p.Name, p.Status.Phase, p.Spec.ServiceAccountName)
		}
	}

	// Applying again, as an upgrade does, changes nothing.
	if _, err := testEnv.Kubectl(ctx, "apply", "--server-side", "-k", filepath.Join(repoRoot, "deploy")); err != nil {
		t.Fatal(err)
	}
	if out, err := testEnv.Kubectl(ctx, "diff", "-k", filepath.Join(repoRoot, "deploy")); err != nil {
		t.Errorf("kubectl diff -k deploy/ after apply: %v\n%s", err, out)
	}
}

func TestRBACHasNoWildcardsNorSecretsAndTheRoleMatchesTheClusterRole(t *testing.T) {
	var clusterRole rbacv1.ClusterRole
	operatorRole := slices.DeleteFunc(render(t, filepath.Join(repoRoot, "deploy")), func(o *unstructured.Unstructured) bool {
		return o.GetName() != operatorName
	})
	harness.Typed(t, operatorRole, "ClusterRole", &clusterRole)
	var role rbacv1.Role
	harness.Typed(t, render(t, filepath.Join(repoRoot, "deploy", "namespaced")), "Role", &role)
	if !slices.EqualFunc(clusterRole.Rules, role.Rules, func(a, b rbacv1.PolicyRule) bool {
		return slices.Equal(a.APIGroups, b.APIGroups) && slices.Equal(a.Resources, b.Resources) && slices.Equal(a.Verbs, b.Verbs)
	}) {
		t.Errorf("the namespaced Role's rules differ from the ClusterRole's:\n%v\n%v", role.Rules, clusterRole.Rules)
	}
	for _, dir := range []string{"deploy", "deploy/namespaced"} {
		for _, obj := range render(t, filepath.Join(repoRoot, dir)) {
			if obj.GetKind() != "Role" && obj.GetKind() != "ClusterRole" {
				continue
			}
			var r rbacv1.ClusterRole
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &r); err != nil {
				t.Fatal(err)
			}
			for _, rule := range r.Rules {
				if slices.Contains(rule.Verbs, "*") || slices.Contains(rule.Resources, "*") || slices.Contains(rule.APIGroups, "*") {
					t.Errorf("%s %s/%s has a wildcard rule: %+v", dir, obj.GetKind(), obj.GetName(), rule)
				}
				// The operator never reads or copies a Secret: a tenant's
				// Installation names Secrets only as references that the
				// kubelet resolves in the pod's own namespace.
				if slices.Contains(rule.Resources, "secrets") {
					t.Errorf("%s %s/%s grants access to Secrets: %+v", dir, obj.GetKind(), obj.GetName(), rule)
				}
			}
		}
	}
}

// namespacedInstall applies deploy/namespaced into namespace through an
// overlay, as the README says, and waits for its Deployment.
func namespacedInstall(t *testing.T, namespace string) []*unstructured.Unstructured {
	t.Helper()
	install(t)
	overlay := t.TempDir()
	base, err := filepath.Rel(overlay, filepath.Join(repoRoot, "deploy", "namespaced"))
	if err != nil {
		t.Fatal(err)
	}
	kustomization := fmt.Sprintf("namespace: %s\nresources:\n  - %s\n", namespace, base)
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := testEnv.Kubectl(t.Context(), "apply", "--server-side", "-k", overlay); err != nil {
		t.Fatal(err)
	}
	harness.WaitDeploymentAvailable(t, testEnv.Client, namespace, operatorName, timeout)
	return render(t, overlay)
}
