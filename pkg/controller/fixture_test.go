package controller

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/client/clientset/versioned/fake"
	"lin.dev/lin-operator/pkg/resources"
)

// clusterDomain is the cluster domain of every fixture.
const clusterDomain = "cluster.local"

// fixedNow is the clock of the status computed in fixtures.
var fixedNow = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))

// fixture seeds fake clientsets and informer caches, runs one sync, and
// compares the actions the sync made with the expected ones, in the manner of
// k8s.io/sample-controller.
type fixture struct {
	t *testing.T

	kubeClient *k8sfake.Clientset
	linClient  *fake.Clientset
	recorder   *record.FakeRecorder
	// controller is the one the last run made, for a sync that follows it.
	controller *Controller

	// Objects in the caches.
	installations []*linv1.Installation
	live          resources.Children
	// pods are the StatefulSets' pods, in the cache and on the fake API server.
	pods []*corev1.Pod
	// Objects on the fake API server only, not in the caches: objects that
	// the operator's label-filtered informers do not see.
	uncached []runtime.Object
}

// newFixture returns an empty fixture.
func newFixture(t *testing.T) *fixture {
	return &fixture{t: t}
}

// newController builds the clients, informers and controller and seeds the caches.
func (f *fixture) newController() *Controller {
	var kubeObjects, linObjects []runtime.Object
	for _, o := range f.installations {
		linObjects = append(linObjects, o)
	}
	for _, o := range f.live.Objects() {
		kubeObjects = append(kubeObjects, o)
	}
	for _, p := range f.pods {
		kubeObjects = append(kubeObjects, p)
	}
	kubeObjects = append(kubeObjects, f.uncached...)
	f.kubeClient = k8sfake.NewClientset(kubeObjects...)
	f.kubeClient.PrependReactor("*", "statefulsets", f.generationReactor)
	f.kubeClient.PrependReactor("*", "*", dryRunReactor)
	f.linClient = fake.NewClientset(linObjects...)
	f.recorder = record.NewFakeRecorder(100)

	inf := NewInformers(f.kubeClient, f.linClient, InformerOptions{})
	c, err := New(f.kubeClient, f.linClient, inf, Options{ClusterDomain: clusterDomain, Recorder: f.recorder})
	if err != nil {
		f.t.Fatal(err)
	}
	kube, lin := inf.Kube[metav1.NamespaceAll], inf.Lin[metav1.NamespaceAll]
	// As an informer would: through the transform, which packs each child.
	// An Installation stays the test's own object, which the test may edit.
	seed := func(informer cache.SharedIndexInformer, obj runtime.Object) {
		cached, err := Transform(obj)
		if err == nil {
			err = informer.GetIndexer().Add(cached)
		}
		if err != nil {
			f.t.Fatal(err)
		}
	}
	for _, o := range f.installations {
		seed(lin.Lin().V1().Installations().Informer(), o)
	}
	for _, o := range f.live.Objects() {
		switch o.(type) {
		case *corev1.ConfigMap:
			seed(kube.Core().V1().ConfigMaps().Informer(), o)
		case *corev1.Service:
			seed(kube.Core().V1().Services().Informer(), o)
		case *appsv1.StatefulSet:
			seed(kube.Apps().V1().StatefulSets().Informer(), o)
		case *policyv1.PodDisruptionBudget:
			seed(kube.Policy().V1().PodDisruptionBudgets().Informer(), o)
		}
	}
	for _, p := range f.pods {
		seed(kube.Core().V1().Pods().Informer(), p)
	}
	return c
}

// run syncs inst once and returns the actions made on both clientsets,
// without the reads that seeding made.
func (f *fixture) run(inst *linv1.Installation, wantErr bool) []core.Action {
	f.t.Helper()
	f.controller = f.newController()
	return f.rerun(inst, wantErr)
}

// rerun syncs inst once more with the controller of the last run, on the same
// caches, and returns the actions of this sync alone.
func (f *fixture) rerun(inst *linv1.Installation, wantErr bool) []core.Action {
	f.t.Helper()
	f.kubeClient.ClearActions()
	f.linClient.ClearActions()
	err := f.controller.sync(context.Background(), cache.MetaObjectToName(inst))
	if (err != nil) != wantErr {
		f.t.Fatalf("sync error = %v, want error: %v", err, wantErr)
	}
	return append(filterReads(f.linClient.Actions()), filterReads(f.kubeClient.Actions())...)
}

// filterReads drops list and watch actions, which informers make, and dry
// runs, which change nothing.
func filterReads(actions []core.Action) []core.Action {
	var out []core.Action
	for _, a := range actions {
		if a.GetVerb() == "list" || a.GetVerb() == "watch" || a.GetVerb() == "get" || isDryRun(a) {
			continue
		}
		out = append(out, a)
	}
	return out
}

// isDryRun reports whether a is a create or update sent as a dry run.
func isDryRun(a core.Action) bool {
	switch a := a.(type) {
	case core.CreateActionImpl:
		return len(a.CreateOptions.DryRun) > 0
	case core.UpdateActionImpl:
		return len(a.UpdateOptions.DryRun) > 0
	}
	return false
}

// generationReactor stores a StatefulSet with the generation the API
// server gives it: 1 on a create, one more on an update that changes the
// spec. The object of the action stays as the controller sent it.
func (f *fixture) generationReactor(a core.Action) (bool, runtime.Object, error) {
	tracker := f.kubeClient.Tracker()
	switch a := a.(type) {
	case core.CreateActionImpl:
		sts := a.GetObject().(*appsv1.StatefulSet).DeepCopy()
		sts.Generation = 1
		return true, sts, tracker.Create(a.GetResource(), sts, sts.Namespace)
	case core.UpdateActionImpl:
		sts := a.GetObject().(*appsv1.StatefulSet).DeepCopy()
		stored, err := tracker.Get(a.GetResource(), sts.Namespace, sts.Name)
		if err != nil {
			return true, nil, err
		}
		old := stored.(*appsv1.StatefulSet)
		sts.Generation = old.Generation
		if !equality.Semantic.DeepEqual(old.Spec, sts.Spec) {
			sts.Generation++
		}
		return true, sts, tracker.Update(a.GetResource(), sts, sts.Namespace)
	}
	return false, nil, nil
}

// dryRunReactor answers a dry run as the API server does, with the object
// sent, storing nothing; the fake object tracker would store it.
func dryRunReactor(a core.Action) (bool, runtime.Object, error) {
	if !isDryRun(a) {
		return false, nil, nil
	}
	if c, ok := a.(core.CreateActionImpl); ok {
		return true, c.GetObject(), nil
	}
	return true, a.(core.UpdateActionImpl).GetObject(), nil
}

// events drains the recorded events.
func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// newInstallation is the Installation most cases start from.
func newInstallation() *linv1.Installation {
	return &linv1.Installation{
		TypeMeta: metav1.TypeMeta{APIVersion: linv1.SchemeGroupVersion.String(), Kind: "Installation"},
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "ns", UID: types.UID("uid-demo"),
			Generation: 1, ResourceVersion: "1"},
		Spec: linv1.InstallationSpec{
			Image:    "example.com/app:1",
			Replicas: ptr.To[int32](2),
			Shards:   ptr.To[int32](2),
			Ports:    []linv1.InstallationPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
			Config:   map[string]string{"app.conf": "level=info\n"},
		},
	}
}

// render returns the children inst renders, failing the test on error.
func render(t *testing.T, inst *linv1.Installation) *resources.Children {
	t.Helper()
	ch, err := resources.NewChildren(inst, clusterDomain)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// stored returns the children that the fake API server stores.
func (f *fixture) stored() *resources.Children {
	f.t.Helper()
	ctx, opts := f.t.Context(), metav1.ListOptions{}
	cms, err1 := f.kubeClient.CoreV1().ConfigMaps("ns").List(ctx, opts)
	svcs, err2 := f.kubeClient.CoreV1().Services("ns").List(ctx, opts)
	sets, err3 := f.kubeClient.AppsV1().StatefulSets("ns").List(ctx, opts)
	pdbs, err4 := f.kubeClient.PolicyV1().PodDisruptionBudgets("ns").List(ctx, opts)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		f.t.Fatal(err)
	}
	var ch resources.Children
	for i := range cms.Items {
		ch.ConfigMaps = append(ch.ConfigMaps, &cms.Items[i])
	}
	for i := range svcs.Items {
		ch.Services = append(ch.Services, &svcs.Items[i])
	}
	for i := range sets.Items {
		ch.StatefulSets = append(ch.StatefulSets, &sets.Items[i])
	}
	for i := range pdbs.Items {
		ch.PodDisruptionBudgets = append(ch.PodDisruptionBudgets, &pdbs.Items[i])
	}
	return &ch
}

// seedInSync puts inst and every child it renders in the fixture, with the
// status a sync of them computes, so that nothing differs.
func (f *fixture) seedInSync(inst *linv1.Installation) *resources.Children {
	f.seed(inst, render(f.t, inst))
	return render(f.t, inst)
}

// seed puts inst and the children ch in the fixture, the StatefulSets rolled
// out, with the status a sync of them computes.
func (f *fixture) seed(inst *linv1.Installation, ch *resources.Children) {
	for _, o := range ch.Objects() {
		// The API server gives every object a UID; deletions are tracked by
		// it. A shard's StatefulSet and budget share a name, not a UID.
		o.SetUID(types.UID(fmt.Sprintf("uid-%T-%s", o, o.GetName())))
	}
	for _, sts := range ch.StatefulSets {
		// Rolled out, as the StatefulSet controller reports it.
		n := *sts.Spec.Replicas
		sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: sts.Generation, Replicas: n, ReadyReplicas: n,
			UpdatedReplicas: n, CurrentRevision: sts.Name + "-1", UpdateRevision: sts.Name + "-1"}
	}
	f.live = *ch
	inst.Status = computeStatus(inst, ch.StatefulSets, newOutcome(ch, nil), clusterDomain, fixedNow)
	f.installations = append(f.installations, inst)
}
