package deploy

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/operator"
	"lin.dev/lin-operator/pkg/resources"
	"lin.dev/lin-operator/test/harness"
)

// waitPhase waits until the Installation reports phase for its current generation.
func waitPhase(t *testing.T, ns, name string, phase linv1.Phase) {
	t.Helper()
	harness.WaitPhase(t, linClient, ns, name, phase, timeout)
}

// createInstallation creates a small Installation with labels.
func createInstallation(t *testing.T, ns, name string, labels map[string]string) *linv1.Installation {
	t.Helper()
	inst := harness.NewInstallation(ns, name)
	inst.Labels = labels
	created, err := linClient.LinV1().Installations(ns).Create(t.Context(), inst, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating Installation %s/%s: %v", ns, name, err)
	}
	return created
}

// waitStatefulSet waits until the StatefulSet ns/name satisfies cond; a nil
// StatefulSet stands for one that does not exist.
func waitStatefulSet(t *testing.T, ns, name, what string, cond func(*appsv1.StatefulSet) bool) {
	t.Helper()
	harness.Eventually(t, timeout, "StatefulSet "+name+" "+what, func(ctx context.Context) (bool, error) {
		sts, err := testEnv.Client.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return cond(nil), nil
		}
		return err == nil && cond(sts), err
	})
}

// coreScenario is what an operator must do with the rights it is given:
// create the children and report status, repair drift, add and remove a
// shard, record events, and let the children go with their Installation.
func coreScenario(t *testing.T, ns string) {
	t.Helper()
	ctx := t.Context()
	inst := createInstallation(t, ns, "core", nil)
	waitPhase(t, ns, "core", linv1.PhaseReady)

	config := resources.ConfigMapName(inst)
	old, err := testEnv.Client.CoreV1().ConfigMaps(ns).Get(ctx, config, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := testEnv.Client.CoreV1().ConfigMaps(ns).Delete(ctx, config, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, timeout, "the deleted ConfigMap to come back", func(ctx context.Context) (bool, error) {
		cm, err := testEnv.Client.CoreV1().ConfigMaps(ns).Get(ctx, config, metav1.GetOptions{})
		return err == nil && cm.UID != old.UID, err
	})

	shard0 := resources.StatefulSetName(inst, 0)
	patch := `[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"example.com/drift:1"}]`
	if _, err := testEnv.Client.AppsV1().StatefulSets(ns).Patch(ctx, shard0, types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitStatefulSet(t, ns, shard0, "to get its image back", func(sts *appsv1.StatefulSet) bool {
		return sts != nil && sts.Spec.Template.Spec.Containers[0].Image == inst.Spec.Image
	})

	shard1 := resources.StatefulSetName(inst, 1)
	harness.EditInstallation(t, linClient, ns, "core", func(i *linv1.Installation) { i.Spec.Shards = ptr.To[int32](2) })
	waitStatefulSet(t, ns, shard1, "to be created", func(sts *appsv1.StatefulSet) bool { return sts != nil })
	harness.EditInstallation(t, linClient, ns, "core", func(i *linv1.Installation) { i.Spec.Shards = ptr.To[int32](1) })
	waitStatefulSet(t, ns, shard1, "to be deleted", func(sts *appsv1.StatefulSet) bool { return sts == nil })

	events, err := testEnv.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=core"})
	if err != nil || !hasEvent(events.Items, "Created") {
		t.Errorf("no Created event on the Installation (%v): %v", err, events)
	}

	if err := linClient.LinV1().Installations(ns).Delete(ctx, "core", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, timeout, "garbage collection of the children", func(ctx context.Context) (bool, error) {
		left, err := managedChildren(ctx, ns)
		if err == nil && left > 0 {
			err = fmt.Errorf("%d children left", left)
		}
		return err == nil, err
	})
}

// hasEvent reports whether one of events, recorded by the operator, has reason.
func hasEvent(events []corev1.Event, reason string) bool {
	for _, e := range events {
		if e.Reason == reason && e.Source.Component == operator.Component {
			return true
		}
	}
	return false
}

// managedChildren counts the ConfigMaps, Services and StatefulSets labelled
// as the operator's in ns.
func managedChildren(ctx context.Context, ns string) (int, error) {
	opts := metav1.ListOptions{LabelSelector: resources.ManagedBySelector}
	cms, err := testEnv.Client.CoreV1().ConfigMaps(ns).List(ctx, opts)
	if err != nil {
		return 0, err
	}
	svcs, err := testEnv.Client.CoreV1().Services(ns).List(ctx, opts)
	if err != nil {
		return 0, err
	}
	sets, err := testEnv.Client.AppsV1().StatefulSets(ns).List(ctx, opts)
	if err != nil {
		return 0, err
	}
	return len(cms.Items) + len(svcs.Items) + len(sets.Items), nil
}

// assertNothingForbidden fails the test if the operator's log shows a
// request that RBAC refused to its ServiceAccount.
func assertNothingForbidden(t *testing.T, p *operatorProcess) {
	t.Helper()
	for _, line := range strings.Split(p.Log(t), "\n") {
		if strings.Contains(line, `is forbidden: User "system:serviceaccount:`) {
			t.Errorf("operator %s was refused a request: %s", p.Name, line)
		}
	}
}

func TestOperatorAsItsServiceAccountCompletesTheCoreScenarioInEveryNamespace(t *testing.T) {
	install(t)
	objs := render(t, filepath.Join(repoRoot, "deploy"))
	kubeconfig := harness.ServiceAccountKubeconfig(t, testEnv.Client, testEnv.Config, systemNamespace, operatorName)
	op := startOperator(t, "cluster-wide", kubeconfig, harness.DeploymentArgs(t, objs)...)
	op.waitLeading(t, operatorName, timeout)

	coreScenario(t, harness.Namespace(t, testEnv.Client))
	lease, err := testEnv.Client.CoordinationV1().Leases(systemNamespace).Get(t.Context(), operatorName, metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		t.Errorf("Lease %s/%s has no holder: %v", systemNamespace, operatorName, err)
	}
	assertNothingForbidden(t, op)
}

func TestNamespacedOperatorReconcilesItsNamespaceAndNothingElse(t *testing.T) {
	ns := harness.Namespace(t, testEnv.Client)
	elsewhere := harness.Namespace(t, testEnv.Client)
	objs := namespacedInstall(t, ns)
	// Created first, so that an operator that watched it would have acted
	// long before the scenario in ns ends.
	createInstallation(t, elsewhere, "elsewhere", nil)

	op := startOperator(t, "namespaced", harness.ServiceAccountKubeconfig(t, testEnv.Client, testEnv.Config, ns, operatorName), harness.DeploymentArgs(t, objs)...)
	// Its metrics, which would tell, refuse every scraper (below): the
	// Lease tells instead.
	harness.Eventually(t, timeout, "operator namespaced to lead", func(ctx context.Context) (bool, error) {
		lease, err := testEnv.Client.CoordinationV1().Leases(ns).Get(ctx, operatorName, metav1.GetOptions{})
		return err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "", err
	})
	coreScenario(t, ns)

	inst, err := linClient.LinV1().Installations(elsewhere).Get(t.Context(), "elsewhere", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if inst.Status.ObservedGeneration != 0 || inst.Status.Phase != "" {
		t.Errorf("the Installation in %s was reconciled: %+v", elsewhere, inst.Status)
	}
	if n, err := managedChildren(t.Context(), elsewhere); err != nil || n != 0 {
		t.Errorf("%d children in %s (%v), want none", n, elsewhere, err)
	}
	assertNothingForbidden(t, op)
	// Reviewing scrapes takes a cluster-scoped grant that deploy/namespaced
	// leaves to a cluster admin: the log says so from the start, and a
	// scrape, even with a token that may get /metrics, is refused.
	if log := op.Log(t); !strings.Contains(log, "The operator may not review scrapes") || !strings.Contains(log, "system:auth-delegator") {
		t.Error("the operator's log does not say that it may not review scrapes, nor what grants it")
	}
	if code, _, err := get(t.Context(), scraper, op.metricsURL+"/metrics"); err != nil || code != http.StatusUnauthorized {
		t.Errorf("a scrape of the namespaced operator without the grant: %d %v, want 401", code, err)
	}
}
