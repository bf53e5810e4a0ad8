package controller

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/consistencydetector"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/client/clientset/versioned/fake"
)

// mutateEnv makes the test binary, run again by the test below, change an
// object in the cache instead of testing.
const mutateEnv = "LIN_TEST_MUTATE_THE_CACHE"

// TestTheMutationDetectorCatchesAWriteToTheCache shows that client-go's
// cache mutation detector, which the Makefile turns on in every test, stops
// a process that changes an object it got from a lister of the operator's
// informers: the test binary, run again with the detector on, changes a
// cached Installation without a DeepCopy and must die of it.
func TestTheMutationDetectorCatchesAWriteToTheCache(t *testing.T) {
	if os.Getenv(mutateEnv) == "1" {
		mutateTheCache(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestTheMutationDetectorCatchesAWriteToTheCache$", "-test.count=1")
	cmd.Env = append(os.Environ(), mutateEnv+"=1", "KUBE_CACHE_MUTATION_DETECTOR=true")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "modified") {
		t.Fatalf("a change to a cached Installation went unnoticed by the mutation detector (%v):\n%s", err, out)
	}
	t.Logf("caught: %s", firstLine(string(out), "panic:"))
}

// mutateTheCache changes the image of a cached Installation in place, then
// waits for the detector, which checks every second, to panic.
func mutateTheCache(t *testing.T) {
	inst := &linv1.Installation{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}, Spec: linv1.InstallationSpec{Image: "app:1"}}
	inf := NewInformers(k8sfake.NewClientset(), fake.NewClientset(inst), InformerOptions{Namespaces: []string{"ns"}})
	installations := inf.Lin["ns"].Lin().V1().Installations()
	lister := installations.Lister()
	inf.Start(t.Context())
	if !cache.WaitForCacheSync(t.Context().Done(), installations.Informer().HasSynced) {
		t.Fatal("the cache did not sync")
	}
	cached, err := lister.Installations("ns").Get("a")
	if err != nil {
		t.Fatal(err)
	}
	cached.Spec.Image = "app:2" // the bug: no DeepCopy first
	time.Sleep(10 * time.Second)
	t.Fatal("the mutation detector did not stop this process within 10 s")
}

// firstLine returns the first line of text that begins with prefix.
func firstLine(text, prefix string) string {
	for l := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// TestPackedCachesMatchAListThroughTheTransform: the watch-list consistency
// detector compares what an informer holds (here: the objects of a watch,
// which carry no kind, through Transform) with a LIST passed through the
// same transform (whose custom resources carry their kind); packed children
// and Installations pass. The detector panics on a difference.
func TestPackedCachesMatchAListThroughTheTransform(t *testing.T) {
	inst := newInstallation()
	ch := render(t, inst)
	listed := inst.DeepCopy()
	listed.TypeMeta = metav1.TypeMeta{Kind: "Installation", APIVersion: linv1.SchemeGroupVersion.String()}
	configMaps, statefulSets := &corev1.ConfigMapList{}, &appsv1.StatefulSetList{}
	for _, cm := range ch.ConfigMaps {
		configMaps.Items = append(configMaps.Items, *cm)
	}
	for _, sts := range ch.StatefulSets {
		statefulSets.Items = append(statefulSets.Items, *sts)
	}
	lists := map[string]runtime.Object{
		"Installations": &linv1.InstallationList{Items: []linv1.Installation{*listed}},
		"ConfigMaps":    configMaps,
		"StatefulSets":  statefulSets,
	}
	for name, list := range lists {
		t.Run(name, func(t *testing.T) {
			items, err := meta.ExtractList(list.DeepCopyObject())
			if err != nil {
				t.Fatal(err)
			}
			var cached []any
			for _, item := range items {
				item.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
				packed, err := Transform(item)
				if err != nil {
					t.Fatal(err)
				}
				cached = append(cached, packed)
			}
			listFn := func(context.Context, metav1.ListOptions) (runtime.Object, error) { return list.DeepCopyObject(), nil }
			consistencydetector.CheckDataConsistency(t.Context(), name, "7", listFn, Transform, metav1.ListOptions{}, func() []any { return cached })
		})
	}
}
