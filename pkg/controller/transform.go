package controller

import (
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"lin.dev/lin-operator/pkg/resources"
)

// lastApplied is the annotation in which `kubectl apply` keeps a whole copy
// of what it applied: often the largest part of an Installation, and never
// read by the operator.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// Transform is the informers' transform. It drops from each object what the
// operator never reads: managedFields, and kubectl's last-applied copy (a
// status update of an Installation keeps the stored metadata whatever the
// copy sent carries, so nothing is lost). And it makes the label and
// annotation keys, and the operator's own label values and owner kind,
// share one copy across the cache: the children of thousands of
// Installations repeat them, and each decoded object holds its own copy of
// every string. Cached objects are never changed, so sharing is safe.
func Transform(obj any) (any, error) {
	m, err := apimeta.Accessor(obj)
	if err != nil {
		// A tombstone, whose object went through the transform already.
		return obj, nil
	}
	m.SetManagedFields(nil)
	delete(m.GetAnnotations(), lastApplied)
	shareWords(m.GetLabels(), true)
	shareWords(m.GetAnnotations(), false)
	refs := m.GetOwnerReferences()
	for i := range refs {
		refs[i].APIVersion, refs[i].Kind = vocabulary.word(refs[i].APIVersion), vocabulary.word(refs[i].Kind)
	}
	switch o := obj.(type) {
	case *appsv1.StatefulSet:
		shareSelector(o.Spec.Selector)
		shareWords(o.Spec.Template.Labels, true)
		shareWords(o.Spec.Template.Annotations, false)
	case *corev1.Service:
		shareWords(o.Spec.Selector, true)
	case *policyv1.PodDisruptionBudget:
		shareSelector(o.Spec.Selector)
	}
	return obj, nil
}

// sharedValues are the label keys whose values are few, so that those are
// shared too; other values (names, hashes) are not repeated.
var sharedValues = map[string]bool{resources.LabelManagedBy: true, resources.LabelName: true}

// shareWords puts the shared copy of each key of m in its place, and of the
// values of sharedValues when labels is set. Assigning to a key that is
// there stores the key given, so no entry is added while ranging.
func shareWords(m map[string]string, labels bool) {
	for k, v := range m {
		if labels && sharedValues[k] {
			v = vocabulary.word(v)
		}
		m[vocabulary.word(k)] = v
	}
}

// shareSelector shares the words of a label selector's matchLabels.
func shareSelector(s *metav1.LabelSelector) {
	if s != nil {
		shareWords(s.MatchLabels, true)
	}
}

// words is a set of strings kept once each. It only grows: it holds label
// and annotation keys and a few values, which the objects of a cluster
// repeat, not their names.
type words struct {
	mu sync.Mutex
	m  map[string]string
}

// vocabulary is the one set of words of the cache.
var vocabulary = words{m: map[string]string{}}

// word returns the one kept copy of s.
func (w *words) word(s string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if kept, ok := w.m[s]; ok {
		return kept
	}
	w.m[s] = s
	return s
}
