package env

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
)

func TestFaults(t *testing.T) {
	// Without the watch cache, watches are served by etcd itself, so its
	// compaction is what makes an old resourceVersion too old.
	e := StartForTest(t, Options{ExtraArgs: map[string][]string{"kube-apiserver": {"--watch-cache=false"}}})
	ctx := t.Context()
	cms := e.Client.CoreV1().ConfigMaps(metav1.NamespaceDefault)
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("RestartAPIServer", func(t *testing.T) {
		for _, r := range []Restart{{Kill: true}, {Down: time.Second}} {
			before := e.processes("kube-apiserver")[0].Pid
			began := time.Now()
			if err := e.RestartAPIServer(ctx, r); err != nil {
				t.Fatalf("restart %+v: %v", r, err)
			}
			t.Logf("restart %+v took %v", r, time.Since(began).Round(time.Millisecond))
			if after := e.processes("kube-apiserver")[0].Pid; after == before {
				t.Errorf("kube-apiserver still has pid %d", after)
			}
			// The same client, with the same CA and token, sees the same data.
			if _, err := cms.Get(ctx, "before", metav1.GetOptions{}); err != nil {
				t.Errorf("after restart %+v: %v", r, err)
			}
		}
	})

	t.Run("CompactEtcd", func(t *testing.T) {
		old := cm.ResourceVersion
		for i := range 3 {
			cm.Data = map[string]string{"i": string(rune('a' + i))}
			if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		// Before the compaction the old resourceVersion is fine.
		if ev := firstEvent(t, cms, old); ev.Type != watch.Modified {
			t.Fatalf("a watch from resourceVersion %s before compacting: %s event %v", old, ev.Type, ev.Object)
		}
		rev, err := e.CompactEtcd(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if current, err := e.EtcdRevision(ctx); err != nil || current < rev {
			t.Fatalf("revision after compacting at %d: %d, %v", rev, current, err)
		}
		if _, err := e.CompactEtcd(ctx); err != nil {
			t.Errorf("compacting again at the same revision: %v", err)
		}
		ev := firstEvent(t, cms, old)
		if err := apierrors.FromObject(ev.Object); ev.Type != watch.Error || !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
			t.Errorf("a watch from resourceVersion %s after compacting at %d: %s event %v, want 410 Gone", old, rev, ev.Type, err)
		}
	})

	stopAndCheck(t, e)
}

// firstEvent returns the first event of a watch of ConfigMaps from resourceVersion rv.
func firstEvent(t *testing.T, cms typedcorev1.ConfigMapInterface, rv string) watch.Event {
	t.Helper()
	w, err := cms.Watch(t.Context(), metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		t.Fatalf("watching from resourceVersion %s: %v", rv, err)
	}
	defer w.Stop()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatalf("the watch from resourceVersion %s ended without an event", rv)
		}
		return ev
	case <-time.After(30 * time.Second):
		t.Fatalf("the watch from resourceVersion %s delivered no event in 30s", rv)
	}
	return watch.Event{}
}
