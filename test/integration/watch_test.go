package integration

import (
	"bufio"
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"lin.dev/lin-operator/pkg/controller"
	"lin.dev/lin-operator/test/harness"
)

// TestTheRequestTimeoutDoesNotCutTheWatches runs the operator with a client
// Timeout of one second, as cmd/operator sets one (of 30 seconds) for single
// requests: its informers still watch on one request each, instead of
// watching again after every Timeout.
func TestTheRequestTimeoutDoesNotCutTheWatches(t *testing.T) {
	ns := harness.Namespace(t, testEnv.Client)
	cfg := rest.CopyConfig(testEnv.Config)
	cfg.Timeout = time.Second
	op := harness.StartOperator(t, cfg, harness.Options{Namespaces: []string{ns}})
	// What is tested is that nothing happens: only time can show it.
	time.Sleep(4 * cfg.Timeout)
	for _, resource := range []string{"configmaps", "services", "statefulsets", "poddisruptionbudgets", "events", "pods", "installations"} {
		if n := op.Requests.Snapshot()["watch "+resource]; n != 1 {
			t.Errorf("%d watches of %s in %s, want 1", n, resource, 4*cfg.Timeout)
		}
	}
}

// TestTheAPIServerWritesInstallationEventsInTheShapeTheWatchClientCuts reads
// a watch of Installations as the informers start it, a streamed list, and
// checks that every event comes on a line of its own, in the shape whose
// reading the Installations' watch client shortens (pkg/controller,
// installationclient.go), and that the client decodes what the generated
// one does.
func TestTheAPIServerWritesInstallationEventsInTheShapeTheWatchClientCuts(t *testing.T) {
	// Were the events not on lines of their own, the second would not come.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	ns := harness.Namespace(t, testEnv.Client)
	created := create(t, harness.NewInstallation(ns, "demo"))
	watchClient, err := controller.NewInstallationWatchClient(testEnv.Config)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := watchClient.LinV1().RESTClient().Get().Namespace(ns).Resource("installations").
		Param("watch", "true").Param("sendInitialEvents", "true").Param("resourceVersionMatch", "NotOlderThan").
		Param("allowWatchBookmarks", "true").Stream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	lines := bufio.NewScanner(stream)
	lines.Buffer(nil, 1<<20)
	for _, typ := range []string{"ADDED", "BOOKMARK"} {
		if !lines.Scan() {
			t.Fatalf("the watch ended before its %s event: %v", typ, lines.Err())
		}
		prefix := `{"type":"` + typ + `","object":{"apiVersion":"lin.dev/v1","kind":"Installation",`
		if line := lines.Text(); !strings.HasPrefix(line, prefix) || !strings.HasSuffix(line, "}}") {
			t.Errorf("the %s event is\n%s\nwant it to start with %s and end with }}", typ, line, prefix)
		}
	}
	w, err := watchClient.LinV1().Installations(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	got := (<-w.ResultChan()).Object
	if !reflect.DeepEqual(got, created) {
		t.Errorf("the watch client decoded\n%#v\nthe generated client\n%#v", got, created)
	}
}
