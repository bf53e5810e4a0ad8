package controller

import (
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
)

// statefulSetSpecHolds reports whether the live spec is the desired one as
// the API server stores it, so that no write is needed: the pod template's
// labels and annotations may hold others' too (kubectl rollout restart
// adds one), and the rest of the spec holds what desired sets, with server
// defaults where desired is empty, and not a list item or map entry more.
func statefulSetSpecHolds(desired, live *appsv1.StatefulSetSpec) bool {
	if !equality.Semantic.DeepDerivative(desired.Template.ObjectMeta, live.Template.ObjectMeta) {
		return false
	}
	d, l := *desired, *live
	d.Template.ObjectMeta, l.Template.ObjectMeta = live.Template.ObjectMeta, live.Template.ObjectMeta
	return holds(reflect.ValueOf(d), reflect.ValueOf(l))
}

// quantityType is compared by value: "1Gi" and "1024Mi" are one quantity.
var quantityType = reflect.TypeFor[resource.Quantity]()

// holds reports whether live holds what desired sets and no more than the
// API server adds. It is equality.Semantic.DeepDerivative but for lists and
// maps: DeepDerivative lets live have more items than desired, and so would
// keep a container, env var, volume or nodeSelector entry that someone added
// by hand. The API server's defaults fill fields, never items, so here a list
// must have as many items as desired and a map the same keys, while a field
// that desired leaves empty (zero, or a nil pointer) may hold anything: that
// is where the defaults go.
func holds(desired, live reflect.Value) bool {
	switch desired.Kind() {
	case reflect.Slice:
		if desired.Len() != live.Len() {
			return false
		}
		for i := range desired.Len() {
			if !holds(desired.Index(i), live.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if desired.Len() != live.Len() {
			return false
		}
		for _, k := range desired.MapKeys() {
			v := live.MapIndex(k)
			if !v.IsValid() || !holds(desired.MapIndex(k), v) {
				return false
			}
		}
		return true
	}
	if desired.IsZero() {
		return true
	}
	switch desired.Kind() {
	case reflect.Pointer:
		return !live.IsNil() && holds(desired.Elem(), live.Elem())
	case reflect.Struct:
		if desired.Type() == quantityType {
			d, l := desired.Interface().(resource.Quantity), live.Interface().(resource.Quantity)
			return d.Cmp(l) == 0
		}
		for i := range desired.NumField() {
			if !holds(desired.Field(i), live.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Interface:
		return !live.IsNil() && desired.Elem().Type() == live.Elem().Type() && holds(desired.Elem(), live.Elem())
	default:
		return desired.Equal(live)
	}
}
