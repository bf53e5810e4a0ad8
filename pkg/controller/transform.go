package controller

import (
	"unique"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// lastApplied is the annotation in which `kubectl apply` keeps a whole copy
// of what it applied: often the largest part of an Installation, and never
// read by the operator.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// Transform is the informers' transform. It drops from each object what the
// operator never reads: managedFields, and kubectl's last-applied copy (a
// status update of an Installation keeps the stored metadata whatever the
// copy sent carries, so nothing is lost). And it makes the strings that the
// objects of the cache repeat share one copy: each decoded object holds its
// own copy of every string, while the children of one Installation repeat
// its name, namespace and UID in their labels, selectors and owner
// references, and every StatefulSet repeats the words of the pod template.
// Cached objects are never changed, so sharing is safe.
func Transform(obj any) (any, error) {
	m, err := apimeta.Accessor(obj)
	if err != nil {
		// A tombstone, whose object went through the transform already.
		return obj, nil
	}
	m.SetManagedFields(nil)
	delete(m.GetAnnotations(), lastApplied)
	m.SetNamespace(share(m.GetNamespace()))
	shareWords(m.GetLabels(), true)
	shareWords(m.GetAnnotations(), false)
	refs := m.GetOwnerReferences()
	for i := range refs {
		r := &refs[i]
		r.APIVersion, r.Kind, r.Name, r.UID = share(r.APIVersion), share(r.Kind), share(r.Name), types.UID(share(string(r.UID)))
	}
	switch o := obj.(type) {
	case *appsv1.StatefulSet:
		shareSelector(o.Spec.Selector)
		shareTemplate(&o.Spec.Template)
		o.Spec.ServiceName = share(o.Spec.ServiceName)
	case *corev1.Service:
		shareWords(o.Spec.Selector, true)
	case *policyv1.PodDisruptionBudget:
		shareSelector(o.Spec.Selector)
	}
	return obj, nil
}

// shareTemplate shares the words of a pod template: its labels and
// annotation keys, and the names, paths and values its containers and
// volumes repeat across StatefulSets.
func shareTemplate(t *corev1.PodTemplateSpec) {
	shareWords(t.Labels, true)
	shareWords(t.Annotations, false)
	for i := range t.Spec.Containers {
		c := &t.Spec.Containers[i]
		c.Name, c.Image, c.TerminationMessagePath = share(c.Name), share(c.Image), share(c.TerminationMessagePath)
		for j := range c.Env {
			e := &c.Env[j]
			e.Name, e.Value = share(e.Name), share(e.Value)
			if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
				f := e.ValueFrom.FieldRef
				f.APIVersion, f.FieldPath = share(f.APIVersion), share(f.FieldPath)
			}
		}
		for j := range c.Ports {
			c.Ports[j].Name = share(c.Ports[j].Name)
		}
		for j := range c.VolumeMounts {
			v := &c.VolumeMounts[j]
			v.Name, v.MountPath = share(v.Name), share(v.MountPath)
		}
	}
	for i := range t.Spec.Volumes {
		v := &t.Spec.Volumes[i]
		v.Name = share(v.Name)
		if v.ConfigMap != nil {
			v.ConfigMap.Name = share(v.ConfigMap.Name)
		}
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

// shareSelector shares the words of a label selector's matchLabels.
func shareSelector(s *metav1.LabelSelector) {
	if s != nil {
		shareWords(s.MatchLabels, true)
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
