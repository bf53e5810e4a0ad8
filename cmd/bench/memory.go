package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"

	"lin.dev/lin-operator/pkg/operator"
	"lin.dev/lin-operator/test/harness"
)

// memory is what one operator process held once its caches had synced and
// its first syncs were done.
type memory struct {
	// Installations is the number of Installations in the namespace.
	Installations int `json:"installations"`
	// KeepManagedFields and WatchAllChildren say whether the cache kept
	// managedFields and whether the label filter was off.
	KeepManagedFields bool `json:"keepManagedFields"`
	WatchAllChildren  bool `json:"watchAllChildren"`
	// HeapInuseBytes is runtime.MemStats.HeapInuse after a forced GC.
	HeapInuseBytes uint64 `json:"heapInuseBytes"`
	// RSSBytes is VmRSS from /proc/self/status, after memory was returned to the OS.
	RSSBytes uint64 `json:"rssBytes"`
	// Writes are the operator's writes, events included: zero when in sync.
	Writes int `json:"writes"`
}

// memoryConfigs are the informer settings measured: as shipped, then keeping
// managedFields, without the filter, and both.
var memoryConfigs = []struct{ keepManagedFields, watchAllChildren bool }{
	{false, false}, {true, false}, {false, true}, {true, true},
}

// memory measures an operator on ns, which holds n in-sync Installations,
// each in a process of its own so that none inherits another's heap: once
// per informer setting in the run of ratioN Installations (and before the
// Installations of that run exist, n = 0), as shipped in the others.
func (b *bench) memory(ctx context.Context, ns string, n, runN int) ([]memory, error) {
	configs := memoryConfigs
	if runN != ratioN {
		configs = configs[:1]
	}
	var out []memory
	for _, c := range configs {
		m, err := b.memoryChild(ctx, ns, c.keepManagedFields, c.watchAllChildren, "")
		if err != nil {
			return nil, err
		}
		m.Installations = n
		out = append(out, m)
	}
	if b.o.heapProfiles != "" {
		// Apart: profiling every allocation takes memory of its own.
		if _, err := b.memoryChild(ctx, ns, false, false, filepath.Join(b.o.heapProfiles, fmt.Sprintf("heap-%d.pprof", n))); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// memoryChild runs this program again as a memory child and reads its report.
func (b *bench) memoryChild(ctx context.Context, ns string, keepManagedFields, watchAllChildren bool, heapProfile string) (memory, error) {
	exe, err := os.Executable()
	if err != nil {
		return memory{}, err
	}
	cmd := exec.CommandContext(ctx, exe, "-memory-child", "-kubeconfig", b.env.KubeconfigPath, "-namespace", ns,
		"-keep-managed-fields="+strconv.FormatBool(keepManagedFields),
		"-watch-all-children="+strconv.FormatBool(watchAllChildren),
		"-workers", strconv.Itoa(b.o.workers), "-qps", fmt.Sprint(b.o.qps), "-burst", strconv.Itoa(b.o.burst),
		"-heap-profile", heapProfile)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return memory{}, fmt.Errorf("memory child: %w\n%s", err, stderr.String())
	}
	var m memory
	if err := json.Unmarshal(out, &m); err != nil {
		return memory{}, fmt.Errorf("memory child's report %q: %w", out, err)
	}
	return m, nil
}

// runMemoryChild is the whole life of a memory child: it runs the operator on
// the namespace it was given until the caches have synced and the first
// syncs are done, then prints what it holds as JSON.
func runMemoryChild(o options) error {
	base, err := clientcmd.BuildConfigFromFlags("", o.child.kubeconfig)
	if err != nil {
		return err
	}
	op, err := harness.RunOperator(restConfig(base, o.qps, o.burst), operator.Config{
		Namespaces: []string{o.child.namespace}, Workers: o.workers, ClusterDomain: clusterDomain,
		KeepManagedFields: o.child.keepManagedFields, WatchAllChildren: o.child.watchAllChildren,
	})
	if err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, time.Minute, true,
		func(context.Context) (bool, error) { return op.Controller.HasSynced(), nil })
	if err != nil {
		return err
	}
	// Every Installation is synced once after the caches fill; in sync, that
	// costs no request, so there is nothing to wait on but time.
	time.Sleep(3 * time.Second)
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rss, err := vmRSS()
	if err != nil {
		return err
	}
	if o.child.heapProfile != "" {
		if err := writeHeapProfile(o.child.heapProfile); err != nil {
			return err
		}
	}
	m := memory{HeapInuseBytes: ms.HeapInuse, RSSBytes: rss, Writes: total(writes(op.Requests.Snapshot())),
		KeepManagedFields: o.child.keepManagedFields, WatchAllChildren: o.child.watchAllChildren}
	if err := json.NewEncoder(os.Stdout).Encode(m); err != nil {
		return err
	}
	return op.Stop()
}

// writeHeapProfile writes a heap profile of this process to path. The
// profile counts what the last collections freed only after two more.
func writeHeapProfile(path string) error {
	runtime.GC()
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	return errors.Join(pprof.WriteHeapProfile(f), f.Close())
}

// vmRSS reads this process's resident set size from /proc/self/status.
func vmRSS() (uint64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/self/status: %v", s.Err())
}

// addUnrelated creates count ConfigMaps and count Services in ns that the
// operator does not manage, as other applications would have there.
func (b *bench) addUnrelated(ctx context.Context, ns string, count int) error {
	data := map[string]string{"settings.conf": strings.Repeat("key=value\n", 100)}
	return parallel(ctx, count, b.o.workers, func(ctx context.Context, i int) error {
		meta := metav1.ObjectMeta{Name: "other-" + strconv.Itoa(i), Namespace: ns, Labels: map[string]string{"app": "other"}}
		if _, err := b.kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: meta, Data: data}, metav1.CreateOptions{}); err != nil {
			return err
		}
		svc := &corev1.Service{ObjectMeta: meta, Spec: corev1.ServiceSpec{
			Selector: meta.Labels, Ports: []corev1.ServicePort{{Name: "http", Port: 80}},
		}}
		_, err := b.kube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
		return err
	})
}
