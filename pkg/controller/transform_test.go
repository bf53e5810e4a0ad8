package controller

import (
	"testing"
	"unsafe"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// bytesOf is where the bytes of s are.
func bytesOf(s string) *byte { return unsafe.StringData(s) }

// unpacked decodes what the transform cached for a child, as the listers do.
func unpacked(t *testing.T, cached any, like runtime.Object) metav1.Object {
	t.Helper()
	var got metav1.Object
	var err error
	switch like.(type) {
	case *corev1.ConfigMap:
		got, err = configMapLister{resource: corev1.Resource("configmaps")}.unpack(cached)
	case *corev1.Service:
		got, err = serviceLister{resource: corev1.Resource("services")}.unpack(cached)
	case *appsv1.StatefulSet:
		got, err = statefulSetLister{resource: appsv1.Resource("statefulsets")}.unpack(cached)
	case *policyv1.PodDisruptionBudget:
		got, err = budgetLister{resource: policyv1.Resource("poddisruptionbudgets")}.unpack(cached)
	default:
		return cached.(metav1.Object)
	}
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// withWhatIsDropped returns a copy of obj with managedFields, which the
// caches drop, and kubectl's last-applied copy, which they drop from
// Installations only.
func withWhatIsDropped(obj runtime.Object) runtime.Object {
	c := obj.DeepCopyObject()
	m := c.(metav1.Object)
	m.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl"}})
	annotations := map[string]string{lastApplied: "{}"}
	for k, v := range m.GetAnnotations() {
		annotations[k] = v
	}
	m.SetAnnotations(annotations)
	return c
}

func TestTransformDropsWhatIsNeverReadAndPacksChildren(t *testing.T) {
	inst, served := loadServed(t)
	for _, obj := range append(served.Objects(), inst) {
		want := obj.DeepCopyObject().(metav1.Object)
		applied := ""
		if obj != inst {
			// An update of a child starts from the cached copy: it keeps
			// what a user applied.
			want = withWhatIsDropped(obj).(metav1.Object)
			want.SetManagedFields(nil)
			applied = "{}"
		}
		cached, err := Transform(withWhatIsDropped(obj))
		if err != nil {
			t.Fatal(err)
		}
		if _, isPacked := cached.(*packed); isPacked == (obj == inst) {
			t.Errorf("%s: cached as %T", want.GetName(), cached)
		}
		got := unpacked(t, cached, obj)
		if len(got.GetManagedFields()) > 0 || got.GetAnnotations()[lastApplied] != applied {
			t.Errorf("%s: managedFields %v, annotations %v; want no managedFields and %s %q", want.GetName(),
				got.GetManagedFields(), got.GetAnnotations(), lastApplied, applied)
		}
		if !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("%s changed beyond what is dropped:\n got %+v\nwant %+v", want.GetName(), got, want)
		}
	}
}

func TestPackedChildrenKeepWhatTheHandlersRead(t *testing.T) {
	_, served := loadServed(t)
	ours := served.StatefulSets[0].DeepCopy()
	ours.UID, ours.ResourceVersion, ours.DeletionTimestamp = "uid-1", "42", &metav1.Time{}
	foreign := ours.DeepCopy()
	foreign.OwnerReferences = nil
	for _, o := range []*appsv1.StatefulSet{ours, foreign} {
		cached, err := Transform(o.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		p := cached.(*packed)
		key, err := cache.MetaNamespaceKeyFunc(p)
		if err != nil || key != o.Namespace+"/"+o.Name {
			t.Errorf("key %q (%v), want %s/%s", key, err, o.Namespace, o.Name)
		}
		if p.UID != o.UID || p.ResourceVersion != o.ResourceVersion || p.DeletionTimestamp == nil ||
			!equality.Semantic.DeepEqual(p.OwnerReferences, o.OwnerReferences) {
			t.Errorf("packed meta %+v, want the UID, resourceVersion, deletion time and owners of %+v", p.ObjectMeta, o.ObjectMeta)
		}
		// handleChild reads the labels of one that no Installation controls.
		if wantLabels := o.OwnerReferences == nil; (p.Labels != nil) != wantLabels {
			t.Errorf("packed labels %v; want them only without a controller", p.Labels)
		}
	}
}

func TestTransformSharesWords(t *testing.T) {
	inst, served := loadServed(t)
	// Two Installations decoded apart share the bytes of their label
	// keys and values and of their namespace.
	a, b := inst.DeepCopy(), inst.DeepCopy()
	a.Labels = map[string]string{"team": "db"}
	b.Labels = map[string]string{string([]byte("team")): string([]byte("db"))}
	b.Namespace = string([]byte(a.Namespace))
	// Two packed children share their owner's kind and UID and their namespace.
	sa, sb := served.StatefulSets[0].DeepCopy(), served.StatefulSets[0].DeepCopy()
	sb.OwnerReferences[0].Kind = string([]byte(sa.OwnerReferences[0].Kind))
	sb.OwnerReferences[0].UID = types.UID([]byte(sa.OwnerReferences[0].UID))
	sb.Namespace = string([]byte(sa.Namespace))
	var cached []any
	for _, o := range []any{a, b, sa, sb} {
		c, err := Transform(o)
		if err != nil {
			t.Fatal(err)
		}
		cached = append(cached, c)
	}
	for k := range b.Labels {
		for ka := range a.Labels {
			if bytesOf(k) != bytesOf(ka) || bytesOf(a.Labels[ka]) != bytesOf(b.Labels[k]) {
				t.Errorf("the label %q of two Installations is held twice", k)
			}
		}
	}
	if bytesOf(a.Namespace) != bytesOf(b.Namespace) {
		t.Error("the namespace of two Installations is held twice")
	}
	pa, pb := cached[2].(*packed), cached[3].(*packed)
	ra, rb := pa.OwnerReferences[0], pb.OwnerReferences[0]
	if bytesOf(ra.Kind) != bytesOf(rb.Kind) || bytesOf(string(ra.UID)) != bytesOf(string(rb.UID)) || bytesOf(pa.Namespace) != bytesOf(pb.Namespace) {
		t.Error("the owner's kind or UID, or the namespace, of two packed StatefulSets is held twice")
	}
}
