package env

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// controllers are the kube-controller-manager controllers Cluster mode runs:
// those that make workloads, storage, namespaces and garbage collection
// behave as in a real cluster. Left out are the ones that need what this
// environment lacks or that would get in the way: node-ipam (no pod CIDRs),
// the certificate signing ones (no cluster CA key), the token ones (tokens are
// projected nowadays), attach-detach and the HPA (no kubelet, no metrics),
// cloud and service load balancer ones, and taint-eviction, which would evict
// every Pod from a fake Node whose lease falls behind on a busy machine.
var controllers = []string{
	"clusterrole-aggregation-controller",
	"cronjob-controller",
	"daemonset-controller",
	"deployment-controller",
	"disruption-controller",
	"endpoints-controller",
	"endpointslice-controller",
	"endpointslice-mirroring-controller",
	"ephemeral-volume-controller",
	"garbage-collector-controller",
	"job-controller",
	"namespace-controller",
	// It removes the not-ready taint once kwok reports a Node Ready, which
	// the scheduler waits for.
	"node-lifecycle-controller",
	"persistentvolume-binder-controller",
	"persistentvolume-expander-controller",
	"persistentvolume-protection-controller",
	"persistentvolumeclaim-protection-controller",
	"pod-garbage-collector-controller",
	"replicaset-controller",
	"replicationcontroller-controller",
	"resourcequota-controller",
	"root-ca-certificate-publisher-controller",
	// It creates each namespace's default ServiceAccount, which Pods need.
	"serviceaccount-controller",
	"service-cidr-controller",
	"statefulset-controller",
	"ttl-after-finished-controller",
}

// kwokNodeAnnotation marks the Nodes kwok manages; kwok is told to manage
// only those, so that Nodes a test creates itself stay untouched.
const kwokNodeAnnotation = "kwok.x-k8s.io/node"

// startCluster runs kube-controller-manager, kube-scheduler and, unless no
// fake Node is wanted, kwok; creates the fake Nodes, and waits until the Nodes
// are Ready and schedulable and the controllers are at work.
func (e *Env) startCluster(ctx context.Context, cmPort, schedPort int) error {
	kubeconfig := e.KubeconfigPath
	cm, err := e.run("kube-controller-manager",
		"--kubeconfig", kubeconfig,
		"--authentication-kubeconfig", kubeconfig,
		"--authorization-kubeconfig", kubeconfig,
		// Otherwise it keeps looking for the client CA in the
		// extension-apiserver-authentication ConfigMap, which an apiserver
		// without client certificates never writes, and logs an error
		// each time.
		"--authentication-skip-lookup",
		"--service-account-private-key-file", filepath.Join(e.Dir, "pki", "sa.key"),
		"--leader-elect=false",
		"--bind-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(cmPort),
		"--cert-dir", filepath.Join(e.Dir, "controller-manager"),
		"--controllers", strings.Join(controllers, ","),
	)
	if err != nil {
		return err
	}
	sched, err := e.run("kube-scheduler",
		"--kubeconfig", kubeconfig,
		"--authentication-kubeconfig", kubeconfig,
		"--authorization-kubeconfig", kubeconfig,
		"--authentication-skip-lookup",
		"--leader-elect=false",
		"--bind-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(schedPort),
		"--cert-dir", filepath.Join(e.Dir, "scheduler"),
	)
	if err != nil {
		return err
	}
	all := e.processes("kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler")
	if err := e.waitHealthy(ctx, all, cm, cmPort, sched, schedPort); err != nil {
		return err
	}
	if e.opts.Nodes < 0 {
		return e.waitForControllers(ctx, append(all, cm))
	}
	stages := filepath.Join(filepath.Dir(e.BinDir), "kwok-stages.yaml")
	if _, err := os.Stat(stages); err != nil {
		return fmt.Errorf("kwok's stages: %w; run hack/build-tools.sh", err)
	}
	kwok, err := e.run("kwok",
		"--kubeconfig", kubeconfig,
		"--config", stages,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector", kwokNodeAnnotation+"=fake",
		// kwok's node heartbeat stage only refreshes Node conditions every
		// ten minutes and counts on a Node lease in between; without one
		// the node-lifecycle controller would mark the Nodes unreachable.
		"--node-lease-duration-seconds", "40",
		// The default pod CIDR, a /24, runs out after 254 Pods.
		"--cidr", "10.244.0.0/16",
	)
	if err != nil {
		return err
	}
	all = append(all, kwok)
	if err := e.createNodes(ctx); err != nil {
		return err
	}
	want := e.opts.Nodes
	err = e.waitFor(ctx, fmt.Sprintf("%d fake node(s) to be Ready and schedulable", want), all, func(ctx context.Context) (bool, error) {
		nodes, err := e.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		ready := 0
		for i := range nodes.Items {
			if nodes.Items[i].Annotations[kwokNodeAnnotation] == "fake" && schedulable(&nodes.Items[i]) {
				ready++
			}
		}
		return ready >= want, nil
	})
	if err != nil {
		return err
	}
	return e.waitForControllers(ctx, all)
}

// waitHealthy waits until the controller manager and the scheduler answer
// /healthz on their ports.
func (e *Env) waitHealthy(ctx context.Context, all []*process, cm *process, cmPort int, sched *process, schedPort int) error {
	for _, c := range []struct {
		p    *process
		port int
	}{{cm, cmPort}, {sched, schedPort}} {
		url := "https://127.0.0.1:" + strconv.Itoa(c.port) + "/healthz"
		err := e.waitFor(ctx, c.p.Name+" /healthz", append(all, c.p), func(ctx context.Context) (bool, error) {
			_, err := httpGet(ctx, insecureClient, url, "")
			return err == nil, err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// waitForControllers waits for the default ServiceAccount, which shows that
// the controller manager's informers have synced and its controllers are
// running.
func (e *Env) waitForControllers(ctx context.Context, watched []*process) error {
	return e.waitFor(ctx, "the default ServiceAccount", watched, func(ctx context.Context) (bool, error) {
		_, err := e.Client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, err
	})
}

// schedulable reports whether node is Ready and free of the taints that keep
// the scheduler away from a Node that is not ready yet.
func schedulable(node *corev1.Node) bool {
	ready := false
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = c.Status == corev1.ConditionTrue
		}
	}
	for _, t := range node.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			return false
		}
	}
	return ready && !node.Spec.Unschedulable
}

// nodeName names the i-th fake Node.
func nodeName(i int) string { return "kwok-node-" + strconv.Itoa(i) }

// createNodes creates the fake Nodes; ones left by an earlier run on the same
// Dir are kept.
func (e *Env) createNodes(ctx context.Context) error {
	capacity := e.opts.NodeCapacity
	if len(capacity) == 0 {
		capacity = corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("64"),
			corev1.ResourceMemory: resource.MustParse("256Gi"),
			corev1.ResourcePods:   resource.MustParse("1000"),
		}
	}
	for i := range max(e.opts.Nodes, 0) {
		name := nodeName(i)
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Annotations: map[string]string{kwokNodeAnnotation: "fake"},
				Labels: map[string]string{
					corev1.LabelHostname:   name,
					corev1.LabelOSStable:   "linux",
					corev1.LabelArchStable: runtime.GOARCH,
					"type":                 "kwok",
				},
			},
			// A kubelet registers its Node with the status filled in, and
			// kwok keeps a capacity that is already there.
			Status: corev1.NodeStatus{
				Capacity:    capacity,
				Allocatable: capacity,
				Phase:       corev1.NodeRunning,
				NodeInfo: corev1.NodeSystemInfo{
					Architecture:    runtime.GOARCH,
					OperatingSystem: "linux",
					KubeletVersion:  "fake",
				},
			},
		}
		if _, err := e.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating node %s: %w", name, err)
		}
	}
	return nil
}
