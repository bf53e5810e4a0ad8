package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"lin.dev/lin-operator/pkg/resources"
)

func TestHandleChildResolvesTheOwnerByGroupKindAndUID(t *testing.T) {
	inst := newInstallation()
	owned := func(uid types.UID, kind string, apiVersion ...string) *corev1.ConfigMap {
		ref := resources.OwnerReference(inst)
		ref.UID, ref.Kind = uid, kind
		if len(apiVersion) > 0 {
			ref.APIVersion = apiVersion[0]
		}
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "demo-config", Namespace: "ns",
			OwnerReferences: []metav1.OwnerReference{ref}}}
	}
	labelled := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns",
		Labels: map[string]string{resources.LabelInstallation: "demo"}}}
	for _, tc := range []struct {
		name string
		obj  any
		want int
	}{
		{"owned", owned(inst.UID, "Installation"), 1},
		{"tombstone of an owned child", cache.DeletedFinalStateUnknown{Key: "ns/demo-config", Obj: owned(inst.UID, "Installation")}, 1},
		{"owner of the same name but another UID", owned("uid-old", "Installation"), 0},
		{"owner of another kind", owned(inst.UID, "Deployment"), 0},
		{"owner of another version of the group", owned(inst.UID, "Installation", "lin.dev/v2"), 1},
		{"owner of another group", owned(inst.UID, "Installation", "example.com/v1"), 0},
		{"no owner, the installation label", labelled, 1},
		{"not an object", "garbage", 0},
		{"tombstone of not an object", cache.DeletedFinalStateUnknown{Key: "ns/x", Obj: 42}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.installations = append(f.installations, inst)
			c := f.newController()
			c.handleChild(tc.obj)
			if got := c.queue.Len(); got != tc.want {
				t.Errorf("queued %d, want %d", got, tc.want)
			}
		})
	}
}

func TestChildUpdateWithTheSameResourceVersionIsSkipped(t *testing.T) {
	a := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: "7"}}
	b := a.DeepCopy()
	if !sameResourceVersion(a, b) {
		t.Error("same ResourceVersion not seen as same")
	}
	b.ResourceVersion = "8"
	if sameResourceVersion(a, b) || sameResourceVersion("x", "x") {
		t.Error("different ResourceVersions, or non-objects, seen as same")
	}
}
