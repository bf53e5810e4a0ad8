package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"lin.dev/lin-operator/test/harness"
)

// editLatency is the time from an Installation edit to the update of its
// StatefulSet, with every other Installation in sync.
type editLatency struct {
	// Samples is the number of edits timed, one at a time.
	Samples int `json:"samples"`
	// P50Ms, P99Ms and MaxMs are percentiles of the samples, in milliseconds.
	P50Ms float64 `json:"p50Ms"`
	P99Ms float64 `json:"p99Ms"`
	MaxMs float64 `json:"maxMs"`
	// WritesPerEdit are the operator's writes per edit, events aside;
	// ExpectedWrites is the least there can be: one update of each shard's
	// StatefulSet and one of status.
	WritesPerEdit  float64 `json:"writesPerEdit"`
	ExpectedWrites int     `json:"expectedWrites"`
	// DryRunsPerEdit are the server-side dry runs per edit.
	DryRunsPerEdit float64 `json:"dryRunsPerEdit"`
	// Reads are the gets and lists while editing.
	Reads int `json:"reads"`
}

// latency changes the image of Installations in ns one at a time, spread
// over all n, and times each until shard 0's StatefulSet carries the new image.
func (b *bench) latency(ctx context.Context, ch *child, ns string, n, shards int) (editLatency, error) {
	w := b.watchImages(ctx, ns)
	defer w.stop()
	before, err := ch.requests(ctx)
	if err != nil {
		return editLatency{}, err
	}
	samples := make([]time.Duration, 0, b.o.latencySamples)
	for i := range b.o.latencySamples {
		name := installationName(i * n / b.o.latencySamples)
		image := fmt.Sprintf("example.com/app:edit-%d", i)
		seen := w.expect(name+"-0", image)
		began := time.Now()
		patch := fmt.Sprintf(`{"spec":{"image":%q}}`, image)
		_, err := b.lin.LinV1().Installations(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		if err != nil {
			return editLatency{}, fmt.Errorf("editing %s: %w", name, err)
		}
		select {
		case at := <-seen:
			samples = append(samples, at.Sub(began))
		case <-time.After(time.Minute):
			return editLatency{}, fmt.Errorf("StatefulSet %s-0 did not get image %s within a minute", name, image)
		}
	}
	if err := quiet(ctx, ch); err != nil {
		return editLatency{}, err
	}
	after, err := ch.requests(ctx)
	if err != nil {
		return editLatency{}, err
	}
	slices.Sort(samples)
	requests := harness.Diff(after, before)
	return editLatency{
		Samples:        len(samples),
		P50Ms:          ms(percentile(samples, 0.50)),
		P99Ms:          ms(percentile(samples, 0.99)),
		MaxMs:          ms(samples[len(samples)-1]),
		WritesPerEdit:  float64(total(harness.Writes(requests))) / float64(len(samples)),
		ExpectedWrites: shards + 1,
		DryRunsPerEdit: float64(dryRuns(requests)) / float64(len(samples)),
		Reads:          total(harness.Reads(requests)),
	}, nil
}

// percentile returns the q-th quantile of sorted samples (nearest rank).
func percentile(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(i, 0)]
}

// ms converts d to milliseconds.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// imageWatch tells when a StatefulSet gets an awaited image.
type imageWatch struct {
	mu sync.Mutex
	// awaited maps a StatefulSet name to the image awaited and the channel
	// that receives the time it was seen.
	awaited map[string]awaitedImage
	cancel  context.CancelFunc
	factory kubeinformers.SharedInformerFactory
}

// awaitedImage is one expectation of an imageWatch.
type awaitedImage struct {
	image string
	seen  chan time.Time
}

// watchImages starts watching the StatefulSets of ns.
func (b *bench) watchImages(ctx context.Context, ns string) *imageWatch {
	w := &imageWatch{awaited: map[string]awaitedImage{}}
	w.factory = b.childInformers(ns)
	// An error is impossible here: the informer has not started.
	_, _ = w.factory.Apps().V1().StatefulSets().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) { w.updated(obj) },
	})
	ctx, w.cancel = context.WithCancel(ctx)
	w.factory.Start(ctx.Done())
	w.factory.WaitForCacheSync(ctx.Done())
	return w
}

// expect registers that StatefulSet name should get image, and returns the
// channel that receives the time it does.
func (w *imageWatch) expect(name, image string) <-chan time.Time {
	seen := make(chan time.Time, 1)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.awaited[name] = awaitedImage{image: image, seen: seen}
	return seen
}

// updated checks an updated StatefulSet against what is awaited.
func (w *imageWatch) updated(obj any) {
	at := time.Now()
	sts, ok := obj.(*appsv1.StatefulSet)
	if !ok || len(sts.Spec.Template.Spec.Containers) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if a, ok := w.awaited[sts.Name]; ok && sts.Spec.Template.Spec.Containers[0].Image == a.image {
		a.seen <- at
		delete(w.awaited, sts.Name)
	}
}

// stop ends the watch.
func (w *imageWatch) stop() {
	w.cancel()
	w.factory.Shutdown()
}
