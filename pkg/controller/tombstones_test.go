package controller

import (
	"context"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"lin.dev/lin-operator/pkg/client/clientset/versioned/fake"
)

// waitQueued waits until the queue holds exactly key, and empties it.
func waitQueued(t *testing.T, c *Controller, key string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for c.queue.Len() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%s was not queued", key)
		}
		time.Sleep(10 * time.Millisecond)
	}
	got, _ := c.queue.Get()
	c.queue.Done(got)
	c.queue.Forget(got)
	if got.String() != key || c.queue.Len() != 0 {
		t.Fatalf("queued %s and %d more, want only %s", got, c.queue.Len(), key)
	}
}

func TestHandlersSurviveTombstonesAndUnexpectedObjects(t *testing.T) {
	inst := newInstallation()
	kube := k8sfake.NewClientset()
	// The ConfigMaps' watches are fed by the test.
	watchers := make(chan *watch.RaceFreeFakeWatcher, 4)
	kube.PrependWatchReactor("configmaps", func(core.Action) (bool, watch.Interface, error) {
		w := watch.NewRaceFreeFake()
		watchers <- w
		return true, w, nil
	})
	lin := fake.NewClientset(inst)
	inf := NewInformers(kube, lin, InformerOptions{})
	c, err := New(kube, lin, inf, Options{ClusterDomain: clusterDomain, Recorder: record.NewFakeRecorder(100)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer inf.Shutdown()
	defer cancel()
	inf.Start(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), c.HasSynced) {
		t.Fatal("caches did not sync")
	}
	waitQueued(t, c, "ns/demo")
	w := <-watchers

	cm := render(t, inst).ConfigMaps[0]
	cm.UID, cm.ResourceVersion = types.UID("uid-demo-config"), "10"
	// An object of another kind on the watch is dropped by the informer,
	// which goes on with the next event.
	w.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "stray", Namespace: "ns", ResourceVersion: "9"}})
	w.Add(cm)
	waitQueued(t, c, "ns/demo")

	// The watch ends "too old" and the relist no longer finds the
	// ConfigMap, deleted meanwhile: the handlers get a tombstone.
	w.Error(&metav1.Status{Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonExpired,
		Message: "too old resource version"})
	waitQueued(t, c, "ns/demo")

	// Nothing an informer should ever deliver makes a handler panic or
	// queue anything.
	for _, obj := range []any{nil, "garbage", 42, cache.DeletedFinalStateUnknown{Key: "ns/x"},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "unowned", Namespace: "ns"}}} {
		c.handleChild(obj)
		c.observeDeletion(obj)
		if _, err := Transform(obj); err != nil {
			t.Errorf("Transform(%#v): %v", obj, err)
		}
	}
	for _, obj := range []any{nil, "garbage", 42} {
		c.enqueueInstallation(obj)
	}
	if n := c.queue.Len(); n != 0 {
		t.Errorf("%d keys queued for objects that are no child and no Installation", n)
	}
}
