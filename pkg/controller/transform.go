package controller

import (
	"unique"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// lastApplied is the annotation in which `kubectl apply` keeps a whole copy
// of what it applied: often the largest part of an Installation, and never
// read by the operator.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// Transform is the informers' transform. It drops from each object what the
// operator never reads: managedFields, an Installation's kubectl
// last-applied copy (a status update of an Installation keeps the stored
// metadata whatever the copy sent carries, so nothing is lost), and the kind
// and apiVersion that only the items of a LIST carry. It packs each child
// (see packed), keeping a child's last-applied copy, which an update of the
// child, made from the cached copy, must keep; it slims each pod (see
// slimPod); and it makes the strings that Installations repeat share one
// copy: each decoded object holds its own copy of every string. Cached
// objects are never changed, so sharing is safe.
func Transform(obj any) (any, error) {
	return transform(obj, false)
}

// transform is Transform, keeping managedFields when keepManagedFields is set.
func transform(obj any, keepManagedFields bool) (any, error) {
	if p, ok := obj.(*packed); ok {
		// Packed as it was decoded (see ChildClients).
		return p, nil
	}
	m, err := apimeta.Accessor(obj)
	if err != nil {
		// A tombstone, whose object went through the transform already.
		return obj, nil
	}
	if !keepManagedFields {
		m.SetManagedFields(nil)
	}
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		return pack(o, keepManagedFields)
	case *corev1.Service:
		return pack(o, keepManagedFields)
	case *appsv1.StatefulSet:
		return pack(o, keepManagedFields)
	case *policyv1.PodDisruptionBudget:
		return pack(o, keepManagedFields)
	case *corev1.Pod:
		return slimPod(o), nil
	}
	delete(m.GetAnnotations(), lastApplied)
	// The items of a LIST of a custom resource keep their kind and
	// apiVersion, the objects of a watch do not: the cache holds one shape,
	// whichever way an object came, so that it matches etcd's as the
	// watch-list consistency detector sees it. Nothing reads the kind of a
	// cached Installation; its informer says what it is.
	if o, ok := obj.(runtime.Object); ok {
		o.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	}
	m.SetNamespace(share(m.GetNamespace()))
	shareWords(m.GetLabels(), true)
	shareWords(m.GetAnnotations(), false)
	shareOwners(m.GetOwnerReferences())
	return obj, nil
}

// transformFunc is the informers' transform for opts: Transform, or with
// KeepManagedFields one that keeps them, for measuring what dropping them saves.
func transformFunc(opts InformerOptions) cache.TransformFunc {
	return func(obj any) (any, error) { return transform(obj, opts.KeepManagedFields) }
}

// shareOwners shares the words of owner references: the children of one
// Installation all name it.
func shareOwners(refs []metav1.OwnerReference) {
	for i := range refs {
		r := &refs[i]
		r.APIVersion, r.Kind, r.Name, r.UID = share(r.APIVersion), share(r.Kind), share(r.Name), types.UID(share(string(r.UID)))
	}
}

// shareWords puts the shared copy of each key of m in its place, and of
// each value when labels is set; annotation values (hashes, whole
// documents) are seldom repeated. Assigning to a key that is there stores
// the key given, so no entry is added while ranging.
func shareWords(m map[string]string, labels bool) {
	for k, v := range m {
		if labels {
			v = share(v)
		}
		m[share(k)] = v
	}
}

// share returns the one copy of s that the cache keeps. unique holds it
// only while something refers to it, so the words of deleted objects go
// with them.
func share(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}
