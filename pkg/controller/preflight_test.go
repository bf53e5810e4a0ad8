package controller

import (
	"strings"
	"testing"

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

// refuseStatefulSets makes the fake API server refuse every StatefulSet, as
// the real one refuses a pod template it finds invalid.
func (f *fixture) refuseStatefulSets() {
	f.kubeClient.PrependReactor("create", "statefulsets", func(a core.Action) (bool, runtime.Object, error) {
		name := a.(core.CreateAction).GetObject().(metav1.Object).GetName()
		return true, nil, apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, name, field.ErrorList{
			field.Invalid(field.NewPath("spec", "template", "metadata", "labels"), "bad key", "name part must consist of alphanumeric characters"),
		})
	})
}

func TestSyncOfAChildTheAPIServerRefusesWritesNoChild(t *testing.T) {
	f := newFixture(t)
	inst := newInstallation()
	f.installations = append(f.installations, inst)
	f.controller = f.newController()
	f.refuseStatefulSets()

	// A refusal is permanent: sync reports it in status and returns nil.
	actions := f.rerun(inst, false)
	checkActions(t, actions, updateStatus)
	c := apimeta.FindStatusCondition(statusOf(t, actions[0]).Conditions, linv1.ConditionDegraded)
	if c == nil || c.Reason != ReasonApplyFailed || !strings.Contains(c.Message, "spec.template.metadata.labels") {
		t.Errorf("Degraded condition = %+v, want ApplyFailed naming the refused field", c)
	}
	if got := f.dryRuns(); len(got) != 8 {
		t.Errorf("dry runs %v, want one for each of the 8 children", got)
	}
	if ev := f.events(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning ApplyFailed") {
		t.Errorf("events = %q, want only the Warning ApplyFailed", ev)
	}
}

func TestSyncTriesWritesOnlyWhenItMakesMoreThanOne(t *testing.T) {
	f := newFixture(t)
	inst := newInstallation()
	live := f.seedInSync(inst)
	drifted := live.ConfigMaps[0].DeepCopy()
	drifted.Data = map[string]string{"app.conf": "drifted"}
	f.live.ConfigMaps[0] = drifted

	// One write is all or nothing by itself.
	checkActions(t, f.run(inst, false), updateConfig)
	if got := f.dryRuns(); len(got) != 0 {
		t.Errorf("dry runs %v for a lone write, want none", got)
	}

	// A config edit writes the ConfigMap and every shard: all are tried first.
	inst.Spec.Config = map[string]string{"app.conf": "level=debug\n"}
	inst.Generation = 2
	checkActions(t, f.run(inst, false), updateStatus, updateConfig, updateShard0, updateShard1)
	if got := f.dryRuns(); len(got) != 3 {
		t.Errorf("dry runs %v, want one for each of the 3 writes", got)
	}
}
