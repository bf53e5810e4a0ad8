package harness

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
)

// namespaces numbers the namespaces made by this process.
var namespaces atomic.Int64

// Namespace creates a namespace of its own for a test and deletes it when the
// test ends.
func Namespace(t testing.TB, client kubernetes.Interface) string {
	t.Helper()
	name := fmt.Sprintf("test-%d", namespaces.Add(1))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := client.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = client.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

// NewInstallation returns a small valid Installation: one shard of one pod
// with one port and one config file.
func NewInstallation(namespace, name string) *linv1.Installation {
	return &linv1.Installation{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: linv1.InstallationSpec{
			Image:    "example.com/app:1",
			Replicas: ptr.To[int32](1),
			Shards:   ptr.To[int32](1),
			Ports:    []linv1.InstallationPort{{Name: "http", ContainerPort: 8080}},
			Config:   map[string]string{"app.conf": "level=info\n"},
		},
	}
}
