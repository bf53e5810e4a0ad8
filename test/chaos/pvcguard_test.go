package chaos

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/client/clientset/versioned"
	lininformers "lin.dev/lin-operator/pkg/client/informers/externalversions"
	"lin.dev/lin-operator/pkg/controller"
	"lin.dev/lin-operator/pkg/resources"
	"lin.dev/lin-operator/test/harness"
)

// pvcGuard watches the PersistentVolumeClaims and Installations of a
// namespace and fails the test as soon as a claim is deleted (its deletion
// requested, or the claim gone) while the reclaimPolicy of its Installation is
// Retain. Informers relist after an apiserver restart or a compaction, so a
// deletion missed meanwhile still arrives, as a tombstone.
type pvcGuard struct {
	t      testing.TB
	client kubernetes.Interface
	ns     string
	cancel context.CancelFunc
	kube   kubeinformers.SharedInformerFactory
	lin    lininformers.SharedInformerFactory

	mu sync.Mutex
	// policies maps an Installation's name to its reclaimPolicy, kept after
	// the Installation is gone, since its claims may outlive it.
	policies map[string]linv1.ReclaimPolicy
	// claims are the UIDs of the claims seen; deleted those whose deletion
	// was seen, so that a claim counts once.
	claims, deleted map[string]bool
	// violations counts deletions under Retain.
	violations int
}

// guardPVCs starts a guard on namespace ns. Call it after the namespace is
// made: the guard stops at the end of the test before the namespace's own
// deletion takes the claims away.
func guardPVCs(t testing.TB, client kubernetes.Interface, lin versioned.Interface, ns string) *pvcGuard {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	g := &pvcGuard{t: t, client: client, ns: ns, cancel: cancel,
		kube: kubeinformers.NewSharedInformerFactoryWithOptions(client, 0, kubeinformers.WithNamespace(ns)),
		// The operator's transform gives the cache one shape of
		// Installation, from a LIST or a watch, as the watch-list
		// consistency detector wants.
		lin: lininformers.NewSharedInformerFactoryWithOptions(lin, 0, lininformers.WithNamespace(ns),
			lininformers.WithTransform(controller.Transform)),
		policies: map[string]linv1.ReclaimPolicy{}, claims: map[string]bool{}, deleted: map[string]bool{}}
	insts := g.lin.Lin().V1().Installations().Informer()
	claims := g.kube.Core().V1().PersistentVolumeClaims().Informer()
	_, err := insts.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    g.recordPolicy,
		UpdateFunc: func(_, obj any) { g.recordPolicy(obj) },
	})
	if err == nil {
		_, err = claims.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    g.claimSeen,
			UpdateFunc: func(_, obj any) { g.claimSeen(obj) },
			DeleteFunc: g.claimDeleted,
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	g.lin.Start(ctx.Done())
	g.kube.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), insts.HasSynced, claims.HasSynced) {
		t.Fatal("the PVC guard's caches did not sync")
	}
	t.Cleanup(g.stop)
	return g
}

// stop waits until the guard has seen every claim the API server holds, so
// that a deletion its informers missed during a fault has reached it as a
// tombstone, then ends the watch and logs what the guard saw.
func (g *pvcGuard) stop() {
	waitFor(g.t, 2*time.Minute, "the PVC guard to catch up", func(ctx context.Context) error {
		claims, err := g.client.CoreV1().PersistentVolumeClaims(g.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		for _, c := range claims.Items {
			if !g.claims[string(c.UID)] {
				return fmt.Errorf("claim %s not seen yet", c.Name)
			}
		}
		return nil
	})
	g.cancel()
	g.kube.Shutdown()
	g.lin.Shutdown()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.t.Logf("PVC guard: %d claims seen, %d deleted, %d of them under Retain", len(g.claims), len(g.deleted), g.violations)
}

// recordPolicy remembers the reclaimPolicy of an Installation with storage.
func (g *pvcGuard) recordPolicy(obj any) {
	inst, ok := obj.(*linv1.Installation)
	if !ok || inst.Spec.Storage == nil {
		return
	}
	policy := inst.Spec.Storage.ReclaimPolicy
	if policy == "" {
		policy = linv1.ReclaimRetain
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.policies[inst.Name] = policy
}

// claimSeen counts a claim, and treats a requested deletion as a deletion:
// the claim-protection finalizer only delays it.
func (g *pvcGuard) claimSeen(obj any) {
	pvc, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok {
		return
	}
	g.mu.Lock()
	g.claims[string(pvc.UID)] = true
	g.mu.Unlock()
	if pvc.DeletionTimestamp != nil {
		g.claimDeleted(pvc)
	}
}

// claimDeleted fails the test when the claim's Installation retains its claims.
func (g *pvcGuard) claimDeleted(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pvc, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.deleted[string(pvc.UID)] {
		return
	}
	g.deleted[string(pvc.UID)] = true
	g.claims[string(pvc.UID)] = true
	name := pvc.Labels[resources.LabelInstallation]
	policy, known := g.policies[name]
	switch {
	case name == "" || known && policy != linv1.ReclaimRetain:
	case !known:
		g.violations++
		g.t.Errorf("PVC %s/%s was deleted, and its Installation %s, never seen, may have reclaimPolicy Retain", pvc.Namespace, pvc.Name, name)
	default:
		g.violations++
		g.t.Errorf("PVC %s/%s was deleted while Installation %s has reclaimPolicy Retain", pvc.Namespace, pvc.Name, name)
	}
}

// errorRecorder stands in for a test whose errors a test checks: it records
// them instead of failing.
type errorRecorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

// Errorf records an error.
func (r *errorRecorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestPVCGuardFailsOnlyForARetainedClaim(t *testing.T) {
	ns := harness.Namespace(t, testEnv.Client)
	rec := &errorRecorder{TB: t}
	g := guardPVCs(rec, testEnv.Client, linClient, ns)
	ctx := context.Background()
	for name, policy := range map[string]linv1.ReclaimPolicy{"keep": linv1.ReclaimRetain, "drop": linv1.ReclaimDelete} {
		inst := harness.NewInstallation(ns, name)
		inst.Spec.Storage = &linv1.StorageSpec{Size: resource.MustParse("1Gi"), ReclaimPolicy: policy}
		if _, err := linClient.LinV1().Installations(ns).Create(ctx, inst, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The claims of Installations keep and drop, and one of no Installation.
	for owner, claim := range map[string]string{"keep": "data-keep-0-0", "drop": "data-drop-0-0", "": "scratch"} {
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: ns},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}
		if owner != "" {
			pvc.Labels = map[string]string{resources.LabelInstallation: owner}
		}
		waitFor(t, 30*time.Second, "the guard to see Installation "+owner, func(context.Context) error {
			g.mu.Lock()
			defer g.mu.Unlock()
			if _, ok := g.policies[owner]; !ok && owner != "" {
				return fmt.Errorf("not seen")
			}
			return nil
		})
		if _, err := testEnv.Client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := testEnv.Client.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, pvc.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 30*time.Second, "the guard to see 3 deletions", func(context.Context) error {
		g.mu.Lock()
		defer g.mu.Unlock()
		if len(g.deleted) < 3 {
			return fmt.Errorf("%d seen", len(g.deleted))
		}
		return nil
	})
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.errs) != 1 || !strings.Contains(rec.errs[0], "data-keep-0-0") {
		t.Errorf("the guard reported %q, want only the deletion of data-keep-0-0", rec.errs)
	}
}
