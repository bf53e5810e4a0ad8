package controller

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	core "k8s.io/client-go/testing"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
)

// dryRuns returns the dry runs among the actions of both clientsets since
// the last run.
func (f *fixture) dryRuns() []action {
	var out []core.Action
	for _, a := range f.kubeClient.Actions() {
		if isDryRun(a) {
			out = append(out, a)
		}
	}
	return summarize(out)
}

// refuse makes the fake API server refuse every create of resource (a dry
// run too), as the real one refuses a pod template or a label it finds
// invalid, naming path.
func (f *fixture) refuse(resource, kind, path string) {
	f.kubeClient.PrependReactor("create", resource, func(a core.Action) (bool, runtime.Object, error) {
		name := a.(core.CreateAction).GetObject().(metav1.Object).GetName()
		return true, nil, apierrors.NewInvalid(schema.GroupKind{Kind: kind}, name, field.ErrorList{
			field.Invalid(field.NewPath(strings.Split(path, ".")[0], strings.Split(path, ".")[1:]...), "bad key", "name part must consist of alphanumeric characters"),
		})
	})
}

func TestSyncOfAPodTemplateTheAPIServerRefusesWritesNoChild(t *testing.T) {
	f := newFixture(t)
	inst := newInstallation()
	f.installations = append(f.installations, inst)
	f.controller = f.newController()
	f.refuse("statefulsets", "StatefulSet", "spec.template.metadata.labels")

	// The StatefulSet of shard 0 leads, with no dry run: once it is refused
	// nothing else is sent. A refusal is permanent: sync reports it in
	// status and returns nil.
	actions := f.rerun(inst, false)
	checkActions(t, actions, updateStatus, createShard0)
	c := apimeta.FindStatusCondition(statusOf(t, actions[0]).Conditions, linv1.ConditionDegraded)
	if c == nil || c.Reason != ReasonApplyFailed || !strings.Contains(c.Message, "spec.template.metadata.labels") {
		t.Errorf("Degraded condition = %+v, want ApplyFailed naming the refused field", c)
	}
	if got := f.dryRuns(); len(got) != 0 {
		t.Errorf("dry runs %v, want none", got)
	}
	if n := len(f.stored().Objects()); n != 0 {
		t.Errorf("%d children made, want none", n)
	}
	if ev := f.events(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning ApplyFailed") {
		t.Errorf("events = %q, want only the Warning ApplyFailed", ev)
	}
}

func TestSyncWritesTheStatefulSetWithTheNewTemplateFirstAndTriesNothing(t *testing.T) {
	f := newFixture(t)
	inst := newInstallation()
	f.seedInSync(inst)

	// A config edit writes the ConfigMap and every shard: shard 0, which
	// gets the new pod template, leads; shard 1 keeps its template for now
	// and comes last, after the ConfigMap.
	inst.Spec.Config = map[string]string{"app.conf": "level=debug\n"}
	inst.Generation = 2
	checkActions(t, f.run(inst, false), updateStatus, updateShard0, updateConfig, updateShard1)
	if got := f.dryRuns(); len(got) != 0 {
		t.Errorf("dry runs %v, want none", got)
	}

	// Any StatefulSet leads, even when a ConfigMap comes before it.
	f = newFixture(t)
	inst = newInstallation()
	f.seedInSync(inst)
	f.live.ConfigMaps[0].Data["app.conf"] = "drifted"
	f.live.StatefulSets[1].Spec.Template.Spec.Containers[0].Image = "example.com/other:6"
	checkActions(t, f.run(inst, false)[1:], updateShard1, updateConfig)
	if got := f.dryRuns(); len(got) != 0 {
		t.Errorf("dry runs %v, want none", got)
	}
}

func TestSyncTriesTheStatefulSetsWhenAServiceWithMetadataFromTheSpecLeads(t *testing.T) {
	for _, refused := range []bool{false, true} {
		f := newFixture(t)
		inst := newInstallation()
		inst.Spec.Service.Labels = map[string]string{"team": "a"}
		f.installations = append(f.installations, inst)
		f.controller = f.newController()
		if refused {
			f.refuse("statefulsets", "StatefulSet", "spec.template.metadata.labels")
		}

		// The client Service holds labels the schema does not check, and
		// comes before the StatefulSets: it leads, and shard 0's
		// StatefulSet, which holds other such fields, is tried once as a
		// dry run before it. The headless Service holds none.
		actions := f.rerun(inst, false)
		if got := f.dryRuns(); len(got) != 1 || got[0] != createShard0 {
			t.Errorf("refused %v: dry runs %v, want one of shard 0", refused, got)
		}
		if !refused {
			checkActions(t, actions, updateStatus, createClientSvc, createConfig, createTopology, createHeadless,
				createShard0, createShard1, createBudget0, createBudget1)
			continue
		}
		checkActions(t, actions, updateStatus)
		if n := len(f.stored().Objects()); n != 0 {
			t.Errorf("%d children made after the trial was refused, want none", n)
		}
		c := apimeta.FindStatusCondition(statusOf(t, actions[0]).Conditions, linv1.ConditionDegraded)
		if c == nil || c.Reason != ReasonApplyFailed || !strings.Contains(c.Message, "StatefulSet demo-0") {
			t.Errorf("Degraded condition = %+v, want ApplyFailed naming the StatefulSet", c)
		}
	}
}

func TestSyncOfALoneServiceWriteTriesNothing(t *testing.T) {
	f := newFixture(t)
	inst := newInstallation()
	f.seedInSync(inst)

	// A NodePort Service leads when it is the only write that can be refused.
	inst.Spec.Service.Type = corev1.ServiceTypeNodePort
	inst.Generation = 2
	checkActions(t, f.run(inst, false), updateStatus, action{"update", "services", "", "demo"})
	if got := f.dryRuns(); len(got) != 0 {
		t.Errorf("dry runs %v, want none", got)
	}
}
