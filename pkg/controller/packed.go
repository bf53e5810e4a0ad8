package controller

import (
	"errors"
	"fmt"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// packed is how the informers' caches hold a child: the few fields of its
// metadata that the event handlers and the index read (name, namespace,
// UID, resourceVersion, owner references, deletion time, and the labels of
// one that no owner controls; a watch's bookmark keeps its end-of-initial-
// events mark for the reflector), and the whole object as protobuf, which
// packedLister decodes on each read. Decoded, a child takes 4 to 5 times
// the memory of its protobuf: every label, annotation, selector and data map
// is a Go map of at least 300 bytes, and a StatefulSet's struct alone is 1.3
// KB. A sync reads each of its children once or twice, and decoding one
// costs about as much as the deep copy that a sync makes of it to merge.
type packed struct {
	metav1.ObjectMeta
	raw []byte
}

// packed is a runtime.Object with object metadata, as client-go's tools
// expect what a transform returns to be: the cache mutation detector keeps a
// DeepCopyObject of each and compares, and the watch-list consistency
// detector compares the cache with a fresh LIST passed through the same
// transform.
var _ interface {
	runtime.Object
	metav1.Object
} = (*packed)(nil)

// GetObjectKind implements runtime.Object. A packed child carries no kind,
// as the objects that informers decode do not: its informer says which.
func (p *packed) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object: the metadata and the bytes are
// copied, so that a change to the copy leaves the cache as it is.
func (p *packed) DeepCopyObject() runtime.Object {
	c := &packed{raw: slices.Clone(p.raw)}
	p.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return c
}

// message is a kind of child as its generated protobuf code handles it.
type message interface {
	metav1.Object
	Marshal() ([]byte, error)
}

// pack returns o as the cache holds it (see packRaw): the transform's way,
// for a child that a typed client decoded.
func pack(o message, keepManagedFields bool) (*packed, error) {
	raw, err := o.Marshal()
	if err != nil {
		return nil, fmt.Errorf("packing %s/%s: %w", o.GetNamespace(), o.GetName(), err)
	}
	return packRaw(raw, keepManagedFields)
}

// packRaw returns the child whose protobuf message is raw (the object
// itself, with no envelope) as the cache holds it, decoding its metadata
// alone: field 1 of the message of every Kubernetes kind. The rest of the
// message is copied as it is; the metadata is written again without
// managedFields (unless keepManagedFields), first, as the generated code
// writes it. kubectl's last-applied copy stays: an update of the child
// starts from the cached copy, and must keep what a user applied. raw is not
// kept.
func packRaw(raw []byte, keepManagedFields bool) (*packed, error) {
	meta, metaStart, metaEnd, err := findMeta(raw)
	if err != nil {
		return nil, err
	}
	if !keepManagedFields {
		meta.ManagedFields = nil
	}
	size := meta.Size()
	out := make([]byte, 0, protowire.SizeTag(1)+protowire.SizeBytes(size)+len(raw)-(metaEnd-metaStart))
	out = protowire.AppendTag(out, 1, protowire.BytesType)
	out = protowire.AppendVarint(out, uint64(size))
	out = out[:len(out)+size]
	if _, err := meta.MarshalToSizedBuffer(out[len(out)-size:]); err != nil {
		return nil, fmt.Errorf("packing %s/%s: %w", meta.Namespace, meta.Name, err)
	}
	out = append(append(out, raw[:metaStart]...), raw[metaEnd:]...)
	p := &packed{raw: out, ObjectMeta: metav1.ObjectMeta{
		Name:              meta.Name,
		Namespace:         share(meta.Namespace),
		UID:               meta.UID,
		ResourceVersion:   meta.ResourceVersion,
		DeletionTimestamp: meta.DeletionTimestamp,
		OwnerReferences:   meta.OwnerReferences,
	}}
	shareOwners(p.OwnerReferences)
	if metav1.GetControllerOf(&meta) == nil {
		// handleChild wakes the Installation that its label names.
		p.Labels = meta.Labels
	}
	if v, ok := meta.Annotations[metav1.InitialEventsAnnotationKey]; ok {
		// The bookmark that ends a watch's initial events, which the
		// reflector knows by this mark.
		p.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: v}
	}
	return p, nil
}

// findMeta decodes the metadata of a child's protobuf message, field 1, and
// returns it with where its field begins and ends in raw.
func findMeta(raw []byte) (meta metav1.ObjectMeta, metaStart, metaEnd int, err error) {
	metaStart, metaEnd = -1, -1
	for off := 0; off < len(raw); {
		num, typ, n := protowire.ConsumeTag(raw[off:])
		if n < 0 {
			return meta, 0, 0, fmt.Errorf("unpacking a child: %w", protowire.ParseError(n))
		}
		start := off
		off += n
		n = protowire.ConsumeFieldValue(num, typ, raw[off:])
		if n < 0 {
			return meta, 0, 0, fmt.Errorf("unpacking a child: %w", protowire.ParseError(n))
		}
		if num == 1 && typ == protowire.BytesType {
			if metaStart >= 0 {
				// Protobuf would merge the two; the API server never sends that.
				return meta, 0, 0, errors.New("unpacking a child: it has its metadata twice")
			}
			v, _ := protowire.ConsumeBytes(raw[off:])
			if err := meta.Unmarshal(v); err != nil {
				return meta, 0, 0, fmt.Errorf("unpacking a child's metadata: %w", err)
			}
			metaStart, metaEnd = start, off+n
		}
		off += n
	}
	if metaStart < 0 {
		return meta, 0, 0, errors.New("unpacking a child: it has no metadata")
	}
	return meta, metaStart, metaEnd, nil
}

// decodable is a pointer to a kind of child, which its generated protobuf
// code decodes.
type decodable[T any] interface {
	*T
	Unmarshal([]byte) error
}

// packedLister reads one kind of child from its informer's cache.
type packedLister[T any, P decodable[T]] struct {
	indexer  cache.Indexer
	resource schema.GroupResource
}

// newPackedLister returns the lister of an informer's cache of packed children.
func newPackedLister[T any, P decodable[T]](informer cache.SharedIndexInformer, resource schema.GroupResource) packedLister[T, P] {
	return packedLister[T, P]{indexer: informer.GetIndexer(), resource: resource}
}

// Get returns a decoded copy of the cached child, or a NotFound error.
func (l packedLister[T, P]) Get(namespace, name string) (P, error) {
	obj, exists, err := l.indexer.GetByKey(cache.ObjectName{Namespace: namespace, Name: name}.String())
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, apierrors.NewNotFound(l.resource, name)
	}
	return l.unpack(obj)
}

// ByController returns decoded copies of the cached children whose
// controller has the UID given (see byController).
func (l packedLister[T, P]) ByController(uid string) ([]P, error) {
	objs, err := l.indexer.ByIndex(byController, uid)
	if err != nil {
		return nil, err
	}
	out := make([]P, 0, len(objs))
	for _, obj := range objs {
		o, err := l.unpack(obj)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

// unpack decodes a cached child.
func (l packedLister[T, P]) unpack(obj any) (P, error) {
	p, ok := obj.(*packed)
	if !ok {
		return nil, fmt.Errorf("the cache of %s holds a %T", l.resource, obj)
	}
	o := P(new(T))
	if err := o.Unmarshal(p.raw); err != nil {
		return nil, fmt.Errorf("unpacking %s %s/%s: %w", l.resource, p.Namespace, p.Name, err)
	}
	return o, nil
}

// The listers of the four kinds of child.
type (
	configMapLister   = packedLister[corev1.ConfigMap, *corev1.ConfigMap]
	serviceLister     = packedLister[corev1.Service, *corev1.Service]
	statefulSetLister = packedLister[appsv1.StatefulSet, *appsv1.StatefulSet]
	budgetLister      = packedLister[policyv1.PodDisruptionBudget, *policyv1.PodDisruptionBudget]
)
