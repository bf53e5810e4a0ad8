package controller

import (
	"testing"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"lin.dev/lin-operator/pkg/resources"
)

// bytesOf is where the bytes of s are.
func bytesOf(s string) *byte { return unsafe.StringData(s) }

// keyBytes is where the bytes of the key k of m are.
func keyBytes(m map[string]string, k string) *byte {
	for key := range m {
		if key == k {
			return bytesOf(key)
		}
	}
	return nil
}

func TestTransformDropsWhatIsNeverReadAndSharesWords(t *testing.T) {
	inst, served := loadServed(t)
	for _, obj := range append(served.Objects(), inst) {
		// As decoded from the wire: a copy of every string of its own.
		want := obj.DeepCopyObject().(metav1.Object)
		got := obj.DeepCopyObject().(metav1.Object)
		got.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl"}})
		got.SetAnnotations(map[string]string{lastApplied: "{}"})
		if len(want.GetAnnotations()) > 0 {
			a := got.GetAnnotations()
			for k, v := range want.GetAnnotations() {
				a[k] = string([]byte(v))
			}
		}
		if _, err := Transform(got); err != nil {
			t.Fatal(err)
		}
		if len(got.GetManagedFields()) > 0 || got.GetAnnotations()[lastApplied] != "" {
			t.Errorf("%s: managedFields %v, annotations %v; want neither managedFields nor %s", want.GetName(),
				got.GetManagedFields(), got.GetAnnotations(), lastApplied)
		}
		if !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("%s changed beyond what is dropped:\n got %+v\nwant %+v", want.GetName(), got, want)
		}
	}

	// Two objects decoded apart share the bytes of their label keys and
	// values, of their owner's kind and UID, and of their namespace.
	a, b := served.StatefulSets[0].DeepCopy(), served.StatefulSets[0].DeepCopy()
	b.Labels = map[string]string{}
	for k, v := range a.Labels {
		b.Labels[string([]byte(k))] = string([]byte(v))
	}
	b.OwnerReferences[0].Kind = string([]byte(a.OwnerReferences[0].Kind))
	b.OwnerReferences[0].UID = types.UID([]byte(a.OwnerReferences[0].UID))
	b.Namespace = string([]byte(a.Namespace))
	for _, o := range []any{a, b} {
		if _, err := Transform(o); err != nil {
			t.Fatal(err)
		}
	}
	for k := range b.Labels {
		if bytesOf(k) != keyBytes(a.Labels, k) {
			t.Errorf("the label key %q of two StatefulSets is held twice", k)
		}
	}
	for _, k := range []string{resources.LabelManagedBy, resources.LabelInstance} {
		if bytesOf(a.Labels[k]) != bytesOf(b.Labels[k]) {
			t.Errorf("the value of the label %s of two StatefulSets is held twice", k)
		}
	}
	ra, rb := a.OwnerReferences[0], b.OwnerReferences[0]
	if bytesOf(ra.Kind) != bytesOf(rb.Kind) || bytesOf(string(ra.UID)) != bytesOf(string(rb.UID)) || bytesOf(a.Namespace) != bytesOf(b.Namespace) {
		t.Error("the owner's kind or UID, or the namespace, of two StatefulSets is held twice")
	}
}
