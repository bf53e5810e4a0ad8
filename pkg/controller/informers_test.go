package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"lin.dev/lin-operator/pkg/client/clientset/versioned/fake"
	"lin.dev/lin-operator/pkg/resources"
)

func TestInformersFilterAndStripUnlessToldNotTo(t *testing.T) {
	managedFields := []metav1.ManagedFieldsEntry{{Manager: "someone", Operation: metav1.ManagedFieldsOperationUpdate}}
	objects := []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Name: "ours", Namespace: "ns", ManagedFields: managedFields,
			Labels: map[string]string{resources.LabelManagedBy: resources.ManagedByValue}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: "ns", ManagedFields: managedFields}},
	}
	for _, tc := range []struct {
		name              string
		opts              InformerOptions
		wantCached        int
		wantManagedFields bool
	}{
		{name: "defaults", opts: InformerOptions{}, wantCached: 1},
		{name: "keep managedFields", opts: InformerOptions{KeepManagedFields: true}, wantCached: 1, wantManagedFields: true},
		{name: "watch all children", opts: InformerOptions{WatchAllChildren: true}, wantCached: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kubeClient := k8sfake.NewClientset(objects[0], objects[1])
			inf := NewInformers(kubeClient, fake.NewClientset(), tc.opts)
			informer := inf.Kube[metav1.NamespaceAll].Core().V1().ConfigMaps().Informer()
			lister := newPackedLister[corev1.ConfigMap](informer, corev1.Resource("configmaps"))
			inf.Start(t.Context())
			t.Cleanup(inf.Shutdown)
			inf.Kube[metav1.NamespaceAll].WaitForCacheSync(t.Context().Done())

			keys := informer.GetIndexer().ListKeys()
			if len(keys) != tc.wantCached {
				t.Fatalf("cached %d ConfigMaps (%v), want %d", len(keys), keys, tc.wantCached)
			}
			for _, key := range keys {
				ns, name, _ := cache.SplitMetaNamespaceKey(key)
				cm, err := lister.Get(ns, name)
				if err != nil {
					t.Fatal(err)
				}
				if got := len(cm.ManagedFields) > 0; got != tc.wantManagedFields {
					t.Errorf("%s: managedFields cached = %v, want %v", cm.Name, got, tc.wantManagedFields)
				}
			}
		})
	}
}
