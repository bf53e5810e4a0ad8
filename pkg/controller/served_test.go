package controller

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/resources"
)

// loadServed returns the Installation and children of testdata/served: as the
// API server stored them, every default applied. The integration test
// TestServedObjectsInTestdataAreCurrent keeps them current.
func loadServed(t testing.TB) (*linv1.Installation, *resources.Children) {
	t.Helper()
	inst, ch := &linv1.Installation{}, &resources.Children{}
	for file, v := range map[string]any{"installation.yaml": inst, "children.yaml": ch} {
		data, err := os.ReadFile(filepath.Join("testdata", "served", file))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.UnmarshalStrict(data, v); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	return inst, ch
}

func TestSyncOfServedChildrenMakesNoRequest(t *testing.T) {
	f := newFixture(t)
	inst, served := loadServed(t)
	f.seed(inst, served)

	checkActions(t, f.run(inst, false))
	if ev := f.events(); len(ev) != 0 {
		t.Errorf("events = %q, want none", ev)
	}
}

func TestSyncTakesBackWhatWasAddedByHandToAServedPodTemplate(t *testing.T) {
	for name, change := range map[string]func(*corev1.PodSpec){
		"container": func(p *corev1.PodSpec) {
			p.Containers = append(p.Containers, corev1.Container{Name: "sidecar", Image: "example.com/sidecar:1"})
		},
		"env var": func(p *corev1.PodSpec) {
			p.Containers[0].Env = append(p.Containers[0].Env, corev1.EnvVar{Name: "DEBUG", Value: "1"})
		},
		"volume": func(p *corev1.PodSpec) {
			p.Volumes = append(p.Volumes, corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		},
		"nodeSelector entry": func(p *corev1.PodSpec) { p.NodeSelector = map[string]string{"disk": "ssd"} },
		"toleration": func(p *corev1.PodSpec) {
			p.Tolerations = append(p.Tolerations, corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists})
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			inst, served := loadServed(t)
			want := served.StatefulSets[0].Spec.Template.DeepCopy()
			change(&served.StatefulSets[0].Spec.Template.Spec)
			f.seed(inst, served)

			// The written StatefulSet rolls its pods: status says so.
			actions := f.run(inst, false)
			checkActions(t, actions, updateStatus, updateShard0)
			// Written is the rendered template, which the served one holds with no more items.
			if got := object[*appsv1.StatefulSet](t, actions[1]); !holds(reflect.ValueOf(got.Spec.Template.Spec), reflect.ValueOf(want.Spec)) {
				t.Errorf("pod template written:\n%+v\nwant:\n%+v", got.Spec.Template.Spec, want.Spec)
			}
		})
	}
}
