package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/resources"
	"lin.dev/lin-operator/test/harness"
)

// timeout bounds every wait for the operator; it converges in well under a second.
const timeout = 30 * time.Second

// setup makes a namespace and runs an operator watching only it.
func setup(t *testing.T) (string, *harness.Operator) {
	ns := harness.Namespace(t, testEnv.Client)
	return ns, harness.StartOperator(t, testEnv.Config, harness.Options{Namespaces: []string{ns}})
}

// create creates inst and fails the test on error.
func create(t *testing.T, inst *linv1.Installation) *linv1.Installation {
	t.Helper()
	got, err := linClient.LinV1().Installations(inst.Namespace).Create(context.Background(), inst, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating Installation %s: %v", inst.Name, err)
	}
	return got
}

// edit changes an Installation's spec, retrying on conflicts.
func edit(t *testing.T, ns, name string, change func(*linv1.Installation)) {
	t.Helper()
	harness.EditInstallation(t, linClient, ns, name, change)
}

// waitObserved waits until status describes the current generation and
// returns the Installation.
func waitObserved(t *testing.T, ns, name string) *linv1.Installation {
	t.Helper()
	var inst *linv1.Installation
	harness.Eventually(t, timeout, "status of "+name+" to observe its generation", func(ctx context.Context) (bool, error) {
		var err error
		inst, err = linClient.LinV1().Installations(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && inst.Status.ObservedGeneration == inst.Generation, err
	})
	return inst
}

// statefulSet waits for a StatefulSet that satisfies cond and returns it.
func statefulSet(t *testing.T, ns, name string, what string, cond func(*appsv1.StatefulSet) bool) *appsv1.StatefulSet {
	t.Helper()
	var sts *appsv1.StatefulSet
	harness.Eventually(t, timeout, "StatefulSet "+name+" "+what, func(ctx context.Context) (bool, error) {
		var err error
		sts, err = testEnv.Client.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && cond(sts), err
	})
	return sts
}

func TestChildrenAppearWithOwnerReferencesAndLabels(t *testing.T) {
	ns, _ := setup(t)
	inst := harness.NewInstallation(ns, "demo")
	inst.Spec.Shards = ptr.To[int32](2)
	inst = create(t, inst)
	got := waitObserved(t, ns, "demo")

	ctx := context.Background()
	var children []metav1.Object
	for _, name := range []string{"demo-config", "demo-topology"} {
		cm, err := testEnv.Client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("ConfigMap %s: %v", name, err)
		}
		children = append(children, cm)
	}
	for _, name := range []string{"demo-headless", "demo"} {
		svc, err := testEnv.Client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("Service %s: %v", name, err)
		}
		children = append(children, svc)
	}
	for _, name := range []string{"demo-0", "demo-1"} {
		children = append(children, statefulSet(t, ns, name, "to exist", func(*appsv1.StatefulSet) bool { return true }))
	}
	for _, c := range children {
		ref := metav1.GetControllerOf(c)
		if ref == nil || ref.UID != inst.UID || ref.Kind != "Installation" || !ptr.Deref(ref.BlockOwnerDeletion, false) {
			t.Errorf("%s: controller reference %+v, want the Installation's with blockOwnerDeletion", c.GetName(), ref)
		}
		for k, v := range map[string]string{
			resources.LabelName: resources.NameValue, resources.LabelInstance: "demo",
			resources.LabelManagedBy: "lin-operator", resources.LabelInstallation: "demo",
		} {
			if c.GetLabels()[k] != v {
				t.Errorf("%s: label %s = %q, want %q", c.GetName(), k, c.GetLabels()[k], v)
			}
		}
	}
	if got.Status.Selector != "lin.dev/installation=demo" || got.Status.Endpoint != "demo."+ns+".svc.cluster.local" ||
		len(got.Status.Shards) != 2 || got.Status.Ready != "0/2" {
		t.Errorf("status = %+v", got.Status)
	}
}

func TestADeletedChildComesBack(t *testing.T) {
	ns, _ := setup(t)
	create(t, harness.NewInstallation(ns, "demo"))
	// Status is written after every child: the StatefulSet goes first, so
	// its being there does not mean the ConfigMaps are.
	waitObserved(t, ns, "demo")
	old := statefulSet(t, ns, "demo-0", "to exist", func(*appsv1.StatefulSet) bool { return true })

	ctx := context.Background()
	if err := testEnv.Client.AppsV1().StatefulSets(ns).Delete(ctx, "demo-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := testEnv.Client.CoreV1().ConfigMaps(ns).Delete(ctx, "demo-topology", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	statefulSet(t, ns, "demo-0", "to come back", func(s *appsv1.StatefulSet) bool { return s.UID != old.UID })
	harness.Eventually(t, timeout, "ConfigMap demo-topology to come back", func(ctx context.Context) (bool, error) {
		_, err := testEnv.Client.CoreV1().ConfigMaps(ns).Get(ctx, "demo-topology", metav1.GetOptions{})
		return err == nil, err
	})
}

func TestAnEditedChildFieldGoesBackWhileForeignMetadataStays(t *testing.T) {
	ns, _ := setup(t)
	create(t, harness.NewInstallation(ns, "demo"))
	statefulSet(t, ns, "demo-0", "to exist", func(*appsv1.StatefulSet) bool { return true })

	harness.Eventually(t, timeout, "the drift edit", func(ctx context.Context) (bool, error) {
		sts, err := testEnv.Client.AppsV1().StatefulSets(ns).Get(ctx, "demo-0", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		sts.Spec.Template.Spec.Containers[0].Image = "example.com/intruder:1"
		sts.Annotations["backup.example.com/schedule"] = "daily"
		sts.Labels["team"] = "storage"
		_, err = testEnv.Client.AppsV1().StatefulSets(ns).Update(ctx, sts, metav1.UpdateOptions{})
		return err == nil, err
	})
	sts := statefulSet(t, ns, "demo-0", "to get its image back", func(s *appsv1.StatefulSet) bool {
		return s.Spec.Template.Spec.Containers[0].Image == "example.com/app:1"
	})
	if sts.Annotations["backup.example.com/schedule"] != "daily" || sts.Labels["team"] != "storage" {
		t.Errorf("foreign metadata lost: labels %v, annotations %v", sts.Labels, sts.Annotations)
	}

	harness.Eventually(t, timeout, "the Service drift edit", func(ctx context.Context) (bool, error) {
		svc, err := testEnv.Client.CoreV1().Services(ns).Get(ctx, "demo", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		svc.Spec.Selector = map[string]string{"app": "other"}
		svc.Annotations = map[string]string{"prometheus.io/scrape": "true"}
		_, err = testEnv.Client.CoreV1().Services(ns).Update(ctx, svc, metav1.UpdateOptions{})
		return err == nil, err
	})
	harness.Eventually(t, timeout, "the Service selector to go back", func(ctx context.Context) (bool, error) {
		svc, err := testEnv.Client.CoreV1().Services(ns).Get(ctx, "demo", metav1.GetOptions{})
		return err == nil && svc.Spec.Selector[resources.LabelInstallation] == "demo" && len(svc.Spec.Selector) == 1 &&
			svc.Annotations["prometheus.io/scrape"] == "true", err
	})
}

// TestHandAddedPodTemplateFieldsGoBack adds by hand to a StatefulSet's pod
// template what the API server never defaults (a container, an env var, a
// volume, a nodeSelector entry): the template is the operator's, so they go,
// while an annotation that another tool added to it (kubectl rollout
// restart's) stays.
func TestHandAddedPodTemplateFieldsGoBack(t *testing.T) {
	ns, _ := setup(t)
	create(t, harness.NewInstallation(ns, "demo"))
	want := statefulSet(t, ns, "demo-0", "to exist", func(*appsv1.StatefulSet) bool { return true }).Spec.Template.Spec
	const restartedAt = "kubectl.kubernetes.io/restartedAt"

	harness.Eventually(t, timeout, "the hand edit", func(ctx context.Context) (bool, error) {
		sts, err := testEnv.Client.AppsV1().StatefulSets(ns).Get(ctx, "demo-0", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pod := &sts.Spec.Template.Spec
		pod.Containers[0].Env = append(pod.Containers[0].Env, corev1.EnvVar{Name: "DEBUG", Value: "1"})
		pod.Containers = append(pod.Containers, corev1.Container{Name: "sidecar", Image: "example.com/sidecar:1"})
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		pod.NodeSelector = map[string]string{"disk": "ssd"}
		sts.Spec.Template.Annotations[restartedAt] = "2026-12-03T12:00:00Z"
		_, err = testEnv.Client.AppsV1().StatefulSets(ns).Update(ctx, sts, metav1.UpdateOptions{})
		return err == nil, err
	})
	sts := statefulSet(t, ns, "demo-0", "to lose the hand-added fields", func(s *appsv1.StatefulSet) bool {
		return equality.Semantic.DeepEqual(s.Spec.Template.Spec, want)
	})
	if sts.Spec.Template.Annotations[restartedAt] == "" {
		t.Errorf("the pod template lost the annotation %s that another tool added: %v", restartedAt, sts.Spec.Template.Annotations)
	}
}

func TestConfigEditChangesTheHashAndReplicasEditDoesNot(t *testing.T) {
	ns, _ := setup(t)
	create(t, harness.NewInstallation(ns, "demo"))
	hash := func(s *appsv1.StatefulSet) string { return s.Spec.Template.Annotations[resources.AnnotationConfigHash] }
	first := statefulSet(t, ns, "demo-0", "to exist", func(*appsv1.StatefulSet) bool { return true })

	edit(t, ns, "demo", func(i *linv1.Installation) { i.Spec.Replicas = ptr.To[int32](3) })
	scaled := statefulSet(t, ns, "demo-0", "to scale to 3", func(s *appsv1.StatefulSet) bool { return *s.Spec.Replicas == 3 })
	if hash(scaled) != hash(first) || scaled.Generation != first.Generation+1 {
		t.Errorf("replicas edit: hash %q -> %q, generation %d -> %d; want the same hash and one update",
			hash(first), hash(scaled), first.Generation, scaled.Generation)
	}
	if !equality.Semantic.DeepEqual(first.Spec.Template, scaled.Spec.Template) {
		t.Error("replicas edit changed the pod template")
	}
	// The sync that scales the StatefulSet writes the topology too, in an
	// order that is not promised: seeing the one does not mean the other.
	harness.Eventually(t, timeout, "the topology to name 3 pods", func(ctx context.Context) (bool, error) {
		topo, err := testEnv.Client.CoreV1().ConfigMaps(ns).Get(ctx, "demo-topology", metav1.GetOptions{})
		if err == nil && strings.Count(topo.Data[resources.HostsFile], "\n") != 3 {
			err = fmt.Errorf("hosts: %q", topo.Data[resources.HostsFile])
		}
		return err == nil, err
	})

	edit(t, ns, "demo", func(i *linv1.Installation) { i.Spec.Config["app.conf"] = "level=debug\n" })
	rolled := statefulSet(t, ns, "demo-0", "to get a new config hash", func(s *appsv1.StatefulSet) bool { return hash(s) != hash(first) })
	if *rolled.Spec.Replicas != 3 {
		t.Errorf("replicas = %d after the config edit, want 3", *rolled.Spec.Replicas)
	}
}

// TestAChildWithoutItsManagedByLabelIsTakenBack removes the managed-by label
// from two children (kubectl label ... app.kubernetes.io/managed-by-): they
// leave the operator's label-filtered caches, so the next sync's create
// meets them as AlreadyExists. They carry the Installation's controller
// reference, so they are its own: the operator reads them from the API
// server, gives their labels back, and reports no conflict.
func TestAChildWithoutItsManagedByLabelIsTakenBack(t *testing.T) {
	ns, op := setup(t)
	create(t, harness.NewInstallation(ns, "demo"))
	statefulSet(t, ns, "demo-0", "to exist", func(*appsv1.StatefulSet) bool { return true })
	waitObserved(t, ns, "demo")

	ctx := context.Background()
	unlabel := []byte(`{"metadata":{"labels":{"` + resources.LabelManagedBy + `":null}}}`)
	if _, err := testEnv.Client.CoreV1().ConfigMaps(ns).Patch(ctx, "demo-config", types.MergePatchType, unlabel, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := testEnv.Client.AppsV1().StatefulSets(ns).Patch(ctx, "demo-0", types.MergePatchType, unlabel, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	statefulSet(t, ns, "demo-0", "to get its managed-by label back", func(s *appsv1.StatefulSet) bool {
		return s.Labels[resources.LabelManagedBy] == "lin-operator"
	})
	harness.Eventually(t, timeout, "ConfigMap demo-config to get its managed-by label back", func(ctx context.Context) (bool, error) {
		cm, err := testEnv.Client.CoreV1().ConfigMaps(ns).Get(ctx, "demo-config", metav1.GetOptions{})
		return err == nil && cm.Labels[resources.LabelManagedBy] == "lin-operator", err
	})
	inst, err := linClient.LinV1().Installations(ns).Get(ctx, "demo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := apimeta.FindStatusCondition(inst.Status.Conditions, linv1.ConditionDegraded); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("Degraded = %+v, want False", c)
	}
	events, err := testEnv.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=ResourceConflict"})
	if err != nil || len(events.Items) > 0 {
		t.Errorf("ResourceConflict events: %v, %v", events, err)
	}
	t.Logf("the operator read %s", harness.Format(harness.Reads(op.Requests.Snapshot())))
}

func TestAForeignConfigMapIsLeftAloneAndReported(t *testing.T) {
	ns, _ := setup(t)
	ctx := context.Background()
	foreign := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-config", Namespace: ns, Annotations: map[string]string{"owner": "someone"}},
		Data:       map[string]string{"theirs": "keep"},
	}
	foreign, err := testEnv.Client.CoreV1().ConfigMaps(ns).Create(ctx, foreign, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	create(t, harness.NewInstallation(ns, "demo"))
	harness.Eventually(t, timeout, "status to say ResourceConflict", func(ctx context.Context) (bool, error) {
		inst, err := linClient.LinV1().Installations(ns).Get(ctx, "demo", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		c := apimeta.FindStatusCondition(inst.Status.Conditions, linv1.ConditionDegraded)
		return inst.Status.Phase == linv1.PhaseDegraded && c != nil && c.Reason == "ResourceConflict", nil
	})
	got, err := testEnv.Client.CoreV1().ConfigMaps(ns).Get(ctx, "demo-config", metav1.GetOptions{})
	if err != nil || got.ResourceVersion != foreign.ResourceVersion {
		t.Errorf("the foreign ConfigMap changed: %+v, %v", got, err)
	}
	harness.Eventually(t, timeout, "a Warning ResourceConflict event", func(ctx context.Context) (bool, error) {
		events, err := testEnv.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=ResourceConflict"})
		return err == nil && len(events.Items) > 0 && events.Items[0].Type == corev1.EventTypeWarning, err
	})
	// The other children are made all the same.
	statefulSet(t, ns, "demo-0", "to exist", func(*appsv1.StatefulSet) bool { return true })

	// Once the foreign object is gone, the Installation recovers.
	if err := testEnv.Client.CoreV1().ConfigMaps(ns).Delete(ctx, "demo-config", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, timeout, "the Installation to recover", func(ctx context.Context) (bool, error) {
		cm, err := testEnv.Client.CoreV1().ConfigMaps(ns).Get(ctx, "demo-config", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil && metav1.GetControllerOf(cm) != nil, err
	})
}

func TestInSyncInstallationsCostNoRequestsAfterRestart(t *testing.T) {
	ns, op := setup(t)
	for _, name := range []string{"a", "b", "c"} {
		inst := harness.NewInstallation(ns, name)
		inst.Spec.Shards = ptr.To[int32](2)
		create(t, inst)
	}
	for _, name := range []string{"a", "b", "c"} {
		waitObserved(t, ns, name)
		statefulSet(t, ns, name+"-1", "to exist", func(*appsv1.StatefulSet) bool { return true })
	}
	// Let the watch events of the operator's own writes settle.
	time.Sleep(2 * time.Second)
	before := op.Requests.Snapshot()
	time.Sleep(2 * time.Second)
	if d := op.Requests.Since(before); len(harness.Writes(d))+len(harness.Reads(d)) > 0 {
		t.Errorf("in sync, the operator made %s", harness.Format(d))
	}
	op.Stop()

	restarted := harness.StartOperator(t, testEnv.Config, harness.Options{Namespaces: []string{ns}, ResyncPeriod: time.Second})
	synced := restarted.Requests.Snapshot()
	// The first reconcile of each may come from the restart's own list;
	// three more are resyncs.
	restarted.Reconciles.WaitForMore(t, timeout, ns, restarted.Reconciles.Snapshot(ns, "a", "b", "c"), 4)
	d := restarted.Requests.Since(synced)
	if w := harness.Writes(d); len(w) > 0 {
		t.Errorf("after a restart and resyncs, the operator wrote %s", harness.Format(w))
	}
	if r := harness.Reads(d); len(r) > 0 {
		t.Errorf("after its caches synced, the operator read %s from the API server", harness.Format(r))
	}
	t.Logf("requests to sync the caches: %s", harness.Format(synced))
}
