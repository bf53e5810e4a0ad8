package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"lin.dev/lin-operator/pkg/resources"
)

func TestEchoesTellASyncsOwnWritesFromNews(t *testing.T) {
	key := cache.ObjectName{Namespace: "ns", Name: "demo"}
	obj := func(uid, rv string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{UID: k8stypes.UID(uid), ResourceVersion: rv}}
	}
	// Each step is a write's answer (wrote), a watch event (event), or the
	// sync's begin or end; want is what wrote, news or end report.
	type step struct {
		op, uid, rv string
		want        bool
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"an event with nothing written is news", []step{{"event", "a", "1", true}}},
		{"the echo after the answer", []step{
			{"begin", "", "", false}, {"wrote", "a", "2", false}, {"end", "", "", false},
			{"event", "a", "2", false}, {"event", "a", "3", true}}},
		{"the echo before the answer", []step{
			{"begin", "", "", false}, {"event", "a", "2", false}, {"wrote", "a", "2", true}, {"end", "", "", false},
			{"event", "a", "3", true}}},
		{"another object's event during the sync wakes it at the end", []step{
			{"begin", "", "", false}, {"wrote", "a", "2", false}, {"event", "b", "5", false}, {"end", "", "", true}}},
		{"a change before the echo, both during the sync", []step{
			{"begin", "", "", false}, {"event", "a", "2", false}, {"event", "a", "3", false}, {"wrote", "a", "3", true},
			{"end", "", "", true}}},
		{"a change before the write, seen after the answer", []step{
			{"begin", "", "", false}, {"wrote", "a", "3", false}, {"end", "", "", false},
			{"event", "a", "2", true}, {"event", "a", "3", true}}},
		{"an echo that did not come by the next event", []step{
			{"wrote", "a", "2", false}, {"event", "a", "4", true}, {"event", "a", "4", true}}},
		{"a deletion forgets the write", []step{
			{"wrote", "a", "2", false}, {"forget", "a", "", false}, {"event", "a", "2", true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEchoes()
			for i, s := range tc.steps {
				var got bool
				switch s.op {
				case "begin":
					e.begin(key)
				case "end":
					got = e.end(key)
				case "wrote":
					got = e.wrote(key, obj(s.uid, s.rv))
				case "event":
					got = e.news(key, obj(s.uid, s.rv))
				case "forget":
					e.forget(k8stypes.UID(s.uid))
				}
				if got != s.want {
					t.Errorf("step %d (%s %s@%s) = %v, want %v", i, s.op, s.uid, s.rv, got, s.want)
				}
			}
		})
	}
}

func TestTheEchoOfAChildsWriteQueuesNothing(t *testing.T) {
	f := newFixture(t)
	inst := newInstallation()
	f.installations = append(f.installations, inst)
	c := f.newController()
	key := cache.MetaObjectToName(inst)
	child := func(rv string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "demo-config", Namespace: "ns", UID: "cm",
			ResourceVersion: rv, OwnerReferences: []metav1.OwnerReference{resources.OwnerReference(inst)}}}
	}

	c.echoes.begin(key)
	c.childChanged(child("2"))
	c.echoes.wrote(key, child("2"))
	if c.echoes.end(key) || c.queue.Len() != 0 {
		t.Fatalf("the echo of the sync's own write queued the Installation")
	}
	c.childChanged(child("3"))
	if c.queue.Len() != 1 {
		t.Errorf("a change by someone else queued %d, want 1", c.queue.Len())
	}
}
