package controller

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	restclientwatch "k8s.io/client-go/rest/watch"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
)

// convergedInstallation is the served Installation as a converged one comes
// back: with its status and the managedFields of its two writers.
func convergedInstallation(t testing.TB) *linv1.Installation {
	inst, _ := loadServed(t)
	inst.APIVersion, inst.Kind = linv1.SchemeGroupVersion.String(), "Installation"
	inst.ResourceVersion = "123456"
	now := metav1.NewTime(time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC))
	inst.CreationTimestamp = now
	inst.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "lin.dev/v1", Time: &now,
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{".":{},"f:config":{".":{},"f:app.conf":{}},"f:image":{},"f:ports":{},"f:replicas":{},"f:shards":{}}}`)}},
		{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "lin.dev/v1", Time: &now, Subresource: "status",
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{".":{},"f:conditions":{},"f:observedGeneration":{},"f:phase":{},"f:ready":{},"f:replicas":{},"f:selector":{},"f:shards":{}}}`)}},
	}
	inst.Status = linv1.InstallationStatus{ObservedGeneration: 1, Phase: linv1.PhaseProgressing, Replicas: 2,
		Selector: "app.kubernetes.io/instance=demo", Ready: "0/4",
		Shards: []linv1.ShardStatus{{Index: 0, StatefulSetName: "demo-0", Replicas: 2}, {Index: 1, StatefulSetName: "demo-1", Replicas: 2}}}
	for _, c := range []string{"Available", "Progressing", "Degraded"} {
		inst.Status.Conditions = append(inst.Status.Conditions, metav1.Condition{Type: c, Status: metav1.ConditionFalse,
			ObservedGeneration: 1, LastTransitionTime: now, Reason: "RolloutInProgress", Message: "shard 0 has 0 of 2 pods ready"})
	}
	return inst
}

// servedJSON encodes obj as the API server encodes a custom resource: from a
// map, so with its keys sorted.
func servedJSON(t testing.TB, obj any) []byte {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if data, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	return data
}

// watchStream writes events as the API server does, one JSON value each.
func watchStream(events ...string) []byte {
	return []byte(strings.Join(events, "\n") + "\n")
}

// decodeWatch decodes every event of stream as a watch of Installations
// through serializers does, with their JSON decoders.
func decodeWatch(t testing.TB, serializers runtime.NegotiatedSerializer, stream []byte) []watch.Event {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(serializers.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok {
		t.Fatal("no JSON serializer")
	}
	frames := info.StreamSerializer.Framer.NewFrameReader(io.NopCloser(bytes.NewReader(stream)))
	dec := restclientwatch.NewDecoder(streaming.NewDecoder(frames, info.StreamSerializer.Serializer),
		serializers.DecoderToVersion(info.Serializer, linv1.SchemeGroupVersion))
	var events []watch.Event
	for {
		typ, obj, err := dec.Decode()
		if err == io.EOF {
			return events
		}
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, watch.Event{Type: typ, Object: obj})
	}
}

func TestTheInstallationsClientDecodesWhatClientGoDecodes(t *testing.T) {
	inst := string(servedJSON(t, convergedInstallation(t)))
	bookmark := `{"apiVersion":"lin.dev/v1","kind":"Installation","metadata":{"annotations":{"k8s.io/initial-events-end":"true"},"resourceVersion":"9"}}`
	status := string(servedJSON(t, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status: metav1.StatusFailure, Reason: metav1.StatusReasonExpired, Code: 410, Message: "too old resource version"}))
	// Kind first, as a client that writes structs would: not the shape
	// the shortcut expects.
	kindFirst, err := json.Marshal(convergedInstallation(t))
	if err != nil {
		t.Fatal(err)
	}
	added := `{"type":"ADDED","object":` + inst + `}`
	events := []string{
		added,
		`{"type":"BOOKMARK","object":` + bookmark + `}`,
		`{"object":` + inst + `,"type":"MODIFIED"}`,
		`{"type":"MODIFIED","object":` + string(kindFirst) + `}`,
		`{"type": "DELETED", "object": ` + inst + ` }`,
		`{"type":"ERROR","object":` + status + `}`,
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, []byte(added), "", "  "); err != nil {
		t.Fatal(err)
	}
	for name, stream := range map[string][]byte{
		// Two events of the API server's shape, then the others.
		"served first":          watchStream(events...),
		"pretty first":          watchStream(append([]string{pretty.String()}, events...)...),
		"no newline at the end": bytes.TrimSuffix(watchStream(added, added), []byte("\n")),
	} {
		want := decodeWatch(t, generatedClientSerializers(), stream)
		got := decodeWatch(t, installationSerializers{generatedClientSerializers()}, stream)
		if len(want) < 2 {
			t.Fatalf("%s: client-go decoded %d events", name, len(want))
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: decoded\n%#v\nwant\n%#v", name, got, want)
		}
	}
}

func TestOnlyTheAPIServersShapeOfAWatchEventIsCut(t *testing.T) {
	for data, want := range map[string]string{
		`{"type":"ADDED","object":{"a":1}}`:       `ADDED {"a":1}`,
		`{"type":"ADDED","object":{}}`:            `ADDED {}`,
		`{"type":"ADDED","object":null}`:          "",
		`{"type":"AD\"DED","object":{"a":1}}`:     "",
		`{"type":"ADDED","object":{"a":1}} `:      "",
		`{"type":"ADDED", "object":{"a":1}}`:      "",
		`{"object":{"a":1},"type":"ADDED"}`:       "",
		`{"type":"ADDED","object":{"a":1},"x":2}`: `ADDED {"a":1},"x":2`,
	} {
		typ, obj, ok := cutWatchEvent([]byte(data))
		got := ""
		if ok {
			got = typ + " " + string(obj)
		}
		if got != want {
			t.Errorf("cutWatchEvent(%s) = %q, want %q", data, got, want)
		}
	}
}

// BenchmarkInstallationWatchEvents decodes a stream of 100 watch events of a
// converged Installation as client-go does and as the Installations' client does.
func BenchmarkInstallationWatchEvents(b *testing.B) {
	event := `{"type":"ADDED","object":` + string(servedJSON(b, convergedInstallation(b))) + `}`
	stream := watchStream(slices.Repeat([]string{event}, 100)...)
	for name, serializers := range map[string]runtime.NegotiatedSerializer{
		"client-go":     generatedClientSerializers(),
		"installations": installationSerializers{generatedClientSerializers()},
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(stream)))
			for b.Loop() {
				decodeWatch(b, serializers, stream)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(100*b.N), "µs/event")
		})
	}
}
