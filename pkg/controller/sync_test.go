package controller

import (
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	core "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/resources"
)

// action is the part of a client action that the tests compare.
type action struct {
	verb, resource, subresource, name string
}

// String formats an action for failure messages.
func (a action) String() string {
	return strings.TrimSuffix(a.verb+" "+a.resource+"/"+a.subresource, "/") + " " + a.name
}

// summarize turns client actions into comparable actions.
func summarize(actions []core.Action) []action {
	var out []action
	for _, a := range actions {
		s := action{verb: a.GetVerb(), resource: a.GetResource().Resource, subresource: a.GetSubresource()}
		switch a := a.(type) {
		case core.CreateAction:
			s.name = a.GetObject().(metav1.Object).GetName()
		case core.UpdateAction:
			s.name = a.GetObject().(metav1.Object).GetName()
		case core.DeleteAction:
			s.name = a.GetName()
		}
		out = append(out, s)
	}
	return out
}

// checkActions fails the test unless got is exactly want, in order.
func checkActions(t *testing.T, got []core.Action, want ...action) {
	t.Helper()
	g := summarize(got)
	if len(g) != len(want) {
		t.Fatalf("got %d actions %v, want %d %v", len(g), g, len(want), want)
	}
	for i := range want {
		if g[i] != want[i] {
			t.Errorf("action %d: got %v, want %v", i, g[i], want[i])
		}
	}
}

// object returns the object that a create or update action sent.
func object[T runtime.Object](t *testing.T, a core.Action) T {
	t.Helper()
	switch a := a.(type) {
	case core.CreateAction:
		return a.GetObject().(T)
	case core.UpdateAction:
		return a.GetObject().(T)
	}
	t.Fatalf("action %v carries no object", a)
	panic("unreachable")
}

// statusOf returns the status that a status update action wrote.
func statusOf(t *testing.T, a core.Action) linv1.InstallationStatus {
	t.Helper()
	return object[*linv1.Installation](t, a).Status
}

// Actions that recur.
var (
	updateStatus    = action{"update", "installations", "status", "demo"}
	createConfig    = action{"create", "configmaps", "", "demo-config"}
	createTopology  = action{"create", "configmaps", "", "demo-topology"}
	createHeadless  = action{"create", "services", "", "demo-headless"}
	createClientSvc = action{"create", "services", "", "demo"}
	createShard0    = action{"create", "statefulsets", "", "demo-0"}
	createShard1    = action{"create", "statefulsets", "", "demo-1"}
	updateConfig    = action{"update", "configmaps", "", "demo-config"}
	updateTopology  = action{"update", "configmaps", "", "demo-topology"}
	updateShard0    = action{"update", "statefulsets", "", "demo-0"}
	updateShard1    = action{"update", "statefulsets", "", "demo-1"}
	createBudget0   = action{"create", "poddisruptionbudgets", "", "demo-0"}
	createBudget1   = action{"create", "poddisruptionbudgets", "", "demo-1"}
	deleteBudget0   = action{"delete", "poddisruptionbudgets", "", "demo-0"}
	deleteBudget1   = action{"delete", "poddisruptionbudgets", "", "demo-1"}
)

func TestSyncCreatesEveryChildOfANewInstallation(t *testing.T) {
	f := newFixture(t)
	inst := newInstallation()
	f.installations = append(f.installations, inst)

	actions := f.run(inst, false)
	// The StatefulSet of shard 0 goes first: only after the API server
	// accepts its pod template are the others written.
	checkActions(t, actions, updateStatus, createShard0, createConfig, createTopology, createHeadless, createClientSvc, createShard1,
		createBudget0, createBudget1)

	objs := render(t, inst).Objects() // ConfigMaps, Services, StatefulSets, budgets
	shard0 := objs[4]
	for i, w := range append([]resources.Object{shard0}, slices.Delete(objs, 4, 5)...) {
		if got := object[runtime.Object](t, actions[i+1]); !equality.Semantic.DeepEqual(got, w) {
			t.Errorf("%v sent %+v, want %+v", summarize(actions[i+1:i+2]), got, w)
		}
	}
	st := statusOf(t, actions[0])
	if st.Phase != linv1.PhasePending || st.ObservedGeneration != 1 || st.Ready != "0/4" ||
		st.Selector != "lin.dev/installation=demo" || st.Endpoint != "demo.ns.svc.cluster.local" {
		t.Errorf("status = %+v", st)
	}
	if c := apimeta.FindStatusCondition(st.Conditions, linv1.ConditionDegraded); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("Degraded condition = %+v, want False", c)
	}
	want := "Normal Created Created 2 StatefulSets (demo-0, demo-1), 2 ConfigMaps (demo-config, demo-topology), " +
		"2 Services (demo, demo-headless), 2 PodDisruptionBudgets (demo-0, demo-1)"
	if ev := f.events(); len(ev) != 1 || ev[0] != want {
		t.Errorf("events = %q, want one that sums up the creates: %q", ev, want)
	}
}

func TestSyncOfANewInstallationWritesStatusOnce(t *testing.T) {
	f := newFixture(t)
	inst := newInstallation()
	f.installations = append(f.installations, inst)
	actions := f.run(inst, false)

	// Status came from the StatefulSets as the API server stored them, so
	// the next sync, whose caches show what the first one wrote, computes
	// the same and writes nothing.
	st := statusOf(t, actions[0])
	if st.Rollout == nil || st.Rollout.Shard != 0 {
		t.Errorf("status.rollout = %+v, want shard 0, whose pods are about to be made", st.Rollout)
	}
	f.live = *f.stored()
	inst.Status, inst.ResourceVersion = st, "2"
	f.installations = []*linv1.Installation{inst}
	checkActions(t, f.run(inst, false))
}

func TestSyncInSyncMakesNoRequest(t *testing.T) {
	f := newFixture(t)
	inst := newInstallation()
	f.seedInSync(inst)

	checkActions(t, f.run(inst, false))
	if ev := f.events(); len(ev) != 0 {
		t.Errorf("events = %q, want none", ev)
	}
}

func TestSyncRepairsDriftedChildrenAndKeepsForeignMetadata(t *testing.T) {
	f := newFixture(t)
	inst := newInstallation()
	want := f.seedInSync(inst)
	sts := f.live.StatefulSets[0]
	sts.Spec.Template.Spec.Containers[0].Image = "example.com/other:6"
	sts.Labels["team"] = "storage"
	sts.Annotations["backup.example.com/schedule"] = "daily"
	cm := f.live.ConfigMaps[0]
	cm.Data["app.conf"] = "level=debug\n"

	// Status counts shard 0's pods as not updated any more.
	actions := f.run(inst, false)[1:]
	checkActions(t, actions, updateShard0, updateConfig)
	gotCM := object[*corev1.ConfigMap](t, actions[1])
	if !equality.Semantic.DeepEqual(gotCM.Data, want.ConfigMaps[0].Data) {
		t.Errorf("config data = %v, want %v", gotCM.Data, want.ConfigMaps[0].Data)
	}
	got := object[*appsv1.StatefulSet](t, actions[0])
	if !equality.Semantic.DeepEqual(got.Spec, want.StatefulSets[0].Spec) {
		t.Errorf("StatefulSet spec was not restored:\n got %+v\nwant %+v", got.Spec, want.StatefulSets[0].Spec)
	}
	if got.Labels["team"] != "storage" || got.Annotations["backup.example.com/schedule"] != "daily" {
		t.Errorf("foreign metadata lost: labels %v annotations %v", got.Labels, got.Annotations)
	}
	if ev := f.events(); len(ev) != 1 || ev[0] != "Normal Updated Updated 1 StatefulSet (demo-0), 1 ConfigMap (demo-config)" {
		t.Errorf("events = %q, want one Normal Updated for the StatefulSet and the ConfigMap", ev)
	}
}

func TestSyncRecreatesADeletedChild(t *testing.T) {
	f := newFixture(t)
	inst := newInstallation()
	want := f.seedInSync(inst)
	f.live.ConfigMaps = f.live.ConfigMaps[:1] // the topology ConfigMap was deleted

	actions := f.run(inst, false)
	checkActions(t, actions, createTopology)
	if got := object[*corev1.ConfigMap](t, actions[0]); !equality.Semantic.DeepEqual(got, want.ConfigMaps[1]) {
		t.Errorf("created %+v, want %+v", got, want.ConfigMaps[1])
	}
}

func TestSyncRefusesAForeignObjectOfTheSameName(t *testing.T) {
	foreign := func() *corev1.ConfigMap {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "demo-config", Namespace: "ns",
				Labels: map[string]string{resources.LabelManagedBy: resources.ManagedByValue, resources.LabelInstallation: "demo"}},
			Data: map[string]string{"theirs": "keep"},
		}
	}
	for _, tc := range []struct {
		name   string
		cached bool
		want   []action
	}{
		// A labelled foreign object is in the cache and is never written.
		{"in the cache", true, []action{updateStatus, createShard0, createTopology, createHeadless, createClientSvc, createShard1, createBudget0, createBudget1}},
		// An unlabelled one is unseen: the create fails and nothing else is tried on it.
		{"not in the cache", false, []action{updateStatus, createShard0, createConfig, createTopology, createHeadless, createClientSvc, createShard1, createBudget0, createBudget1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			inst := newInstallation()
			f.installations = append(f.installations, inst)
			if tc.cached {
				f.live.ConfigMaps = append(f.live.ConfigMaps, foreign())
			} else {
				f.uncached = append(f.uncached, foreign())
			}

			actions := f.run(inst, true)
			checkActions(t, actions, tc.want...)
			st := statusOf(t, actions[0])
			c := apimeta.FindStatusCondition(st.Conditions, linv1.ConditionDegraded)
			if st.Phase != linv1.PhaseDegraded || c == nil || c.Status != metav1.ConditionTrue ||
				c.Reason != ReasonResourceConflict || !strings.Contains(c.Message, "ConfigMap demo-config") {
				t.Errorf("phase %q, Degraded condition %+v", st.Phase, c)
			}
			if !containsPrefix(f.events(), "Warning ResourceConflict") {
				t.Error("no Warning ResourceConflict event")
			}
			got, err := f.kubeClient.CoreV1().ConfigMaps("ns").Get(t.Context(), "demo-config", metav1.GetOptions{})
			if err != nil || got.Data["theirs"] != "keep" || len(got.OwnerReferences) != 0 {
				t.Errorf("foreign ConfigMap changed: %+v, %v", got, err)
			}
		})
	}
}

func TestSyncConfigEditRollsTheShardsOneAfterTheOther(t *testing.T) {
	f := newFixture(t)
	inst := newInstallation()
	old := f.seedInSync(inst)
	inst.Spec.Config = map[string]string{"app.conf": "level=debug\n"}
	inst.Generation = 2
	oldHash, newHash := old.StatefulSets[0].Spec.Template.Annotations[resources.AnnotationConfigHash], resources.ConfigHash(inst)

	// Shard 0 gets the new template; shard 1 keeps its own.
	actions := f.run(inst, false)
	checkActions(t, actions, updateStatus, updateShard0, updateConfig, updateShard1)
	shard0, shard1 := object[*appsv1.StatefulSet](t, actions[1]), object[*appsv1.StatefulSet](t, actions[3])
	if h := shard0.Spec.Template.Annotations[resources.AnnotationConfigHash]; h != newHash {
		t.Errorf("shard 0 config hash = %q, want the new %q", h, newHash)
	}
	if h := shard1.Spec.Template.Annotations[resources.AnnotationConfigHash]; h != oldHash {
		t.Errorf("shard 1 config hash = %q, want the old %q while shard 0 rolls", h, oldHash)
	}
	st := statusOf(t, actions[0])
	if st.ObservedGeneration != 2 || st.Rollout == nil || st.Rollout.Shard != 0 {
		t.Fatalf("status: observedGeneration %d, rollout %+v; want 2, shard 0", st.ObservedGeneration, st.Rollout)
	}

	// While shard 0 replaces its pods, nothing more is written.
	f.live.ConfigMaps[0] = object[*corev1.ConfigMap](t, actions[2])
	f.live.StatefulSets = []*appsv1.StatefulSet{shard0, shard1}
	shard0.Generation, shard0.Status.UpdateRevision, shard0.Status.UpdatedReplicas = 2, "demo-0-2", 1
	inst.Status, inst.ResourceVersion = st, "3"
	checkActions(t, f.run(inst, false))

	// Once it has every pod updated and Ready, shard 1 follows.
	shard0.Status = appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 2,
		CurrentRevision: "demo-0-2", UpdateRevision: "demo-0-2"}
	actions = f.run(inst, false)
	checkActions(t, actions, updateStatus, updateShard1)
	if h := object[*appsv1.StatefulSet](t, actions[1]).Spec.Template.Annotations[resources.AnnotationConfigHash]; h != newHash {
		t.Errorf("shard 1 config hash = %q, want the new %q", h, newHash)
	}
	if r := statusOf(t, actions[0]).Rollout; r == nil || r.Shard != 1 {
		t.Errorf("status.rollout = %+v, want shard 1", r)
	}
}

func TestSyncAllShardsRollsEveryShardAtOnce(t *testing.T) {
	f := newFixture(t)
	inst := newInstallation()
	inst.Spec.Rollout.Strategy = linv1.RolloutAllShards
	f.seedInSync(inst)
	inst.Spec.Image = "example.com/app:2"
	inst.Generation = 2

	actions := f.run(inst, false)
	checkActions(t, actions, updateStatus, updateShard0, updateShard1)
	for _, a := range actions[1:] {
		if img := object[*appsv1.StatefulSet](t, a).Spec.Template.Spec.Containers[0].Image; img != "example.com/app:2" {
			t.Errorf("%v: image %q, want example.com/app:2", summarize([]core.Action{a}), img)
		}
	}
}

func TestSyncStalledRolloutIsReportedOnceAndHolds(t *testing.T) {
	f := newFixture(t)
	inst := newInstallation()
	inst.Spec.Rollout.ProgressDeadlineSeconds = ptr.To[int32](60)
	f.seedInSync(inst)
	inst.Spec.Image = "example.com/app:broken"
	inst.Generation = 2
	actions := f.run(inst, false)
	checkActions(t, actions, updateStatus, updateShard0, updateShard1)
	shard0, shard1 := object[*appsv1.StatefulSet](t, actions[1]), object[*appsv1.StatefulSet](t, actions[2])

	// Shard 0's new pod never becomes Ready, for longer than the deadline.
	f.live.StatefulSets = []*appsv1.StatefulSet{shard0, shard1}
	shard0.Generation, shard0.Status.UpdateRevision, shard0.Status.ReadyReplicas, shard0.Status.UpdatedReplicas = 2, "demo-0-2", 1, 1
	st := statusOf(t, actions[0])
	st.Rollout.Since = metav1.NewTime(st.Rollout.Since.Add(-61 * time.Second))
	inst.Status, inst.ResourceVersion = st, "3"
	f.events()
	actions = f.run(inst, false)
	checkActions(t, actions, updateStatus)
	c := apimeta.FindStatusCondition(statusOf(t, actions[0]).Conditions, linv1.ConditionProgressing)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonRolloutStalled || !strings.Contains(c.Message, "Shard 0") {
		t.Errorf("Progressing = %+v, want False/RolloutStalled naming shard 0", c)
	}
	if ev := f.events(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning RolloutStalled") {
		t.Errorf("events = %q, want one Warning RolloutStalled", ev)
	}

	// Reported already: the next sync writes nothing, and shard 1 still waits.
	inst.Status, inst.ResourceVersion = statusOf(t, actions[0]), "4"
	checkActions(t, f.run(inst, false))
	if ev := f.events(); len(ev) != 0 {
		t.Errorf("events = %q, want none", ev)
	}
}

func TestSyncReplicasEditKeepsThePodTemplate(t *testing.T) {
	f := newFixture(t)
	inst := newInstallation()
	old := f.seedInSync(inst)
	inst.Spec.Replicas = ptr.To[int32](3)
	inst.Generation = 2

	actions := f.run(inst, false)
	checkActions(t, actions, updateStatus, updateShard0, updateTopology, updateShard1)
	for i, a := range []core.Action{actions[1], actions[3]} {
		got := object[*appsv1.StatefulSet](t, a)
		if *got.Spec.Replicas != 3 {
			t.Errorf("shard %d replicas = %d, want 3", i, *got.Spec.Replicas)
		}
		if !equality.Semantic.DeepEqual(got.Spec.Template, old.StatefulSets[i].Spec.Template) {
			t.Errorf("shard %d pod template changed on a replicas edit", i)
		}
	}
	topo := object[*corev1.ConfigMap](t, actions[2])
	if n := strings.Count(topo.Data[resources.HostsFile], "\n"); n != 6 {
		t.Errorf("hosts lists %d pods, want 6", n)
	}
}

func TestSyncFewerShardsDeletesTheRemovedShards(t *testing.T) {
	f := newFixture(t)
	inst := newInstallation()
	f.seedInSync(inst)
	inst.Spec.Shards = ptr.To[int32](1)
	inst.Generation = 2

	checkActions(t, f.run(inst, false), updateStatus, updateTopology, action{"delete", "statefulsets", "", "demo-1"}, deleteBudget1)
}

func TestSyncInvalidSpecWritesOnlyStatus(t *testing.T) {
	f := newFixture(t)
	inst := newInstallation()
	inst.Spec.Config = map[string]string{"big": strings.Repeat("x", resources.MaxConfigMapSize)}
	f.installations = append(f.installations, inst)

	// A spec that cannot be rendered is not retried: sync returns nil.
	actions := f.run(inst, false)
	checkActions(t, actions, updateStatus)
	c := apimeta.FindStatusCondition(statusOf(t, actions[0]).Conditions, linv1.ConditionDegraded)
	if c == nil || c.Reason != ReasonInvalidSpec || !strings.Contains(c.Message, "spec.config") {
		t.Errorf("Degraded condition = %+v, want InvalidSpec naming spec.config", c)
	}
	if !containsPrefix(f.events(), "Warning InvalidSpec") {
		t.Error("no Warning InvalidSpec event")
	}
}

func TestSyncPausedWritesNoChild(t *testing.T) {
	f := newFixture(t)
	inst := newInstallation()
	f.seedInSync(inst)
	inst.Spec.Image = "example.com/app:2"
	inst.Spec.Paused = true
	inst.Generation = 2

	actions := f.run(inst, false)
	checkActions(t, actions, updateStatus)
	if p := statusOf(t, actions[0]).Phase; p != linv1.PhasePaused {
		t.Errorf("phase = %q, want Paused", p)
	}
}

func TestSyncImmutableFieldRecreatesTheStatefulSetOnce(t *testing.T) {
	f := newFixture(t)
	inst := newInstallation()
	f.seedInSync(inst)
	inst.Spec.PodManagementPolicy = linv1.ParallelPodManagement
	inst.Generation = 2

	actions := f.run(inst, false)
	deleteShard0 := action{"delete", "statefulsets", "", "demo-0"}
	deleteShard1 := action{"delete", "statefulsets", "", "demo-1"}
	checkActions(t, actions, updateStatus, deleteShard0, deleteShard1)
	for _, a := range actions[1:] {
		opts := a.(core.DeleteAction).GetDeleteOptions()
		if opts.PropagationPolicy == nil || *opts.PropagationPolicy != metav1.DeletePropagationOrphan {
			t.Errorf("%v: propagation %v, want Orphan", summarize([]core.Action{a}), opts.PropagationPolicy)
		}
	}
	if !containsPrefix(f.events(), "Normal Recreating") {
		t.Error("no Recreating event")
	}
	if c := apimeta.FindStatusCondition(statusOf(t, actions[0]).Conditions, linv1.ConditionProgressing); c == nil ||
		c.Reason != "Recreating" || !strings.Contains(c.Message, "demo-0, demo-1") {
		t.Errorf("Progressing condition = %+v, want Recreating naming both StatefulSets", c)
	}

	// A sync on a cache that still holds the deleted StatefulSets waits for
	// their delete events instead of deleting them again. (Its status write
	// comes from the fake cache, which the first write did not reach.)
	checkActions(t, f.rerun(inst, false), updateStatus)

	// A StatefulSet made from this very spec that still differs is reported,
	// never deleted again.
	f = newFixture(t)
	inst = newInstallation()
	inst.Spec.PodManagementPolicy = linv1.ParallelPodManagement
	f.seedInSync(inst)
	f.live.StatefulSets[0].Spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	actions = f.run(inst, false)
	checkActions(t, actions, updateStatus)
	if c := apimeta.FindStatusCondition(statusOf(t, actions[0]).Conditions, linv1.ConditionDegraded); c == nil || c.Reason != ReasonApplyFailed {
		t.Errorf("Degraded condition = %+v, want ApplyFailed", c)
	}
}

// containsPrefix reports whether any event starts with prefix.
func containsPrefix(events []string, prefix string) bool {
	for _, e := range events {
		if strings.HasPrefix(e, prefix) {
			return true
		}
	}
	return false
}
