package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/resources"
	"lin.dev/lin-operator/test/harness"
)

// installationsGVR is the resource of Installations.
var installationsGVR = schema.GroupVersionResource{Group: "lin.dev", Version: "v1", Resource: "installations"}

// validSpec is a spec the schema accepts; cases change one thing in it.
func validSpec() map[string]any {
	return map[string]any{
		"image": "example.com/app:1",
		"ports": []any{map[string]any{"name": "http", "containerPort": int64(8080)}},
	}
}

// installation returns an unstructured Installation with a spec.
func installation(ns, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "lin.dev/v1", "kind": "Installation",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     spec,
	}}
}

func TestExamplesAreAccepted(t *testing.T) {
	ns := harness.Namespace(t, testEnv.Client)
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples found: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var obj unstructured.Unstructured
			if err := yaml.Unmarshal(data, &obj.Object); err != nil {
				t.Fatalf("parsing: %v", err)
			}
			if _, err := dynClient.Resource(installationsGVR).Namespace(ns).Create(context.Background(), &obj, metav1.CreateOptions{}); err != nil {
				t.Fatalf("the API server refused %s: %v", file, err)
			}
		})
	}
}

func TestBadInstallationsAreRejectedNamingTheField(t *testing.T) {
	ns := harness.Namespace(t, testEnv.Client)
	with := func(change func(spec map[string]any)) map[string]any {
		s := validSpec()
		change(s)
		return s
	}
	port := func(fields map[string]any) []any {
		p := map[string]any{"name": "http", "containerPort": int64(8080)}
		for k, v := range fields {
			p[k] = v
		}
		return []any{p}
	}
	for _, tc := range []struct {
		name     string
		objName  string
		spec     map[string]any
		wantText string
	}{
		{"image missing", "", with(func(s map[string]any) { delete(s, "image") }), "spec.image"},
		{"image empty", "", with(func(s map[string]any) { s["image"] = "" }), "spec.image"},
		{"replicas negative", "", with(func(s map[string]any) { s["replicas"] = int64(-1) }), "spec.replicas"},
		{"replicas over 1000", "", with(func(s map[string]any) { s["replicas"] = int64(1001) }), "spec.replicas"},
		{"shards zero", "", with(func(s map[string]any) { s["shards"] = int64(0) }), "spec.shards"},
		{"shards over 64", "", with(func(s map[string]any) { s["shards"] = int64(65) }), "spec.shards"},
		{"name longer than 40", strings.Repeat("a", 41), validSpec(), "metadata.name must be at most 40"},
		{"name not a DNS-1035 label", "1abc", validSpec(), "metadata.name must be a DNS-1035 label"},
		{"a NodePort Service without ports", "", with(func(s map[string]any) {
			delete(s, "ports")
			s["service"] = map[string]any{"type": "NodePort"}
		}), "spec.service.type NodePort or LoadBalancer needs spec.ports"},
		{"a LoadBalancer Service with empty ports", "", with(func(s map[string]any) {
			s["ports"] = []any{}
			s["service"] = map[string]any{"type": "LoadBalancer"}
		}), "spec.service.type NodePort or LoadBalancer needs spec.ports"},
		{"port name upper case", "", with(func(s map[string]any) { s["ports"] = port(map[string]any{"name": "HTTP"}) }), "spec.ports[0].name"},
		{"port name too long", "", with(func(s map[string]any) { s["ports"] = port(map[string]any{"name": "abcdefghijklmnop"}) }), "spec.ports[0].name"},
		{"port name without a letter", "", with(func(s map[string]any) { s["ports"] = port(map[string]any{"name": "8080"}) }), "spec.ports[0].name"},
		{"port name with --", "", with(func(s map[string]any) { s["ports"] = port(map[string]any{"name": "a--b"}) }), "spec.ports[0].name"},
		{"port number zero", "", with(func(s map[string]any) { s["ports"] = port(map[string]any{"containerPort": int64(0)}) }), "spec.ports[0].containerPort"},
		{"port number over 65535", "", with(func(s map[string]any) { s["ports"] = port(map[string]any{"containerPort": int64(70000)}) }), "spec.ports[0].containerPort"},
		{"protocol not an enum", "", with(func(s map[string]any) { s["ports"] = port(map[string]any{"protocol": "HTTP"}) }), "spec.ports[0].protocol"},
		{"duplicate port names", "", with(func(s map[string]any) {
			s["ports"] = []any{map[string]any{"name": "a", "containerPort": int64(1)}, map[string]any{"name": "a", "containerPort": int64(2)}}
		}), "spec.ports[1]"},
		{"duplicate port numbers", "", with(func(s map[string]any) {
			s["ports"] = []any{map[string]any{"name": "a", "containerPort": int64(1)}, map[string]any{"name": "b", "containerPort": int64(1)}}
		}), "spec.ports: containerPort and protocol must be unique"},
		{"duplicate service ports", "", with(func(s map[string]any) {
			s["ports"] = []any{map[string]any{"name": "a", "containerPort": int64(1), "servicePort": int64(80)},
				map[string]any{"name": "b", "containerPort": int64(80)}}
		}), "spec.ports: servicePort"},
		{"config key with a slash", "", with(func(s map[string]any) { s["config"] = map[string]any{"a/b": "x"} }), "spec.config keys must be valid ConfigMap keys"},
		{"config key ..", "", with(func(s map[string]any) { s["config"] = map[string]any{"..data": "x"} }), "spec.config keys must be valid ConfigMap keys"},
		{"imagePullPolicy not an enum", "", with(func(s map[string]any) { s["imagePullPolicy"] = "Sometimes" }), "spec.imagePullPolicy"},
		{"service type not an enum", "", with(func(s map[string]any) { s["service"] = map[string]any{"type": "ExternalName"} }), "spec.service.type"},
		{"podManagementPolicy not an enum", "", with(func(s map[string]any) { s["podManagementPolicy"] = "Random" }), "spec.podManagementPolicy"},
		{"storage without size", "", with(func(s map[string]any) { s["storage"] = map[string]any{} }), "spec.storage.size"},
		{"reclaimPolicy not an enum", "", with(func(s map[string]any) {
			s["storage"] = map[string]any{"size": "1Gi", "reclaimPolicy": "Keep"}
		}), "spec.storage.reclaimPolicy"},
		{"storage mounted over the config", "", with(func(s map[string]any) {
			s["storage"] = map[string]any{"size": "1Gi", "mountPath": "/etc/installation"}
		}), "spec.storage.mountPath must differ from spec.configMountPath"},
		{"configMountPath relative", "", with(func(s map[string]any) { s["configMountPath"] = "etc/x" }), "spec.configMountPath"},
		{"unknown access mode", "", with(func(s map[string]any) {
			s["storage"] = map[string]any{"size": "1Gi", "accessModes": []any{"ReadWriteSometimes"}}
		}), "spec.storage.accessModes[0]"},
		{"maxUnavailable negative", "", with(func(s map[string]any) {
			s["disruption"] = map[string]any{"maxUnavailable": int64(-1)}
		}), "spec.disruption.maxUnavailable must be"},
		{"maxUnavailable over 100%", "", with(func(s map[string]any) {
			s["disruption"] = map[string]any{"maxUnavailable": "150%"}
		}), "spec.disruption.maxUnavailable must be"},
		{"maxUnavailable a word", "", with(func(s map[string]any) {
			s["disruption"] = map[string]any{"maxUnavailable": "one"}
		}), "spec.disruption.maxUnavailable must be"},
		{"rollout strategy not an enum", "", with(func(s map[string]any) {
			s["rollout"] = map[string]any{"strategy": "OneByOne"}
		}), "spec.rollout.strategy"},
		{"rollout maxUnavailable zero", "", with(func(s map[string]any) {
			s["rollout"] = map[string]any{"maxUnavailable": int64(0)}
		}), "spec.rollout.maxUnavailable must be"},
		{"rollout maxUnavailable 0%", "", with(func(s map[string]any) {
			s["rollout"] = map[string]any{"maxUnavailable": "0%"}
		}), "spec.rollout.maxUnavailable must be"},
		{"progressDeadlineSeconds zero", "", with(func(s map[string]any) {
			s["rollout"] = map[string]any{"progressDeadlineSeconds": int64(0)}
		}), "spec.rollout.progressDeadlineSeconds"},
		{"disruption enabled not a bool", "", with(func(s map[string]any) {
			s["disruption"] = map[string]any{"enabled": "yes"}
		}), "spec.disruption.enabled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := tc.objName
			if name == "" {
				name = "bad"
			}
			_, err := dynClient.Resource(installationsGVR).Namespace(ns).Create(context.Background(),
				installation(ns, name, tc.spec), metav1.CreateOptions{})
			if err == nil {
				t.Fatal("the API server accepted it")
			}
			if !strings.Contains(err.Error(), tc.wantText) {
				t.Errorf("error %q does not name %q", err, tc.wantText)
			}
		})
	}
}

func TestDisruptionAcceptsNumbersAndPercentages(t *testing.T) {
	ns := harness.Namespace(t, testEnv.Client)
	for i, v := range []any{int64(0), int64(3), "0%", "25%", "100%"} {
		spec := validSpec()
		spec["disruption"] = map[string]any{"maxUnavailable": v}
		if _, err := dynClient.Resource(installationsGVR).Namespace(ns).Create(context.Background(),
			installation(ns, fmt.Sprintf("budget-%d", i), spec), metav1.CreateOptions{}); err != nil {
			t.Errorf("maxUnavailable %v refused: %v", v, err)
		}
	}
}

// TestStorageChangesOnlyInSizeAndReclaimPolicy edits storage after
// creation: it may grow and change its reclaim policy, nothing else.
func TestStorageChangesOnlyInSizeAndReclaimPolicy(t *testing.T) {
	ns := harness.Namespace(t, testEnv.Client)
	ctx := context.Background()
	withStorage := validSpec()
	withStorage["storage"] = map[string]any{"size": "1Gi"}
	for _, tc := range []struct {
		name     string
		spec     map[string]any
		change   func(obj *unstructured.Unstructured)
		wantText string
	}{
		{"size shrunk", withStorage, func(o *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(o.Object, "512Mi", "spec", "storage", "size")
		}, "spec.storage.size may grow, never shrink"},
		{"class changed", withStorage, func(o *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(o.Object, "other", "spec", "storage", "storageClassName")
		}, "spec.storage is immutable after creation but for size"},
		{"mount path changed", withStorage, func(o *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(o.Object, "/elsewhere", "spec", "storage", "mountPath")
		}, "spec.storage is immutable after creation but for size"},
		{"claim labels added", withStorage, func(o *unstructured.Unstructured) {
			_ = unstructured.SetNestedStringMap(o.Object, map[string]string{"a": "b"}, "spec", "storage", "labels")
		}, "spec.storage is immutable after creation but for size"},
		{"size grown", withStorage, func(o *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(o.Object, "2Gi", "spec", "storage", "size")
		}, ""},
		{"reclaim policy changed", withStorage, func(o *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(o.Object, "Delete", "spec", "storage", "reclaimPolicy")
		}, ""},
		{"storage removed", withStorage, func(o *unstructured.Unstructured) {
			unstructured.RemoveNestedField(o.Object, "spec", "storage")
		}, "spec.storage cannot be added or removed after creation"},
		{"storage added", validSpec(), func(o *unstructured.Unstructured) {
			_ = unstructured.SetNestedMap(o.Object, map[string]any{"size": "1Gi"}, "spec", "storage")
		}, "spec.storage cannot be added or removed after creation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := strings.ReplaceAll(tc.name, " ", "-")
			created, err := dynClient.Resource(installationsGVR).Namespace(ns).Create(ctx, installation(ns, name, tc.spec), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			tc.change(created)
			_, err = dynClient.Resource(installationsGVR).Namespace(ns).Update(ctx, created, metav1.UpdateOptions{})
			switch {
			case tc.wantText == "" && err != nil:
				t.Errorf("update refused: %v", err)
			case tc.wantText != "" && (err == nil || !strings.Contains(err.Error(), tc.wantText)):
				t.Errorf("update error = %v, want one saying %q", err, tc.wantText)
			}
		})
	}
}

func TestDefaultsAreAppliedByTheServer(t *testing.T) {
	ns := harness.Namespace(t, testEnv.Client)
	spec := validSpec()
	spec["storage"] = map[string]any{"size": "1Gi"}
	if _, err := dynClient.Resource(installationsGVR).Namespace(ns).Create(context.Background(),
		installation(ns, "defaults", spec), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := linClient.LinV1().Installations(ns).Get(context.Background(), "defaults", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := got.Spec
	for _, c := range []struct {
		field     string
		got, want any
	}{
		{"replicas", *s.Replicas, int32(1)},
		{"shards", *s.Shards, int32(1)},
		{"ports[0].protocol", string(s.Ports[0].Protocol), "TCP"},
		{"configMountPath", s.ConfigMountPath, "/etc/installation"},
		{"service.type", string(s.Service.Type), "ClusterIP"},
		{"podManagementPolicy", string(s.PodManagementPolicy), "OrderedReady"},
		{"storage.accessModes", len(s.Storage.AccessModes) == 1 && s.Storage.AccessModes[0] == "ReadWriteOnce", true},
		{"storage.mountPath", s.Storage.MountPath, "/var/lib/installation"},
		{"storage.reclaimPolicy", s.Storage.ReclaimPolicy, linv1.ReclaimRetain},
		{"disruption.enabled", *s.Disruption.Enabled, true},
		{"disruption.maxUnavailable", s.Disruption.MaxUnavailable.String(), "1"},
		{"rollout.strategy", s.Rollout.Strategy, linv1.RolloutShardByShard},
		{"rollout.maxUnavailable", s.Rollout.MaxUnavailable.String(), "1"},
		{"rollout.progressDeadlineSeconds", *s.Rollout.ProgressDeadlineSeconds, int32(600)},
	} {
		if c.got != c.want {
			t.Errorf("spec.%s = %v, want %v", c.field, c.got, c.want)
		}
	}
}

// TestShardsTimesReplicasAreBoundedByThePeerList creates, for names of 40
// and of 5 characters, an Installation at the most replicas per shard that
// the peer list can name, and scales it one further, as kubectl scale does:
// the scale is refused with a message naming spec.replicas and the bound.
func TestShardsTimesReplicasAreBoundedByThePeerList(t *testing.T) {
	ns := harness.Namespace(t, testEnv.Client)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		shards int32
	}{{"l" + strings.Repeat("o", 38) + "g", 64}, {"short", 7}} {
		most := resources.MaxTopologyReplicas(len(tc.name), tc.shards)
		inst := harness.NewInstallation(ns, tc.name)
		inst.Spec.Shards, inst.Spec.Replicas = ptr.To(tc.shards), ptr.To(most)
		if _, err := linClient.LinV1().Installations(ns).Create(ctx, inst, metav1.CreateOptions{}); err != nil {
			t.Errorf("%d shards x %d replicas with a name of %d characters refused: %v", tc.shards, most, len(tc.name), err)
			continue
		}
		installations := dynClient.Resource(installationsGVR).Namespace(ns)
		scale, err := installations.Get(ctx, tc.name, metav1.GetOptions{}, "scale")
		if err != nil {
			t.Fatal(err)
		}
		if err := unstructured.SetNestedField(scale.Object, int64(most+1), "spec", "replicas"); err != nil {
			t.Fatal(err)
		}
		_, err = installations.Update(ctx, scale, metav1.UpdateOptions{}, "scale")
		const want = "are more pods than the peer list (the topology ConfigMap, at most 1 MiB) can name"
		if err == nil || !strings.Contains(err.Error(), "spec.replicas") || !strings.Contains(err.Error(), want) {
			t.Errorf("scaling %s to %d: error %v, want one naming spec.replicas and saying %q", tc.name, most+1, err, want)
		}
		t.Logf("a name of %d characters: %d shards x %d replicas accepted, %d refused", len(tc.name), tc.shards, most, most+1)
	}
}

// TestNewFieldsAreExplained asks kubectl explain, as a user would, for the
// fields a production Installation needs, and checks that each has its doc.
func TestNewFieldsAreExplained(t *testing.T) {
	for field, doc := range map[string]string{
		"spec.service.externalTrafficPolicy":    "keeps the client's source address",
		"spec.service.loadBalancerSourceRanges": "limit the clients of a LoadBalancer Service",
		"spec.service.loadBalancerClass":        "It cannot change once set",
		"spec.ports.nodePort":                   "fixes the node port of the client Service",
		"spec.ports":                            "With none there is no client Service",
		"status.endpoint":                       "empty when spec.ports has none",
		"spec.headlessService.labels":           "Labels added to the objects",
		"spec.statefulSets.annotations":         "Annotations added to the objects",
		"spec.storage.labels":                   "backup tools select claims by label",
		"spec.storage.annotations":              "Annotations added to every PVC",
		"spec.securityContext":                  "allowPrivilegeEscalation false and capabilities.drop [ALL] here",
		"spec.lifecycle":                        "a preStop hook can let a member leave its cluster",
		"spec.volumeMounts":                     "mount spec.volumes here",
		"spec.initContainers":                   "one with restartPolicy Always is a sidecar",
		"spec.containers":                       "a metrics exporter, a backup agent",
		"spec.volumes":                          "beside the operator's own (config, topology and data)",
	} {
		var out []byte
		// The API server publishes the CRD's OpenAPI a moment after it is established.
		harness.Eventually(t, timeout, "kubectl explain installations."+field, func(ctx context.Context) (bool, error) {
			var err error
			out, err = testEnv.Kubectl(ctx, "explain", "installations."+field)
			return err == nil, err
		})
		if !strings.Contains(strings.Join(strings.Fields(string(out)), " "), doc) {
			t.Errorf("kubectl explain installations.%s does not say %q:\n%s", field, doc, out)
		}
	}
}

func TestLoadBalancerClassIsImmutable(t *testing.T) {
	ns := harness.Namespace(t, testEnv.Client)
	ctx := context.Background()
	spec := validSpec()
	spec["service"] = map[string]any{"type": "LoadBalancer", "loadBalancerClass": "example.com/a"}
	created, err := dynClient.Resource(installationsGVR).Namespace(ns).Create(ctx, installation(ns, "lb", spec), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, change := range []func(o *unstructured.Unstructured){
		func(o *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(o.Object, "example.com/b", "spec", "service", "loadBalancerClass")
		},
		func(o *unstructured.Unstructured) {
			unstructured.RemoveNestedField(o.Object, "spec", "service", "loadBalancerClass")
		},
	} {
		o := created.DeepCopy()
		change(o)
		_, err := dynClient.Resource(installationsGVR).Namespace(ns).Update(ctx, o, metav1.UpdateOptions{})
		if err == nil || !strings.Contains(err.Error(), "spec.service.loadBalancerClass is immutable") {
			t.Errorf("update error = %v, want one saying spec.service.loadBalancerClass is immutable", err)
		}
	}
}
