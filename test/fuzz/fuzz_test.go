package fuzz

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/resources"
)

// clusterDomain is the operator's default.
const clusterDomain = "cluster.local"

// dryRun stores nothing: every Installation and child of the fuzzer is only
// checked, so any number of them can share names in one namespace.
var dryRun = []string{metav1.DryRunAll}

// FuzzRenderedChildrenAreAccepted maps the fuzz bytes onto an Installation
// and sends it to the API server as a dry run. For one the CRD's schema
// accepts, it renders the children from the object the server returned
// (defaults applied, as the operator's informer would see it), checks that
// rendering again, from a copy or after a JSON round trip, gives the same
// bytes, and that the API server accepts every child in a dry run. Only an
// InvalidSpec from the renderer, which the operator reports as such, may
// stand in for the children.
func FuzzRenderedChildrenAreAccepted(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		if refusal, why := check(t, data); refusal != accepted {
			t.Skipf("%s refuses it: %v", refusal, why)
		}
	})
}

// outcome says who refused an Installation, if anyone did.
type outcome string

// The outcomes of check.
const (
	accepted outcome = "nobody"
	schema   outcome = "the schema"
	renderer outcome = "the renderer"
)

// check runs the fuzz target's checks on the Installation data maps to, and
// returns who refused it and why, or accepted.
func check(t *testing.T, data []byte) (outcome, error) {
	t.Helper()
	ctx := context.Background()
	inst := newInstallation(metav1.NamespaceDefault, data)
	stored, err := linClient.LinV1().Installations(inst.Namespace).Create(ctx, inst, metav1.CreateOptions{DryRun: dryRun})
	if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
		return schema, err
	}
	if err != nil {
		t.Fatalf("creating the Installation: %v", err)
	}
	children, err := resources.NewChildren(stored, clusterDomain)
	if resources.IsInvalidSpec(err) {
		return renderer, err
	}
	if err != nil {
		t.Fatalf("rendering %s: %v", specJSON(stored), err)
	}
	checkDeterministic(t, stored, children)
	for _, o := range children.Objects() {
		if err := createDryRun(ctx, o); err != nil {
			t.Errorf("the API server refuses %T %s rendered from %s: %v", o, o.GetName(), specJSON(stored), err)
		}
	}
	return accepted, nil
}

// checkDeterministic renders inst again, from a deep copy and from a JSON
// round trip of it, and fails unless each rendering encodes to the same bytes
// as children.
func checkDeterministic(t *testing.T, inst *linv1.Installation, children *resources.Children) {
	t.Helper()
	want := encode(t, children)
	decoded := &linv1.Installation{}
	if err := json.Unmarshal(encode(t, inst), decoded); err != nil {
		t.Fatal(err)
	}
	for _, from := range []*linv1.Installation{inst.DeepCopy(), decoded, inst} {
		again, err := resources.NewChildren(from, clusterDomain)
		if err != nil {
			t.Fatalf("rendering again: %v", err)
		}
		if got := encode(t, again); !bytes.Equal(got, want) {
			t.Fatalf("rendering %s twice gave\n%s\nand\n%s", specJSON(inst), want, got)
		}
	}
}

// createDryRun sends a child to the API server as a dry-run create.
func createDryRun(ctx context.Context, o resources.Object) error {
	opts := metav1.CreateOptions{DryRun: dryRun}
	var err error
	switch o := o.(type) {
	case *corev1.ConfigMap:
		_, err = kubeClient.CoreV1().ConfigMaps(o.Namespace).Create(ctx, o, opts)
	case *corev1.Service:
		_, err = kubeClient.CoreV1().Services(o.Namespace).Create(ctx, o, opts)
	case *appsv1.StatefulSet:
		_, err = kubeClient.AppsV1().StatefulSets(o.Namespace).Create(ctx, o, opts)
	case *policyv1.PodDisruptionBudget:
		_, err = kubeClient.PolicyV1().PodDisruptionBudgets(o.Namespace).Create(ctx, o, opts)
	default:
		err = fmt.Errorf("no client for %T", o)
	}
	return err
}

// encode returns the JSON of v.
func encode(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// specJSON is the spec of inst, for failure messages.
func specJSON(inst *linv1.Installation) string {
	data, _ := json.Marshal(inst.Spec)
	return inst.Name + " " + string(data)
}
