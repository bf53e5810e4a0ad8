package integration

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"lin.dev/lin-operator/pkg/resources"
	"lin.dev/lin-operator/test/harness"
)

// updateServed rewrites the controller's testdata of served objects:
// go test ./test/integration -run TestServedObjects -update-served
var updateServed = flag.Bool("update-served", false, "rewrite pkg/controller/testdata/served from the API server")

// servedDir holds an Installation and its children as the API server stores
// them, defaults applied, for the controller's unit tests: a sync of them
// must make no request, which a fixture rendered by the builders alone
// cannot show.
var servedDir = filepath.Join("..", "..", "pkg", "controller", "testdata", "served")

// TestServedObjectsInTestdataAreCurrent stores an Installation and the
// children it renders on the API server, reads them back, and compares them,
// without what differs from run to run, with those committed in servedDir.
func TestServedObjectsInTestdataAreCurrent(t *testing.T) {
	ctx := context.Background()
	const ns = "ns" // the unit fixtures' namespace: it is in the rendered host names
	if _, err := testEnv.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = testEnv.Client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}) })
	inst := harness.NewInstallation(ns, "demo")
	inst.Spec.Replicas, inst.Spec.Shards = ptr.To[int32](2), ptr.To[int32](2)
	inst = create(t, inst)
	// The children's owner references name the unit fixtures' UID.
	inst.UID = "uid-demo"
	rendered, err := resources.NewChildren(inst, "cluster.local")
	if err != nil {
		t.Fatal(err)
	}
	var served resources.Children
	for _, cm := range rendered.ConfigMaps {
		got, err := testEnv.Client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		served.ConfigMaps = append(served.ConfigMaps, got)
	}
	for _, svc := range rendered.Services {
		got, err := testEnv.Client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Spec.ClusterIP != corev1.ClusterIPNone {
			// Allocated anew each time.
			got.Spec.ClusterIP, got.Spec.ClusterIPs = "10.96.0.100", []string{"10.96.0.100"}
		}
		served.Services = append(served.Services, got)
	}
	for _, sts := range rendered.StatefulSets {
		got, err := testEnv.Client.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		served.StatefulSets = append(served.StatefulSets, got)
	}
	for _, pdb := range rendered.PodDisruptionBudgets {
		got, err := testEnv.Client.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		served.PodDisruptionBudgets = append(served.PodDisruptionBudgets, got)
	}
	for _, o := range served.Objects() {
		scrub(o, types.UID(fmt.Sprintf("uid-%T-%s", o, o.GetName())))
	}
	scrub(inst, inst.UID)
	compareServed(t, "installation.yaml", inst)
	compareServed(t, "children.yaml", &served)
}

// scrub clears what the API server sets anew for each object and gives it
// uid: the unit fixtures name a child's UID after its kind and name.
func scrub(o metav1.Object, uid types.UID) {
	o.SetUID(uid)
	o.SetResourceVersion("")
	o.SetCreationTimestamp(metav1.Time{})
	o.SetManagedFields(nil)
}

// compareServed compares v, as YAML, with the file of servedDir, or writes it
// there under -update-served.
func compareServed(t *testing.T, file string, v any) {
	t.Helper()
	got, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(servedDir, file)
	if *updateServed {
		if err := os.MkdirAll(servedDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./test/integration -run TestServedObjects -update-served to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not what the API server serves now (run go test ./test/integration -run TestServedObjects -update-served):\n%s", path, got)
	}
}
