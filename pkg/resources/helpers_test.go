package resources_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/resources"
)

// clusterDomain is the cluster domain every test renders with.
const clusterDomain = "cluster.local"

// newInstallation is the Installation every test starts from: demo in ns with
// an image and one port, everything else unset, as a test or an older CRD may
// leave it. Each mod then changes it in order.
func newInstallation(mods ...func(*linv1.Installation)) *linv1.Installation {
	inst := &linv1.Installation{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "ns", UID: "uid-1"},
		Spec: linv1.InstallationSpec{
			Image: "registry.example.com/app:1.0",
			Ports: []linv1.InstallationPort{{Name: "client", ContainerPort: 9000}},
		},
	}
	for _, mod := range mods {
		mod(inst)
	}
	return inst
}

// render renders every child of inst and fails the test when it cannot.
func render(t *testing.T, inst *linv1.Installation) *resources.Children {
	t.Helper()
	c, err := resources.NewChildren(inst, clusterDomain)
	if err != nil {
		t.Fatalf("NewChildren: %v", err)
	}
	return c
}
