//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/client/clientset/versioned"
	lininformers "lin.dev/lin-operator/pkg/client/informers/externalversions"
	"lin.dev/lin-operator/pkg/controller"
	"lin.dev/lin-operator/test/harness"
)

// childResources are the children's resources that the operator's
// informers list and watch.
var childResources = []string{"configmaps", "services", "statefulsets", "poddisruptionbudgets"}

// TestLaggingChildCachesAfterACutCauseNoFalseConflict cuts the operator off
// the API server and, when the cut heals, keeps its child informers from
// reconnecting for a while: the Installations' informer sees what changed
// during the cut, the operator makes children its child caches cannot show,
// and each later sync meets its own children as AlreadyExists. Those are the
// operator's (they carry the Installation's controller reference): no
// Installation may report a ResourceConflict, at any moment, and once the
// caches catch up everything converges with each child made once.
func TestLaggingChildCachesAfterACutCauseNoFalseConflict(t *testing.T) {
	e := testEnv
	ns := harness.Namespace(t, e.Client)
	conflicts := watchConflicts(t, e.Client, linClient, ns)
	tracker := trackUIDs(t, e.Client, ns)
	px := startProxy(t, strings.TrimPrefix(e.Config.Host, "https://"))
	gate := newListGate(childResources...)
	cfg := rest.CopyConfig(e.Config)
	cfg.Host = "https://" + px.addr
	cfg.Wrap(gate.wrap)
	op := harness.StartOperator(t, cfg, harness.Options{Namespaces: []string{ns}})
	create := func(name string) {
		inst := harness.NewInstallation(ns, name)
		inst.Spec.Shards = ptr.To[int32](2)
		if _, err := linClient.LinV1().Installations(ns).Create(context.Background(), inst, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	editConfig := func(name, value string) {
		harness.EditInstallation(t, linClient, ns, name, func(inst *linv1.Installation) {
			inst.Spec.Config["round"] = value
		})
	}
	for i := range 3 {
		create(fmt.Sprintf("old%d", i))
	}
	waitConverged(t, 2*time.Minute, e.Client, linClient, ns)

	gate.set(true)
	px.cut()
	fresh := []string{"new0", "new1", "new2"}
	for _, name := range fresh {
		create(name)
	}
	for i := range 3 {
		editConfig(fmt.Sprintf("old%d", i), "cut")
	}
	px.heal(t)
	// Each new Installation's children get made while no child cache can
	// show them; an edit then makes each sync again, on that stale cache.
	for _, name := range fresh {
		harness.Eventually(t, time.Minute, "the children of "+name, func(ctx context.Context) (bool, error) {
			_, err := e.Client.AppsV1().StatefulSets(ns).Get(ctx, name+"-1", metav1.GetOptions{})
			return err == nil, err
		})
		editConfig(name, "lagging")
	}
	harness.Eventually(t, time.Minute, "creates to meet the operator's own children", func(context.Context) (bool, error) {
		return alreadyExists(op.Requests) >= len(fresh), nil
	})
	gate.set(false)
	s := waitConverged(t, 2*time.Minute, e.Client, linClient, ns)
	t.Logf("while the child caches lagged: %d lists and watches refused, %d creates answered AlreadyExists",
		gate.refusals(), alreadyExists(op.Requests))

	if seen := conflicts(); len(seen) > 0 {
		t.Errorf("false conflicts reported: %v", seen)
	}
	tracker.catchUp(t, s.uids())
	if r := tracker.recreated(); len(r) > 0 {
		t.Errorf("made more than once: %v", r)
	}
	if d := tracker.deletions(); len(d) > 0 {
		t.Errorf("deleted: %v", d)
	}
}

// alreadyExists counts the operator's creates that the API server refused
// with 409: the name was taken.
func alreadyExists(requests *harness.RequestCounter) int {
	n := 0
	for key, count := range requests.Conflicts() {
		if strings.HasPrefix(key, "create ") {
			n += count
		}
	}
	return n
}

// watchConflicts watches the Installations of ns until the test ends and
// returns a function that lists every ResourceConflict reported: a Degraded
// condition with that reason, seen at any moment, and the Warning events.
func watchConflicts(t *testing.T, c kubernetes.Interface, lc versioned.Interface, ns string) func() []string {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	record := func(obj any) {
		inst, ok := obj.(*linv1.Installation)
		if !ok {
			return
		}
		if c := meta.FindStatusCondition(inst.Status.Conditions, linv1.ConditionDegraded); c != nil &&
			c.Status == metav1.ConditionTrue && c.Reason == controller.ReasonResourceConflict {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, fmt.Sprintf("%s: %s", inst.Name, c.Message))
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	// The operator's transform gives the cache one shape of Installation,
	// from a LIST or a watch, as the watch-list consistency detector wants.
	factory := lininformers.NewSharedInformerFactoryWithOptions(lc, 0, lininformers.WithNamespace(ns),
		lininformers.WithTransform(controller.Transform))
	reg, err := factory.Lin().V1().Installations().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    record,
		UpdateFunc: func(_, obj any) { record(obj) },
	})
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	t.Cleanup(func() {
		cancel()
		factory.Shutdown()
	})
	if !cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		t.Fatal("the conflict watcher's cache did not sync")
	}
	return func() []string {
		events, err := c.CoreV1().Events(ns).List(context.Background(),
			metav1.ListOptions{FieldSelector: "reason=" + controller.ReasonResourceConflict})
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		out := append([]string(nil), seen...)
		for _, ev := range events.Items {
			out = append(out, fmt.Sprintf("event on %s: %s", ev.InvolvedObject.Name, ev.Message))
		}
		return out
	}
}
