package chaos

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/resources"
	"lin.dev/lin-operator/test/harness"
)

// installationsGVR is the resource of Installations.
var installationsGVR = linv1.SchemeGroupVersion.WithResource("installations")

// badCase is one bad Installation: a valid spec with one change. The API
// server rejects it with a message holding rejected, or, when rejected is
// empty, accepts it and the operator reports it Degraded with reason and a
// message holding message.
type badCase struct {
	what     string
	name     string
	change   func(obj map[string]any)
	rejected string
	reason   string
	message  string
}

// set returns a change that sets the field at path (dot-separated, under
// spec) to v.
func set(path string, v any) func(map[string]any) {
	return func(obj map[string]any) {
		fields := append([]string{"spec"}, strings.Split(path, ".")...)
		if err := unstructured.SetNestedField(obj, v, fields...); err != nil {
			panic(err)
		}
	}
}

// port returns a port, with extra fields given as name, value pairs.
func port(name string, number int64, extra ...any) map[string]any {
	p := map[string]any{"name": name, "containerPort": number}
	for i := 0; i+1 < len(extra); i += 2 {
		p[extra[i].(string)] = extra[i+1]
	}
	return p
}

// manyPorts returns n distinct ports.
func manyPorts(n int) []any {
	ports := make([]any, n)
	for i := range ports {
		ports[i] = port(fmt.Sprintf("p%d", i), int64(1000+i))
	}
	return ports
}

// bigConfig returns files files of size bytes each.
func bigConfig(files, size int) map[string]any {
	config := map[string]any{}
	for i := range files {
		config[fmt.Sprintf("f%d.conf", i)] = strings.Repeat("x", size)
	}
	return config
}

// schemaInvalid are rejected by the CRD's schema, each naming the field.
var schemaInvalid = []badCase{
	{what: "name with upper case", name: "Bad", rejected: "metadata.name"},
	{what: "name with a dot", name: "a.b", rejected: "metadata.name must be a DNS-1035 label"},
	{what: "name ending in a dash", name: "abc-", rejected: "metadata.name"},
	{what: "name of 41 characters", name: strings.Repeat("n", 41), rejected: "metadata.name must be at most 40"},
	{what: "no spec", change: func(o map[string]any) { delete(o, "spec") }, rejected: "spec"},
	{what: "no image", change: func(o map[string]any) { unstructured.RemoveNestedField(o, "spec", "image") }, rejected: "spec.image"},
	{what: "image of 1025 characters", change: set("image", strings.Repeat("i", 1025)), rejected: "spec.image"},
	{what: "replicas a string", change: set("replicas", "three"), rejected: "spec.replicas"},
	{what: "replicas 1001", change: set("replicas", int64(1001)), rejected: "spec.replicas"},
	{what: "shards negative", change: set("shards", int64(-1)), rejected: "spec.shards"},
	{what: "shards a fraction", change: set("shards", 1.5), rejected: "spec.shards"},
	{what: "NodePort without ports", change: func(o map[string]any) {
		set("ports", []any{})(o)
		set("service.type", "NodePort")(o)
	}, rejected: "spec.service.type NodePort or LoadBalancer needs spec.ports"},
	{what: "33 ports", change: set("ports", manyPorts(33)), rejected: "spec.ports"},
	{what: "port name starting with a dash", change: set("ports", []any{port("-http", 80)}), rejected: "spec.ports[0].name"},
	{what: "port name empty", change: set("ports", []any{port("", 80)}), rejected: "spec.ports[0].name"},
	{what: "port without a number", change: set("ports", []any{map[string]any{"name": "http"}}), rejected: "spec.ports[0].containerPort"},
	{what: "service port zero", change: set("ports", []any{port("http", 80, "servicePort", int64(0))}), rejected: "spec.ports[0].servicePort"},
	{what: "service port 65536", change: set("ports", []any{port("http", 80, "servicePort", int64(65536))}), rejected: "spec.ports[0].servicePort"},
	{what: "protocol in lower case", change: set("ports", []any{port("http", 80, "protocol", "tcp")}), rejected: "spec.ports[0].protocol"},
	{what: "257 config files", change: set("config", bigConfig(257, 1)), rejected: "spec.config"},
	{what: "config key .", change: set("config", map[string]any{".": "x"}), rejected: "spec.config keys must be valid ConfigMap keys"},
	{what: "config key of 254 characters", change: set("config", map[string]any{strings.Repeat("k", 254): "x"}), rejected: "spec.config keys must be valid ConfigMap keys"},
	{what: "config value a number", change: set("config", map[string]any{"a.conf": int64(5)}), rejected: "spec.config.a.conf"},
	{what: "config mount path empty", change: set("configMountPath", ""), rejected: "spec.configMountPath"},
	{what: "config mount path of 1025 characters", change: set("configMountPath", "/"+strings.Repeat("p", 1024)), rejected: "spec.configMountPath"},
	{what: "storage size not a quantity", change: set("storage", map[string]any{"size": "lots"}), rejected: "spec.storage.size"},
	{what: "storage mount path relative", change: set("storage", map[string]any{"size": "1Gi", "mountPath": "data"}), rejected: "spec.storage.mountPath"},
	{what: "no access modes", change: set("storage", map[string]any{"size": "1Gi", "accessModes": []any{}}), rejected: "spec.storage.accessModes"},
	{what: "ReadWriteOncePod with another access mode", change: set("storage", map[string]any{"size": "1Gi",
		"accessModes": []any{"ReadWriteMany", "ReadWriteOncePod"}}), rejected: "spec.storage.accessModes: ReadWriteOncePod cannot be combined"},
	{what: "reclaim policy in lower case", change: set("storage", map[string]any{"size": "1Gi", "reclaimPolicy": "delete"}), rejected: "spec.storage.reclaimPolicy"},
	{what: "service type None", change: set("service.type", "None"), rejected: "spec.service.type"},
	{what: "external traffic policy on a ClusterIP Service", change: set("service.externalTrafficPolicy", "Local"),
		rejected: "spec.service.externalTrafficPolicy needs spec.service.type NodePort or LoadBalancer"},
	{what: "external traffic policy in lower case", change: set("service", map[string]any{"type": "NodePort", "externalTrafficPolicy": "local"}),
		rejected: "spec.service.externalTrafficPolicy"},
	{what: "source range not a CIDR", change: set("service", map[string]any{"type": "LoadBalancer", "loadBalancerSourceRanges": []any{"10.0.0.1"}}),
		rejected: "spec.service.loadBalancerSourceRanges must be CIDRs"},
	{what: "source ranges on a NodePort Service", change: set("service", map[string]any{"type": "NodePort", "loadBalancerSourceRanges": []any{"10.0.0.0/8"}}),
		rejected: "spec.service.loadBalancerSourceRanges needs spec.service.type LoadBalancer"},
	{what: "load balancer class on a ClusterIP Service", change: set("service.loadBalancerClass", "example.com/lb"),
		rejected: "spec.service.loadBalancerClass needs spec.service.type LoadBalancer"},
	{what: "node port on a ClusterIP Service", change: set("ports", []any{port("http", 80, "nodePort", int64(30080))}),
		rejected: "spec.ports[].nodePort needs spec.service.type NodePort or LoadBalancer"},
	{what: "node port 65536", change: func(o map[string]any) {
		set("service.type", "NodePort")(o)
		set("ports", []any{port("http", 80, "nodePort", int64(65536))})(o)
	}, rejected: "spec.ports[0].nodePort"},
	{what: "headless Service label not a string", change: set("headlessService.labels", map[string]any{"a": int64(1)}),
		rejected: "spec.headlessService.labels.a"},
	{what: "headless Service annotations a number", change: set("headlessService.annotations", int64(1)), rejected: "spec.headlessService.annotations"},
	{what: "StatefulSet labels a list", change: set("statefulSets.labels", []any{"a"}), rejected: "spec.statefulSets.labels"},
	{what: "StatefulSet annotations a list", change: set("statefulSets.annotations", []any{"a"}), rejected: "spec.statefulSets.annotations"},
	{what: "claim annotation not a string", change: set("storage", map[string]any{"size": "1Gi", "annotations": map[string]any{"a": true}}),
		rejected: "spec.storage.annotations.a"},
	{what: "init container image a number", change: set("initContainers", []any{map[string]any{"name": "init", "image": int64(3)}}),
		rejected: "spec.initContainers[0].image"},
	{what: "volume source of the wrong shape", change: set("volumes", []any{map[string]any{"name": "tls", "secret": "demo-tls"}}),
		rejected: "spec.volumes[0].secret"},
	{what: "a sidecar named app", change: set("containers", []any{map[string]any{"name": "app", "image": "x"}}),
		rejected: "spec.containers[].name must not be app"},
	{what: "an init container named app", change: set("initContainers", []any{map[string]any{"name": "app", "image": "x"}}),
		rejected: "spec.initContainers[].name must not be app"},
	{what: "two sidecars of one name", change: set("containers", []any{map[string]any{"name": "a", "image": "x"}, map[string]any{"name": "a", "image": "y"}}),
		rejected: "spec.containers[1]"},
	{what: "a volume named config", change: set("volumes", []any{map[string]any{"name": "config", "emptyDir": map[string]any{}}}),
		rejected: "spec.volumes[].name must not be config, topology or data"},
	{what: "a volume named data", change: set("volumes", []any{map[string]any{"name": "data", "emptyDir": map[string]any{}}}),
		rejected: "spec.volumes[].name must not be config, topology or data"},
	{what: "a volume mount without a path", change: set("volumeMounts", []any{map[string]any{"name": "tls"}}),
		rejected: "spec.volumeMounts[0].mountPath"},
	{what: "capabilities to drop a string", change: set("securityContext.capabilities.drop", "ALL"),
		rejected: "spec.securityContext.capabilities.drop"},
	{what: "a preStop hook a string", change: set("lifecycle.preStop", "leave"), rejected: "spec.lifecycle.preStop"},
	{what: "claim labels a string", change: set("storage", map[string]any{"size": "1Gi", "labels": "backup"}), rejected: "spec.storage.labels"},
	{what: "negative grace period", change: set("pod.terminationGracePeriodSeconds", int64(-1)), rejected: "spec.pod.terminationGracePeriodSeconds"},
	{what: "unknown field", change: set("replica", int64(2)), rejected: `unknown field "spec.replica"`},
	{what: "stop a string", change: set("stop", "yes"), rejected: "spec.stop"},
	{what: "limit not a quantity", change: set("resources.limits.cpu", "lots"), rejected: "spec.resources.limits.cpu"},
	{what: "more pods than the peer list can name", change: func(o map[string]any) {
		set("shards", int64(64))(o)
		set("replicas", int64(1000))(o)
	}, rejected: "spec.replicas"},
}

// unreconcilable pass the schema, but their children cannot be rendered or
// the API server refuses them.
var unreconcilable = []badCase{
	{what: "config over 1 MiB in one file", change: set("config", bigConfig(1, resources.MaxConfigMapSize)),
		reason: "InvalidSpec", message: "spec.config"},
	{what: "config over 1 MiB in 200 files", change: set("config", bigConfig(200, resources.MaxConfigMapSize/200+16)),
		reason: "InvalidSpec", message: "spec.config"},
	{what: "config mounted over the topology", change: set("configMountPath", resources.TopologyMountPath),
		reason: "ApplyFailed", message: "mountPath"},
	{what: "storage mounted over the topology", change: set("storage", map[string]any{"size": "1Gi", "mountPath": resources.TopologyMountPath}),
		reason: "ApplyFailed", message: "mountPath"},
	{what: "env name with =", change: set("env", []any{map[string]any{"name": "A=B", "value": "x"}}),
		reason: "ApplyFailed", message: "env[4].name"},
	{what: "env with a value and a source", change: set("env", []any{map[string]any{"name": "A", "value": "x",
		"valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": "metadata.name"}}}}),
		reason: "ApplyFailed", message: "env[4].valueFrom"},
	{what: "an init container and a sidecar of one name", change: func(o map[string]any) {
		set("initContainers", []any{map[string]any{"name": "helper", "image": "x"}})(o)
		set("containers", []any{map[string]any{"name": "helper", "image": "y"}})(o)
	}, reason: "ApplyFailed", message: "Duplicate value: \"helper\""},
	{what: "a volume mount of no volume", change: set("volumeMounts", []any{map[string]any{"name": "nowhere", "mountPath": "/x"}}),
		reason: "ApplyFailed", message: "volumeMounts[2].name: Not found"},
	{what: "toleration Exists with a value", change: set("pod.tolerations", []any{map[string]any{"key": "k", "operator": "Exists", "value": "v"}}),
		reason: "ApplyFailed", message: "tolerations[0]"},
	{what: "toleration with an unknown effect", change: set("pod.tolerations", []any{map[string]any{"key": "k", "operator": "Exists", "effect": "Sometimes"}}),
		reason: "ApplyFailed", message: "tolerations[0].effect"},
	{what: "cpu limit under the request", change: set("resources", map[string]any{"requests": map[string]any{"cpu": "2"}, "limits": map[string]any{"cpu": "1"}}),
		reason: "ApplyFailed", message: "resources.requests"},
	{what: "a resource that does not exist", change: set("resources.requests", map[string]any{"widgets": "1"}),
		reason: "ApplyFailed", message: "widgets"},
	{what: "pod label key with a space", change: set("pod.labels", map[string]any{"bad key": "v"}),
		reason: "ApplyFailed", message: "labels"},
	{what: "pod label value of 64 characters", change: set("pod.labels", map[string]any{"team": strings.Repeat("v", 64)}),
		reason: "ApplyFailed", message: "labels"},
	{what: "pod annotation key with a space", change: set("pod.annotations", map[string]any{"bad key": "v"}),
		reason: "ApplyFailed", message: "annotations"},
	{what: "service label value with a bang", change: set("service.labels", map[string]any{"team": "a!"}),
		reason: "ApplyFailed", message: "labels"},
	{what: "service annotation key starting with a dash", change: set("service.annotations", map[string]any{"-a": "v"}),
		reason: "ApplyFailed", message: "annotations"},
	{what: "node selector key with a space", change: set("pod.nodeSelector", map[string]any{"bad key": "v"}),
		reason: "ApplyFailed", message: "nodeSelector"},
	{what: "probe without a handler", change: set("readinessProbe", map[string]any{"periodSeconds": int64(5)}),
		reason: "ApplyFailed", message: "readinessProbe"},
	{what: "probe on a port name with an underscore", change: set("livenessProbe", map[string]any{"tcpSocket": map[string]any{"port": "no_port"}}),
		reason: "ApplyFailed", message: "livenessProbe.tcpSocket.port"},
	{what: "probe with a negative timeout", change: set("startupProbe", map[string]any{"timeoutSeconds": int64(-1),
		"exec": map[string]any{"command": []any{"true"}}}), reason: "ApplyFailed", message: "startupProbe.timeoutSeconds"},
	{what: "service account name with an underscore", change: set("pod.serviceAccountName", "bad_sa"),
		reason: "ApplyFailed", message: "serviceAccountName"},
	{what: "service account of another namespace", change: set("pod.serviceAccountName", "system:serviceaccount:kube-system:default"),
		reason: "ApplyFailed", message: "serviceAccountName"},
	{what: "negative user id", change: set("pod.securityContext", map[string]any{"runAsUser": int64(-1)}),
		reason: "ApplyFailed", message: "runAsUser"},
	{what: "node affinity with an unknown operator", change: set("pod.affinity", map[string]any{"nodeAffinity": map[string]any{
		"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{"nodeSelectorTerms": []any{map[string]any{
			"matchExpressions": []any{map[string]any{"key": "zone", "operator": "Near", "values": []any{"a"}}}}}}}}),
		reason: "ApplyFailed", message: "operator"},
	{what: "spread constraint with no skew", change: set("pod.topologySpreadConstraints", []any{map[string]any{
		"maxSkew": int64(0), "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}}),
		reason: "ApplyFailed", message: "maxSkew"},
	{what: "sysctl with a bad name", change: set("pod.securityContext", map[string]any{"sysctls": []any{map[string]any{"name": "no such", "value": "1"}}}),
		reason: "ApplyFailed", message: "sysctls"},
}

// validSpec is a spec the schema accepts; each case changes one thing in it.
func validSpec() map[string]any {
	return map[string]any{
		"image":  "example.com/app:1",
		"ports":  []any{port("http", 8080)},
		"config": map[string]any{"app.conf": "level=info\n"},
	}
}

// newBadInstallation returns the Installation of a case in namespace ns.
func newBadInstallation(ns string, c badCase) *unstructured.Unstructured {
	obj := map[string]any{
		"apiVersion": linv1.SchemeGroupVersion.String(), "kind": "Installation",
		"metadata": map[string]any{"name": c.name, "namespace": ns},
		"spec":     validSpec(),
	}
	if c.change != nil {
		c.change(obj)
	}
	return &unstructured.Unstructured{Object: obj}
}

// TestBadInstallations sends every bad Installation of the tables to the API
// server, with the operator running: the schema rejects the first kind, naming
// the field; the second kind ends Degraded with its reason and no child at
// all. A good Installation made afterwards is still reconciled.
func TestBadInstallations(t *testing.T) {
	if n := len(schemaInvalid) + len(unreconcilable); n < 40 {
		t.Fatalf("the table holds %d bad Installations, want at least 40", n)
	}
	ns := harness.Namespace(t, testEnv.Client)
	guardPVCs(t, testEnv.Client, linClient, ns)
	harness.StartOperator(t, testEnv.Config, harness.Options{Namespaces: []string{ns}})
	dyn := dynamic.NewForConfigOrDie(testEnv.Config).Resource(installationsGVR).Namespace(ns)

	t.Run("RejectedByTheSchema", func(t *testing.T) {
		for _, c := range schemaInvalid {
			t.Run(c.what, func(t *testing.T) {
				if c.name == "" {
					c.name = "bad"
				}
				_, err := dyn.Create(context.Background(), newBadInstallation(ns, c),
					metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict})
				if err == nil {
					t.Fatal("the API server accepted it")
				}
				if !strings.Contains(err.Error(), c.rejected) {
					t.Errorf("the error does not name %q: %v", c.rejected, err)
				}
			})
		}
	})
	t.Run("Degraded", func(t *testing.T) {
		for i, c := range unreconcilable {
			c.name = fmt.Sprintf("bad-%02d", i)
			t.Run(c.what, func(t *testing.T) {
				t.Parallel()
				checkDegraded(t, dyn, ns, c)
			})
		}
	})
	good := harness.NewInstallation(ns, "good")
	if _, err := linClient.LinV1().Installations(ns).Create(context.Background(), good, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "Installation good to be Ready", func(ctx context.Context) error {
		inst, err := linClient.LinV1().Installations(ns).Get(ctx, "good", metav1.GetOptions{})
		if err == nil && inst.Status.Phase != linv1.PhaseReady {
			err = fmt.Errorf("phase %q", inst.Status.Phase)
		}
		return err
	})
}

// checkDegraded creates the Installation of an unreconcilable case, waits
// until its status says Degraded with the case's reason for its generation,
// and checks that it has no child at all: nothing half-made is left behind.
func checkDegraded(t *testing.T, dyn dynamic.ResourceInterface, ns string, c badCase) {
	created, err := dyn.Create(context.Background(), newBadInstallation(ns, c), metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict})
	if err != nil {
		t.Fatalf("the API server refused it: %v", err)
	}
	waitFor(t, time.Minute, c.name+" to be Degraded", func(ctx context.Context) error {
		inst, err := linClient.LinV1().Installations(ns).Get(ctx, c.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		d := apimeta.FindStatusCondition(inst.Status.Conditions, linv1.ConditionDegraded)
		if inst.Status.ObservedGeneration != created.GetGeneration() || inst.Status.Phase != linv1.PhaseDegraded || d == nil {
			return fmt.Errorf("observed generation %d of %d, phase %q", inst.Status.ObservedGeneration, created.GetGeneration(), inst.Status.Phase)
		}
		if d.Status != metav1.ConditionTrue || d.Reason != c.reason || !strings.Contains(d.Message, c.message) {
			return fmt.Errorf("Degraded is %s with reason %s and message %q; want True, %s and a message naming %q",
				d.Status, d.Reason, d.Message, c.reason, c.message)
		}
		return nil
	})
	if children := childrenOf(t, ns, c.name); len(children) > 0 {
		t.Errorf("half-made children left behind: %s", strings.Join(children, ", "))
	}
}

// childrenOf lists the managed ConfigMaps, Services and StatefulSets of the
// Installation name, as "Kind name".
func childrenOf(t *testing.T, ns, name string) []string {
	t.Helper()
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: resources.LabelInstallation + "=" + name}
	var out []string
	cms, err := testEnv.Client.CoreV1().ConfigMaps(ns).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range cms.Items {
		out = append(out, "ConfigMap "+o.Name)
	}
	svcs, err := testEnv.Client.CoreV1().Services(ns).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range svcs.Items {
		out = append(out, "Service "+o.Name)
	}
	sets, err := testEnv.Client.AppsV1().StatefulSets(ns).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range sets.Items {
		out = append(out, "StatefulSet "+o.Name)
	}
	return out
}

// waitFor polls cond until it returns nil, and fails the test
// with its last error after timeout.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func(ctx context.Context) error) {
	t.Helper()
	harness.Eventually(t, timeout, what, func(ctx context.Context) (bool, error) {
		err := cond(ctx)
		return err == nil, err
	})
}
