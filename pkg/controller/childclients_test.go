package controller

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
)

// served encodes obj as the API server sends it: protobuf, in its envelope.
func served(t *testing.T, obj runtime.Object) []byte {
	t.Helper()
	obj = obj.DeepCopyObject()
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil {
		t.Fatal(err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvks[0])
	var b bytes.Buffer
	if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(obj, &b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// decodeServed decodes data as the child clients do.
func decodeServed(t *testing.T, data []byte) runtime.Object {
	t.Helper()
	s := packingSerializer{Serializer: protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)}
	obj, _, err := s.Decode(data, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

func TestTheChildClientsPackWhatTheyDecodeAsTheTransformDoes(t *testing.T) {
	_, children := loadServed(t)
	for _, obj := range children.Objects() {
		in := withWhatIsDropped(obj)
		name := in.(metav1.Object).GetName()
		want, err := Transform(in.DeepCopyObject())
		if err != nil {
			t.Fatal(err)
		}
		got, ok := decodeServed(t, served(t, in)).(*packed)
		if !ok {
			t.Fatalf("%s: decoded as %T, want *packed", name, got)
		}
		if w := want.(*packed); !bytes.Equal(got.raw, w.raw) || !equality.Semantic.DeepEqual(got.ObjectMeta, w.ObjectMeta) {
			t.Errorf("%s: decoded\n%+v\nwant, as the transform packs it,\n%+v", name, got, w)
		}
	}
}

func TestTheChildClientsDecodeListsBookmarksAndErrors(t *testing.T) {
	_, children := loadServed(t)
	list := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "7", Continue: "next"}}
	for _, cm := range children.ConfigMaps {
		list.Items = append(list.Items, *cm)
	}
	l, ok := decodeServed(t, served(t, list)).(*packedList)
	if !ok || l.ResourceVersion != "7" || l.Continue != "next" || len(l.Items) != len(list.Items) {
		t.Fatalf("list decoded as %+v, want resourceVersion 7, continue next and %d items", l, len(list.Items))
	}
	for i, p := range l.Items {
		if p.Name != list.Items[i].Name || p.UID != list.Items[i].UID {
			t.Errorf("item %d decoded as %s (%s), want %s (%s)", i, p.Name, p.UID, list.Items[i].Name, list.Items[i].UID)
		}
	}

	// The reflector ends a watch's initial events on this bookmark.
	bookmark := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "9",
		Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	if p, ok := decodeServed(t, served(t, bookmark)).(*packed); !ok || p.ResourceVersion != "9" ||
		p.Annotations[metav1.InitialEventsAnnotationKey] != "true" {
		t.Errorf("bookmark decoded as %+v, want resourceVersion 9 and the end of initial events", p)
	}

	status := &metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired}
	if s, ok := decodeServed(t, served(t, status)).(*metav1.Status); !ok || s.Code != 410 || s.Reason != metav1.StatusReasonExpired {
		t.Errorf("status decoded as %+v, want the 410 Expired sent", s)
	}

	s := packingSerializer{Serializer: protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)}
	truncated := served(t, children.StatefulSets[0])
	if obj, _, err := s.Decode(truncated[:len(truncated)-3], nil, nil); err == nil {
		t.Errorf("a truncated StatefulSet decoded as %+v, want an error", obj)
	}
}

func TestAChildWithoutOrWithTwiceItsMetadataIsRefused(t *testing.T) {
	_, children := loadServed(t)
	raw, err := children.ConfigMaps[0].Marshal()
	if err != nil {
		t.Fatal(err)
	}
	meta, err := children.ConfigMaps[0].ObjectMeta.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	metaField := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), meta)
	withoutMeta := raw[len(metaField):]
	for name, b := range map[string][]byte{
		"without metadata":    withoutMeta,
		"with metadata twice": append(append([]byte{}, metaField...), raw...),
	} {
		if p, err := packRaw(b, false); err == nil {
			t.Errorf("a ConfigMap %s packed as %+v, want an error", name, p)
		}
	}
	if _, err := packRaw(raw, false); err != nil {
		t.Errorf("the ConfigMap itself: %v", err)
	}
}
