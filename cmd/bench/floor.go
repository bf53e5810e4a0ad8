package main

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/controller"
	"lin.dev/lin-operator/pkg/resources"
)

// floorResult is how fast a plain client wrote what the operator writes.
type floorResult struct {
	// Seconds is the time from the first create to the last write.
	Seconds float64 `json:"seconds"`
	// ChildrenPerSecond counts the children only, as convergence does.
	ChildrenPerSecond float64 `json:"childrenPerSecond"`
	// ControlPlaneCPUSeconds is the CPU time etcd and kube-apiserver spent
	// meanwhile.
	ControlPlaneCPUSeconds float64 `json:"controlPlaneCPUSeconds"`
	// StealPercent is the share of the machine's CPU time that went to other
	// guests of its host meanwhile.
	StealPercent float64 `json:"stealPercent"`
}

// floor writes, on as many goroutines as the operator has workers and with no
// client-side limit, what a converging operator run writes for n
// Installations: each Installation, its children exactly as the operator
// renders them, and the status its first sync writes (controller.FirstStatus),
// with the operator's field manager. Nothing is read and nothing compared,
// so the API server alone bounds it. It is timed as the operator is, until
// the benchmark's watch has seen every status, so that the watch costs the
// control plane as much in both. With unrelated > 0 its namespace first gets
// as many unrelated ConfigMaps and Services, as a contender's does when its
// memory is measured.
func (b *bench) floor(ctx context.Context, n, shards, unrelated int) (floorResult, error) {
	ns, err := b.namespace(ctx, "floor")
	if err != nil {
		return floorResult{}, err
	}
	if err := b.addUnrelated(ctx, ns, unrelated); err != nil {
		return floorResult{}, err
	}
	t := b.newTracker(ctx, ns, n)
	defer t.stop()
	phase, err := b.markPhase()
	if err != nil {
		return floorResult{}, err
	}
	began := time.Now()
	err = parallel(ctx, n, b.o.workers, func(ctx context.Context, i int) error {
		return b.writeInstallation(ctx, newInstallation(ns, i, shards))
	})
	if err != nil {
		return floorResult{}, fmt.Errorf("floor in %s: %w", ns, err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, b.o.timeout)
	defer cancel()
	doneAt, err := t.observedAt(waitCtx)
	if err != nil {
		return floorResult{}, fmt.Errorf("floor in %s: %w", ns, err)
	}
	elapsed := doneAt.Sub(began)
	cpu, stolen, err := b.since(phase)
	return floorResult{
		Seconds:                elapsed.Seconds(),
		ChildrenPerSecond:      float64(n*childrenPer(shards)) / elapsed.Seconds(),
		ControlPlaneCPUSeconds: cpu,
		StealPercent:           stolen,
	}, err
}

// writeInstallation creates inst, then its children, then writes the status
// that the operator's first sync writes.
func (b *bench) writeInstallation(ctx context.Context, inst *linv1.Installation) error {
	created, err := b.lin.LinV1().Installations(inst.Namespace).Create(ctx, inst, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	children, err := resources.NewChildren(created, clusterDomain)
	if err != nil {
		return err
	}
	var stored []*appsv1.StatefulSet
	for _, obj := range children.Objects() {
		sts, err := b.create(ctx, obj)
		if err != nil {
			return err
		}
		if sts != nil {
			stored = append(stored, sts)
		}
	}
	created.Status = controller.FirstStatus(created, children, stored, clusterDomain, metav1.Now())
	_, err = b.lin.LinV1().Installations(inst.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{FieldManager: controller.FieldManager})
	return err
}

// create creates one child with the operator's field manager, and returns
// a StatefulSet as the API server stored it.
func (b *bench) create(ctx context.Context, obj resources.Object) (*appsv1.StatefulSet, error) {
	opts := metav1.CreateOptions{FieldManager: controller.FieldManager}
	var err error
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		_, err = b.kube.CoreV1().ConfigMaps(o.Namespace).Create(ctx, o, opts)
	case *corev1.Service:
		_, err = b.kube.CoreV1().Services(o.Namespace).Create(ctx, o, opts)
	case *appsv1.StatefulSet:
		return b.kube.AppsV1().StatefulSets(o.Namespace).Create(ctx, o, opts)
	case *policyv1.PodDisruptionBudget:
		_, err = b.kube.PolicyV1().PodDisruptionBudgets(o.Namespace).Create(ctx, o, opts)
	default:
		err = fmt.Errorf("no client for %T", obj)
	}
	return nil, err
}
