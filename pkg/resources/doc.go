// Package resources renders the children of an Installation: its ConfigMaps,
// Services, StatefulSets and PodDisruptionBudgets. Every builder is pure: Installation in, complete
// object (owner reference included) out, with no client and no clock, so the
// controller, its tests and the fuzz tests all render the same objects.
package resources
