package helm

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/resources"
	"lin.dev/lin-operator/test/harness"
)

const (
	// release and releaseNamespace are where the README installs the chart.
	release, releaseNamespace = "lin-operator", "lin-system"
	// timeout bounds waits on the control plane: scheduling, kwok marking
	// pods ready and the operator converging take seconds.
	timeout = 2 * time.Minute
)

// startReleaseOperator runs the operator binary as the release's
// ServiceAccount with the arguments of the release's Deployment, as its pods
// would, with its endpoints on free loopback ports. kwok runs the pods of the
// Deployment without running the image, so this process is the one that
// leads and reconciles.
func startReleaseOperator(t *testing.T) *harness.Process {
	t.Helper()
	manifest := harness.DecodeObjects(t, "helm get manifest", helm(t, "get", "manifest", release, "--namespace", releaseNamespace))
	args := append(harness.DeploymentArgs(t, manifest),
		"--kubeconfig="+harness.ServiceAccountKubeconfig(t, testEnv.Client, testEnv.Config, releaseNamespace, release),
		"--metrics-bind-address="+harness.FreeAddress(t), "--health-probe-bind-address="+harness.FreeAddress(t))
	p := harness.StartProcess(t, "operator", operatorBinary, args...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("operator log:\n%s", p.LogTail(60))
		}
	})
	return p
}

// waitServed waits until the API server serves Installations.
func waitServed(t *testing.T) {
	t.Helper()
	harness.Eventually(t, timeout, "the Installation API to be served", func(ctx context.Context) (bool, error) {
		_, err := linClient.LinV1().Installations(metav1.NamespaceAll).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, err
	})
}

// uids returns the UID of each StatefulSet and PersistentVolumeClaim in
// namespace, by kind and name, with the StatefulSets' generations.
func uids(t *testing.T, namespace string) map[string]string {
	t.Helper()
	ctx := t.Context()
	out := map[string]string{}
	sets, err := testEnv.Client.AppsV1().StatefulSets(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sets.Items {
		out["StatefulSet "+s.Name] = fmt.Sprintf("%s generation %d", s.UID, s.Generation)
	}
	claims, err := testEnv.Client.CoreV1().PersistentVolumeClaims(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range claims.Items {
		out["PersistentVolumeClaim "+c.Name] = string(c.UID)
	}
	return out
}

// waitReconciling deletes the client Service of inst and waits until the
// operator has made it again: proof that the operator now running has synced
// inst, which a Ready status written by an earlier one is not.
func waitReconciling(t *testing.T, inst *linv1.Installation) {
	t.Helper()
	services := testEnv.Client.CoreV1().Services(inst.Namespace)
	name := resources.ClientServiceName(inst)
	old, err := services.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := services.Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, timeout, "the operator to make Service "+name+" again", func(ctx context.Context) (bool, error) {
		s, err := services.Get(ctx, name, metav1.GetOptions{})
		return err == nil && s.UID != old.UID, err
	})
}

// assertSame fails the test if after differs from before.
func assertSame(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Errorf("%s changed the application's StatefulSets or claims:\nbefore %v\nafter  %v", what, before, after)
	}
}

// A user's day with the chart: install it into a namespace that enforces
// Pod Security restricted, run an Installation with storage, upgrade with
// the same values (nothing rolls) and with new ones (the operator rolls, the
// application does not), uninstall (the CRD, the Installation and its data
// stay), and install again (the operator takes the Installation back without
// touching it).
func TestInstallUpgradeUninstallAndReinstallLeaveTheApplicationAlone(t *testing.T) {
	ctx := t.Context()
	if _, err := testEnv.Kubectl(ctx, "apply", "-f", filepath.Join(repoRoot, "deploy", "operator", "namespace.yaml")); err != nil {
		t.Fatal(err)
	}
	install := []string{"install", release, chartDir, "--namespace", releaseNamespace, "--set", "image.tag=latest"}
	helm(t, install...)
	waitServed(t)
	deployment := harness.WaitDeploymentAvailable(t, testEnv.Client, releaseNamespace, release, timeout)
	operator := startReleaseOperator(t)

	ns := harness.Namespace(t, testEnv.Client)
	harness.CreateVolumes(t, testEnv.Client, harness.Volumes{Prefix: ns, Count: 2})
	inst := harness.NewInstallation(ns, "demo")
	inst.Spec.Replicas = ptr.To[int32](2)
	inst.Spec.Storage = &linv1.StorageSpec{Size: resource.MustParse("1Gi"), ReclaimPolicy: linv1.ReclaimRetain}
	created, err := linClient.LinV1().Installations(ns).Create(ctx, inst, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	harness.WaitPhase(t, linClient, ns, "demo", linv1.PhaseReady, timeout)
	app := uids(t, ns)

	helm(t, "upgrade", release, chartDir, "--namespace", releaseNamespace, "--reuse-values")
	if d := harness.WaitDeploymentAvailable(t, testEnv.Client, releaseNamespace, release, timeout); d.Generation != deployment.Generation {
		t.Errorf("an upgrade with the same values moved the Deployment from generation %d to %d", deployment.Generation, d.Generation)
	}
	helm(t, "upgrade", release, chartDir, "--namespace", releaseNamespace, "--reuse-values",
		"--set-string", "podAnnotations.example\\.com/revision=2", "--set", "extraArgs={--workers=4}")
	rolled := harness.WaitDeploymentAvailable(t, testEnv.Client, releaseNamespace, release, timeout)
	if rolled.Generation == deployment.Generation || rolled.Spec.Template.Annotations["example.com/revision"] != "2" {
		t.Errorf("an upgrade with new values did not roll the Deployment: generation %d, annotations %v",
			rolled.Generation, rolled.Spec.Template.Annotations)
	}
	operator.Stop(t)
	operator = startReleaseOperator(t)
	waitReconciling(t, created)
	assertSame(t, "helm upgrade", app, uids(t, ns))
	operator.Stop(t)

	helm(t, "uninstall", release, "--namespace", releaseNamespace, "--wait")
	harness.Eventually(t, timeout, "the release's Deployment and ClusterRole to go", func(ctx context.Context) (bool, error) {
		_, errD := testEnv.Client.AppsV1().Deployments(releaseNamespace).Get(ctx, release, metav1.GetOptions{})
		_, errR := testEnv.Client.RbacV1().ClusterRoles().Get(ctx, release, metav1.GetOptions{})
		return apierrors.IsNotFound(errD) && apierrors.IsNotFound(errR), nil
	})
	left, err := linClient.LinV1().Installations(ns).Get(ctx, "demo", metav1.GetOptions{})
	if err != nil || left.UID != created.UID {
		t.Fatalf("after helm uninstall the Installation is %v (%v), want UID %s", left, err, created.UID)
	}
	assertSame(t, "helm uninstall", app, uids(t, ns))

	helm(t, install...)
	harness.WaitDeploymentAvailable(t, testEnv.Client, releaseNamespace, release, timeout)
	startReleaseOperator(t)
	waitReconciling(t, created)
	harness.WaitPhase(t, linClient, ns, "demo", linv1.PhaseReady, timeout)
	assertSame(t, "helm install over a kept Installation", app, uids(t, ns))
}
