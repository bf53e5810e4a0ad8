package resources_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/resources"
)

// edit is one change to an Installation and whether it should change what a
// test looks at. before, when set, prepares the Installation first.
type edit struct {
	name    string
	before  func(*linv1.Installation)
	after   func(*linv1.Installation)
	changed bool
}

// pair is the Installation before and after e, both from newInstallation(base).
func (e edit) pair(base func(*linv1.Installation)) (before, after *linv1.Installation) {
	before = newInstallation(base)
	if e.before != nil {
		e.before(before)
	}
	after = before.DeepCopy()
	e.after(after)
	return before, after
}

// withConfig is the base Installation of the edit tables: two config files,
// two shards of two pods.
func withConfig(i *linv1.Installation) {
	i.Spec.Shards = ptr.To[int32](2)
	i.Spec.Replicas = ptr.To[int32](2)
	i.Spec.Config = map[string]string{"app.conf": "listen = 9000\n", "log.conf": "level = info\n"}
}

func TestRenderingIsDeterministic(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			inst := newInstallation(tc.mod)
			orig := inst.DeepCopy()
			first := render(t, inst)
			// Several renderings, because map iteration order varies between them.
			for range 10 {
				if again := render(t, inst); !reflect.DeepEqual(first, again) {
					t.Fatalf("two renderings of the same Installation differ:\n%+v\n%+v", first, again)
				}
			}
			if other := render(t, newInstallation(tc.mod)); !reflect.DeepEqual(first, other) {
				t.Errorf("renderings of two equal Installations differ")
			}
			if !reflect.DeepEqual(inst, orig) {
				t.Errorf("rendering changed the Installation:\n got %+v\nwant %+v", inst, orig)
			}
		})
	}
}

func TestConfigHash(t *testing.T) {
	edits := []edit{
		{name: "config value", after: func(i *linv1.Installation) { i.Spec.Config["app.conf"] = "listen = 9001\n" }, changed: true},
		{name: "config key", after: func(i *linv1.Installation) {
			i.Spec.Config["logging.conf"] = i.Spec.Config["log.conf"]
			delete(i.Spec.Config, "log.conf")
		}, changed: true},
		{name: "empty file added", after: func(i *linv1.Installation) { i.Spec.Config["extra"] = "" }, changed: true},
		{name: "file removed", after: func(i *linv1.Installation) { delete(i.Spec.Config, "log.conf") }, changed: true},
		{name: "all files removed", after: func(i *linv1.Installation) { i.Spec.Config = nil }, changed: true},
		{name: "bytes moved from key to value",
			before: func(i *linv1.Installation) { i.Spec.Config = map[string]string{"ab": "c"} },
			after:  func(i *linv1.Installation) { i.Spec.Config = map[string]string{"a": "bc"} }, changed: true},
		{name: "bytes moved between files",
			before: func(i *linv1.Installation) { i.Spec.Config = map[string]string{"a": "xy", "b": "z"} },
			after:  func(i *linv1.Installation) { i.Spec.Config = map[string]string{"a": "x", "b": "yz"} }, changed: true},
		{name: "same files in a new map", after: func(i *linv1.Installation) {
			i.Spec.Config = map[string]string{"log.conf": "level = info\n", "app.conf": "listen = 9000\n"}
		}},
		{name: "nil and empty config", before: func(i *linv1.Installation) { i.Spec.Config = nil },
			after: func(i *linv1.Installation) { i.Spec.Config = map[string]string{} }},
		{name: "replicas", after: func(i *linv1.Installation) { i.Spec.Replicas = ptr.To[int32](5) }},
		{name: "shards", after: func(i *linv1.Installation) { i.Spec.Shards = ptr.To[int32](7) }},
		{name: "image", after: func(i *linv1.Installation) { i.Spec.Image = "registry.example.com/app:2.0" }},
		{name: "stop", after: func(i *linv1.Installation) { i.Spec.Stop = true }},
	}
	for _, e := range edits {
		t.Run(e.name, func(t *testing.T) {
			before, after := e.pair(withConfig)
			h1, h2 := resources.ConfigHash(before), resources.ConfigHash(after)
			if changed := h1 != h2; changed != e.changed {
				t.Errorf("config hash %s -> %s: changed = %v, want %v", h1, h2, changed, e.changed)
			}
			// The hash is what the pod template carries.
			sts := render(t, after).StatefulSets[0]
			if got := sts.Spec.Template.Annotations[resources.AnnotationConfigHash]; got != h2 {
				t.Errorf("pod template %s = %q, want %q", resources.AnnotationConfigHash, got, h2)
			}
		})
	}
}

func TestPodTemplate(t *testing.T) {
	edits := []edit{
		{name: "replicas up", after: func(i *linv1.Installation) { i.Spec.Replicas = ptr.To[int32](5) }},
		{name: "replicas down to zero", after: func(i *linv1.Installation) { i.Spec.Replicas = ptr.To[int32](0) }},
		{name: "shards up", after: func(i *linv1.Installation) { i.Spec.Shards = ptr.To[int32](4) }},
		{name: "shards down", after: func(i *linv1.Installation) { i.Spec.Shards = ptr.To[int32](1) }},
		{name: "stop", after: func(i *linv1.Installation) { i.Spec.Stop = true }},
		{name: "client service", after: func(i *linv1.Installation) { i.Spec.Service.Type = corev1.ServiceTypeNodePort }},
		{name: "config value", after: func(i *linv1.Installation) { i.Spec.Config["app.conf"] = "listen = 9001\n" }, changed: true},
		{name: "config key", after: func(i *linv1.Installation) {
			i.Spec.Config["logging.conf"] = i.Spec.Config["log.conf"]
			delete(i.Spec.Config, "log.conf")
		}, changed: true},
		{name: "image", after: func(i *linv1.Installation) { i.Spec.Image = "registry.example.com/app:2.0" }, changed: true},
	}
	for _, e := range edits {
		t.Run(e.name, func(t *testing.T) {
			before, after := e.pair(withConfig)
			old, cur := render(t, before).StatefulSets, render(t, after).StatefulSets
			for s := range min(len(old), len(cur)) {
				changed := !reflect.DeepEqual(old[s].Spec.Template, cur[s].Spec.Template)
				if changed != e.changed {
					t.Errorf("shard %d: pod template changed = %v, want %v", s, changed, e.changed)
				}
			}
		})
	}
}

func TestSpecHash(t *testing.T) {
	const sts = "demo-0 demo-1"
	tests := []struct {
		name  string
		after func(*linv1.Installation)
		// changes lists the children whose spec hash changes; the others keep theirs.
		changes string
	}{
		{name: "nothing", after: func(*linv1.Installation) {}},
		{name: "replicas", after: func(i *linv1.Installation) { i.Spec.Replicas = ptr.To[int32](3) }, changes: "demo-topology " + sts},
		{name: "shards", after: func(i *linv1.Installation) { i.Spec.Shards = ptr.To[int32](3) }, changes: "demo-topology"},
		{name: "stop", after: func(i *linv1.Installation) { i.Spec.Stop = true }, changes: sts},
		{name: "image", after: func(i *linv1.Installation) { i.Spec.Image = "registry.example.com/app:2.0" }, changes: sts},
		{name: "config", after: func(i *linv1.Installation) { i.Spec.Config["app.conf"] = "listen = 9001\n" }, changes: "demo-config " + sts},
		{name: "pod annotation", after: func(i *linv1.Installation) { i.Spec.Pod.Annotations = map[string]string{"a": "b"} }, changes: sts},
		{name: "client service labels", after: func(i *linv1.Installation) {
			i.Spec.Service.Labels = map[string]string{"exposure": "public"}
		}, changes: "demo"},
		{name: "client service annotations", after: func(i *linv1.Installation) {
			i.Spec.Service.Annotations = map[string]string{"a": "b"}
		}, changes: "demo"},
		{name: "client service type", after: func(i *linv1.Installation) { i.Spec.Service.Type = corev1.ServiceTypeLoadBalancer }, changes: "demo"},
		{name: "port added", after: func(i *linv1.Installation) {
			i.Spec.Ports = append(i.Spec.Ports, linv1.InstallationPort{Name: "admin", ContainerPort: 9001})
		}, changes: "demo-topology demo-headless demo " + sts},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before, after := edit{after: tc.after}.pair(withConfig)
			// By kind and name: a shard's StatefulSet and budget share a name.
			old := map[string]string{}
			for _, obj := range render(t, before).Objects() {
				old[fmt.Sprintf("%T/%s", obj, obj.GetName())] = obj.GetAnnotations()[resources.AnnotationSpecHash]
			}
			want := strings.Fields(tc.changes)
			var changed []string
			for _, obj := range render(t, after).Objects() {
				h1, ok := old[fmt.Sprintf("%T/%s", obj, obj.GetName())]
				h2 := obj.GetAnnotations()[resources.AnnotationSpecHash]
				if h2 == "" {
					t.Fatalf("%s: no %s annotation", obj.GetName(), resources.AnnotationSpecHash)
				}
				if ok && h1 != h2 {
					changed = append(changed, obj.GetName())
				}
			}
			if strings.Join(changed, " ") != strings.Join(want, " ") {
				t.Errorf("spec hash changed on %v, want %v", changed, want)
			}
		})
	}
}

func TestTopologyChanges(t *testing.T) {
	edits := []edit{
		{name: "shards", after: func(i *linv1.Installation) { i.Spec.Shards = ptr.To[int32](3) }, changed: true},
		{name: "replicas", after: func(i *linv1.Installation) { i.Spec.Replicas = ptr.To[int32](3) }, changed: true},
		{name: "replicas to zero", after: func(i *linv1.Installation) { i.Spec.Replicas = ptr.To[int32](0) }, changed: true},
		{name: "ports", after: func(i *linv1.Installation) {
			i.Spec.Ports = append(i.Spec.Ports, linv1.InstallationPort{Name: "gossip", ContainerPort: 7946, Protocol: corev1.ProtocolUDP})
		}, changed: true},
		// The peer list describes the cluster as configured, running or not.
		{name: "stop", after: func(i *linv1.Installation) { i.Spec.Stop = true }},
		{name: "image", after: func(i *linv1.Installation) { i.Spec.Image = "registry.example.com/app:2.0" }},
		{name: "config", after: func(i *linv1.Installation) { i.Spec.Config["app.conf"] = "listen = 9001\n" }},
	}
	for _, e := range edits {
		t.Run(e.name, func(t *testing.T) {
			before, after := e.pair(withConfig)
			old, cur := render(t, before).ConfigMaps[1], render(t, after).ConfigMaps[1]
			if changed := !reflect.DeepEqual(old.Data, cur.Data); changed != e.changed {
				t.Errorf("topology data changed = %v, want %v", changed, e.changed)
			}
			h1, h2 := old.Annotations[resources.AnnotationSpecHash], cur.Annotations[resources.AnnotationSpecHash]
			if changed := h1 != h2; changed != e.changed {
				t.Errorf("topology spec hash %s -> %s: changed = %v, want %v", h1, h2, changed, e.changed)
			}
		})
	}
}

func TestTopologyContent(t *testing.T) {
	inst := newInstallation(func(i *linv1.Installation) {
		i.Spec.Shards = ptr.To[int32](2)
		i.Spec.Replicas = ptr.To[int32](2)
		i.Spec.Ports = append(i.Spec.Ports, linv1.InstallationPort{Name: "gossip", ContainerPort: 7946, Protocol: corev1.ProtocolUDP, ServicePort: 17946})
	})
	cm, err := resources.NewTopologyConfigMap(inst, "example.org")
	if err != nil {
		t.Fatal(err)
	}
	if cm.Name != "demo-topology" || cm.Namespace != "ns" {
		t.Errorf("topology ConfigMap is %s/%s, want ns/demo-topology", cm.Namespace, cm.Name)
	}
	wantHosts := "demo-0-0.demo-headless.ns.svc.example.org\n" +
		"demo-0-1.demo-headless.ns.svc.example.org\n" +
		"demo-1-0.demo-headless.ns.svc.example.org\n" +
		"demo-1-1.demo-headless.ns.svc.example.org\n"
	if got := cm.Data[resources.HostsFile]; got != wantHosts {
		t.Errorf("hosts:\n%s\nwant:\n%s", got, wantHosts)
	}
	var got resources.Topology
	if err := json.Unmarshal([]byte(cm.Data[resources.TopologyFile]), &got); err != nil {
		t.Fatalf("topology.json: %v", err)
	}
	want := resources.Topology{
		Installation: "demo",
		Namespace:    "ns",
		Shards: []resources.TopologyShard{
			{Index: 0, StatefulSet: "demo-0", Replicas: []string{
				"demo-0-0.demo-headless.ns.svc.example.org", "demo-0-1.demo-headless.ns.svc.example.org"}},
			{Index: 1, StatefulSet: "demo-1", Replicas: []string{
				"demo-1-0.demo-headless.ns.svc.example.org", "demo-1-1.demo-headless.ns.svc.example.org"}},
		},
		// The pods are reached directly, on their container ports.
		Ports: []resources.TopologyPort{
			{Name: "client", Port: 9000, Protocol: corev1.ProtocolTCP},
			{Name: "gossip", Port: 7946, Protocol: corev1.ProtocolUDP},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("topology.json = %+v\nwant %+v", got, want)
	}
	if len(cm.Data) != 2 {
		t.Errorf("topology data has keys %v, want only %s and %s", keys(cm.Data), resources.TopologyFile, resources.HostsFile)
	}
}

func TestConfigSizeLimit(t *testing.T) {
	tests := []struct {
		name    string
		config  map[string]string
		invalid bool
	}{
		{name: "at the limit", config: map[string]string{"a": strings.Repeat("x", resources.MaxConfigMapSize-1)}},
		{name: "one byte over, counting the key", config: map[string]string{"a": strings.Repeat("x", resources.MaxConfigMapSize)}, invalid: true},
		{name: "over in several files", config: map[string]string{
			"one": strings.Repeat("x", 400*1024), "two": strings.Repeat("y", 400*1024), "three": strings.Repeat("z", 400*1024),
		}, invalid: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inst := newInstallation(func(i *linv1.Installation) { i.Spec.Config = tc.config })
			cm, err := resources.NewConfigMap(inst)
			children, childrenErr := resources.NewChildren(inst, clusterDomain)
			if !tc.invalid {
				if err != nil || childrenErr != nil {
					t.Fatalf("NewConfigMap: %v; NewChildren: %v; want no error", err, childrenErr)
				}
				if !reflect.DeepEqual(cm.Data, tc.config) {
					t.Errorf("config data is not spec.config verbatim")
				}
				return
			}
			if cm != nil || children != nil {
				t.Errorf("an invalid spec rendered objects")
			}
			wantInvalidSpec(t, "NewConfigMap", err, "spec.config")
			wantInvalidSpec(t, "NewChildren", childrenErr, "spec.config")
		})
	}
}

func TestTopologySizeLimit(t *testing.T) {
	tests := []struct {
		name             string
		shards, replicas int32
		namespace        string
		invalid          bool
	}{
		{name: "largest spec in a long namespace", shards: 64, replicas: 1000, namespace: strings.Repeat("n", 63), invalid: true},
		{name: "largest spec in a short namespace", shards: 64, replicas: 1000, namespace: "ns", invalid: true},
		{name: "many pods that fit", shards: 8, replicas: 100, namespace: strings.Repeat("n", 63)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inst := newInstallation(func(i *linv1.Installation) {
				i.Namespace = tc.namespace
				i.Spec.Shards = ptr.To(tc.shards)
				i.Spec.Replicas = ptr.To(tc.replicas)
			})
			cm, err := resources.NewTopologyConfigMap(inst, clusterDomain)
			children, childrenErr := resources.NewChildren(inst, clusterDomain)
			if !tc.invalid {
				if err != nil || childrenErr != nil {
					t.Fatalf("NewTopologyConfigMap: %v; NewChildren: %v; want no error", err, childrenErr)
				}
				if n := strings.Count(cm.Data[resources.HostsFile], "\n"); n != int(tc.shards*tc.replicas) {
					t.Errorf("hosts lists %d pods, want %d", n, tc.shards*tc.replicas)
				}
				return
			}
			if cm != nil || children != nil {
				t.Errorf("an invalid spec rendered objects")
			}
			wantInvalidSpec(t, "NewTopologyConfigMap", err, "spec.shards")
			wantInvalidSpec(t, "NewChildren", childrenErr, "spec.shards")
		})
	}
}

// wantInvalidSpec fails the test unless err is an *InvalidSpecError about field.
func wantInvalidSpec(t *testing.T, call string, err error, field string) {
	t.Helper()
	var invalid *resources.InvalidSpecError
	switch {
	case !errors.As(err, &invalid):
		t.Errorf("%s: error %v, want an *InvalidSpecError", call, err)
	case invalid.Field != field:
		t.Errorf("%s: error names %q, want %q", call, invalid.Field, field)
	case !resources.IsInvalidSpec(err) || invalid.Reason == "" || !strings.HasPrefix(err.Error(), field+": "):
		t.Errorf("%s: error %q should be an InvalidSpecError with a reason", call, err)
	}
}

func TestIdentityEnv(t *testing.T) {
	inst := newInstallation(func(i *linv1.Installation) {
		i.Spec.Shards = ptr.To[int32](3)
		i.Spec.Env = []corev1.EnvVar{
			{Name: "LOG_LEVEL", Value: "debug"},
			{Name: "POD_NAME", Value: "user-pod-name"},
			{Name: "INSTALLATION_SHARD", Value: "user-shard"},
		}
	})
	for s, sts := range render(t, inst).StatefulSets {
		t.Run(sts.Name, func(t *testing.T) {
			env := sts.Spec.Template.Spec.Containers[0].Env
			want := []corev1.EnvVar{
				{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
				{Name: "INSTALLATION_NAME", Value: "demo"},
				{Name: "INSTALLATION_SHARD", Value: []string{"0", "1", "2"}[s]},
			}
			// The identity comes first; the user's variables follow, so that
			// one of the same name comes later and wins.
			want = append(want, inst.Spec.Env...)
			if !reflect.DeepEqual(env, want) {
				t.Errorf("env = %+v\nwant %+v", env, want)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	tests := []struct {
		name  string
		mod   func(*linv1.Installation)
		check func(*testing.T, *resources.Children)
	}{
		{name: "replicas and shards default to 1", mod: func(*linv1.Installation) {}, check: func(t *testing.T, c *resources.Children) {
			if len(c.StatefulSets) != 1 {
				t.Fatalf("got %d StatefulSets, want 1", len(c.StatefulSets))
			}
			if got := *c.StatefulSets[0].Spec.Replicas; got != 1 {
				t.Errorf("replicas = %d, want 1", got)
			}
			if hosts := c.ConfigMaps[1].Data[resources.HostsFile]; hosts != "demo-0-0.demo-headless.ns.svc.cluster.local\n" {
				t.Errorf("hosts = %q, want the one pod", hosts)
			}
		}},
		{name: "replicas 0 stays 0", mod: func(i *linv1.Installation) { i.Spec.Replicas = ptr.To[int32](0) }, check: func(t *testing.T, c *resources.Children) {
			if got := *c.StatefulSets[0].Spec.Replicas; got != 0 {
				t.Errorf("replicas = %d, want 0", got)
			}
		}},
		{name: "service port defaults to container port", mod: func(i *linv1.Installation) {
			i.Spec.Ports = []linv1.InstallationPort{{Name: "client", ContainerPort: 9000}, {Name: "admin", ContainerPort: 9001, ServicePort: 81}}
		}, check: func(t *testing.T, c *resources.Children) {
			for _, svc := range c.Services {
				if got := []int32{svc.Spec.Ports[0].Port, svc.Spec.Ports[1].Port}; !reflect.DeepEqual(got, []int32{9000, 81}) {
					t.Errorf("Service %s ports %v, want [9000 81]", svc.Name, got)
				}
			}
		}},
		{name: "protocol defaults to TCP", mod: func(*linv1.Installation) {}, check: func(t *testing.T, c *resources.Children) {
			for _, svc := range c.Services {
				if p := svc.Spec.Ports[0].Protocol; p != corev1.ProtocolTCP {
					t.Errorf("Service %s protocol %q, want TCP", svc.Name, p)
				}
			}
			if p := c.StatefulSets[0].Spec.Template.Spec.Containers[0].Ports[0].Protocol; p != corev1.ProtocolTCP {
				t.Errorf("container port protocol %q, want TCP", p)
			}
		}},
		{name: "client service type defaults to ClusterIP", mod: func(*linv1.Installation) {}, check: func(t *testing.T, c *resources.Children) {
			if typ := c.Services[1].Spec.Type; typ != corev1.ServiceTypeClusterIP {
				t.Errorf("client Service type %q, want ClusterIP", typ)
			}
		}},
		{name: "podManagementPolicy defaults to OrderedReady", mod: func(*linv1.Installation) {}, check: func(t *testing.T, c *resources.Children) {
			if p := c.StatefulSets[0].Spec.PodManagementPolicy; p != appsv1.OrderedReadyPodManagement {
				t.Errorf("podManagementPolicy %q, want OrderedReady", p)
			}
		}},
		{name: "mount paths default", mod: func(i *linv1.Installation) {
			i.Spec.Storage = &linv1.StorageSpec{Size: resource.MustParse("1Gi")}
		}, check: func(t *testing.T, c *resources.Children) {
			got := map[string]string{}
			for _, m := range c.StatefulSets[0].Spec.Template.Spec.Containers[0].VolumeMounts {
				got[m.Name] = m.MountPath
			}
			want := map[string]string{"config": "/etc/installation", "topology": "/etc/lin-topology", "data": "/var/lib/installation"}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("mounts %v, want %v", got, want)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, render(t, newInstallation(tc.mod)))
		})
	}
	inst := newInstallation()
	if resources.Replicas(inst) != 1 || resources.Shards(inst) != 1 || resources.DesiredReplicas(inst) != 1 {
		t.Errorf("Replicas, Shards, DesiredReplicas of an unset spec = %d, %d, %d; want 1, 1, 1",
			resources.Replicas(inst), resources.Shards(inst), resources.DesiredReplicas(inst))
	}
	if got := resources.ServicePort(linv1.InstallationPort{Name: "p", ContainerPort: 1234}); got != 1234 {
		t.Errorf("ServicePort without servicePort = %d, want 1234", got)
	}
}

func TestStorageRetention(t *testing.T) {
	tests := []struct {
		name        string
		storage     *linv1.StorageSpec
		whenDeleted appsv1.PersistentVolumeClaimRetentionPolicyType
	}{
		{name: "no storage"},
		{name: "reclaim unset", storage: &linv1.StorageSpec{Size: resource.MustParse("1Gi")},
			whenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType},
		{name: "reclaim Retain", storage: &linv1.StorageSpec{Size: resource.MustParse("1Gi"), ReclaimPolicy: linv1.ReclaimRetain},
			whenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType},
		{name: "reclaim Delete", storage: &linv1.StorageSpec{Size: resource.MustParse("1Gi"), ReclaimPolicy: linv1.ReclaimDelete},
			whenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, stop := range []bool{false, true} {
				inst := newInstallation(func(i *linv1.Installation) {
					i.Spec.Shards = ptr.To[int32](2)
					i.Spec.Storage = tc.storage
					i.Spec.Stop = stop
				})
				for _, sts := range render(t, inst).StatefulSets {
					policy := sts.Spec.PersistentVolumeClaimRetentionPolicy
					if tc.storage == nil {
						if policy != nil || len(sts.Spec.VolumeClaimTemplates) != 0 {
							t.Errorf("%s (stop %v): claim templates or retention policy without storage", sts.Name, stop)
						}
						continue
					}
					want := &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
						WhenDeleted: tc.whenDeleted,
						// Scaling down, and stop, never delete data.
						WhenScaled: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
					}
					if !reflect.DeepEqual(policy, want) {
						t.Errorf("%s (stop %v): retention policy %+v, want %+v", sts.Name, stop, policy, want)
					}
					if n := len(sts.Spec.VolumeClaimTemplates); n != 1 || sts.Spec.VolumeClaimTemplates[0].Name != resources.DataVolume {
						t.Errorf("%s (stop %v): want one claim template named %s", sts.Name, stop, resources.DataVolume)
					}
				}
			}
		})
	}
}

func TestStop(t *testing.T) {
	running := render(t, newInstallation(func(i *linv1.Installation) {
		i.Spec.Shards = ptr.To[int32](3)
		i.Spec.Replicas = ptr.To[int32](4)
	}))
	stopped := render(t, newInstallation(func(i *linv1.Installation) {
		i.Spec.Shards = ptr.To[int32](3)
		i.Spec.Replicas = ptr.To[int32](4)
		i.Spec.Stop = true
	}))
	if len(stopped.StatefulSets) != 3 {
		t.Fatalf("stopped: %d StatefulSets, want 3", len(stopped.StatefulSets))
	}
	for s, sts := range stopped.StatefulSets {
		if *sts.Spec.Replicas != 0 {
			t.Errorf("stopped %s: replicas %d, want 0", sts.Name, *sts.Spec.Replicas)
		}
		if !reflect.DeepEqual(sts.Spec.Template, running.StatefulSets[s].Spec.Template) {
			t.Errorf("stopped %s: pod template differs from the running one", sts.Name)
		}
	}
	// ConfigMaps and Services stay as they are.
	if !reflect.DeepEqual(stopped.ConfigMaps, running.ConfigMaps) || !reflect.DeepEqual(stopped.Services, running.Services) {
		t.Errorf("stop changed the ConfigMaps or the Services")
	}
}

func TestOwnerReferences(t *testing.T) {
	want := metav1.OwnerReference{
		APIVersion:         "lin.dev/v1",
		Kind:               "Installation",
		Name:               "demo",
		UID:                "uid-1",
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			inst := newInstallation(tc.mod)
			for _, obj := range render(t, inst).Objects() {
				refs := obj.GetOwnerReferences()
				if len(refs) != 1 || !reflect.DeepEqual(refs[0], want) {
					t.Errorf("%s: owner references %+v, want only %+v", obj.GetName(), refs, want)
				}
				if !metav1.IsControlledBy(obj, inst) {
					t.Errorf("%s: not controlled by the Installation", obj.GetName())
				}
				if obj.GetNamespace() != "ns" {
					t.Errorf("%s: namespace %q, want ns", obj.GetName(), obj.GetNamespace())
				}
			}
		})
	}
}

func TestNamesAndLabels(t *testing.T) {
	inst := newInstallation(func(i *linv1.Installation) {
		i.Spec.Shards = ptr.To[int32](3)
		i.Spec.Pod.Labels = map[string]string{"lin.dev/shard": "user", "team": "storage"}
		i.Spec.Service.Labels = map[string]string{"lin.dev/installation": "user"}
	})
	c := render(t, inst)
	// Each shard's StatefulSet, then each shard's PodDisruptionBudget.
	wantNames := []string{"demo-config", "demo-topology", "demo-headless", "demo", "demo-0", "demo-1", "demo-2", "demo-0", "demo-1", "demo-2"}
	var names []string
	for _, obj := range c.Objects() {
		names = append(names, obj.GetName())
	}
	if !reflect.DeepEqual(names, wantNames) {
		t.Errorf("children %v, want %v", names, wantNames)
	}
	common := map[string]string{
		"app.kubernetes.io/name":       "installation",
		"app.kubernetes.io/instance":   "demo",
		"app.kubernetes.io/managed-by": "lin-operator",
		"lin.dev/installation":         "demo",
	}
	for _, obj := range c.Objects() {
		t.Run(obj.GetName(), func(t *testing.T) {
			for k, v := range common {
				if got := obj.GetLabels()[k]; got != v {
					t.Errorf("label %s = %q, want %q", k, got, v)
				}
			}
			shard, isShard := obj.GetLabels()[resources.LabelShard]
			switch obj.(type) {
			case *appsv1.StatefulSet, *policyv1.PodDisruptionBudget:
				if want := strings.TrimPrefix(obj.GetName(), "demo-"); shard != want {
					t.Errorf("label %s = %q, want %q", resources.LabelShard, shard, want)
				}
			default:
				if isShard {
					t.Errorf("label %s on an object of no shard", resources.LabelShard)
				}
			}
			if obj.GetAnnotations()[resources.AnnotationSpecHash] == "" {
				t.Errorf("no %s annotation", resources.AnnotationSpecHash)
			}
		})
	}
	for s, sts := range c.StatefulSets {
		pod := labels.Set(sts.Spec.Template.Labels)
		if pod[resources.LabelShard] != sts.Labels[resources.LabelShard] || pod["team"] != "storage" {
			t.Errorf("%s: pod labels %v, want the shard's and the user's", sts.Name, pod)
		}
		if sel, err := metav1.LabelSelectorAsSelector(sts.Spec.Selector); err != nil || !sel.Matches(pod) {
			t.Errorf("%s: selector %v does not select its pods %v", sts.Name, sts.Spec.Selector, pod)
		}
		for _, other := range c.StatefulSets[s+1:] {
			if sel, _ := metav1.LabelSelectorAsSelector(other.Spec.Selector); sel.Matches(pod) {
				t.Errorf("%s selects the pods of %s", other.Name, sts.Name)
			}
		}
		// Each budget guards the pods of its own shard and of no other.
		for b, pdb := range c.PodDisruptionBudgets {
			sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
			if err != nil {
				t.Fatalf("budget %s: %v", pdb.Name, err)
			}
			if sel.Matches(pod) != (b == s) {
				t.Errorf("budget %s selects the pods of %s: %v, want %v", pdb.Name, sts.Name, sel.Matches(pod), b == s)
			}
		}
		for _, svc := range c.Services {
			if !labels.SelectorFromSet(svc.Spec.Selector).Matches(pod) {
				t.Errorf("Service %s does not select the pods of %s", svc.Name, sts.Name)
			}
		}
		if sts.Spec.ServiceName != "demo-headless" {
			t.Errorf("%s: serviceName %q, want demo-headless", sts.Name, sts.Spec.ServiceName)
		}
	}
	headless := c.Services[0]
	if headless.Spec.ClusterIP != corev1.ClusterIPNone || !headless.Spec.PublishNotReadyAddresses {
		t.Errorf("headless Service: clusterIP %q, publishNotReadyAddresses %v; want None, true",
			headless.Spec.ClusterIP, headless.Spec.PublishNotReadyAddresses)
	}
}

// keys lists the keys of m.
func keys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
