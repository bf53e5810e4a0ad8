package metrics

import (
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
)

// scrape serves h's /metrics once and parses the text it returns.
func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return families
}

// value returns the value of the sample of family with the label name=value.
func value(t *testing.T, families map[string]*dto.MetricFamily, family, name, value string) float64 {
	t.Helper()
	for _, m := range families[family].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == name && l.GetValue() == value {
				switch {
				case m.Counter != nil:
					return m.Counter.GetValue()
				case m.Gauge != nil:
					return m.Gauge.GetValue()
				case m.Histogram != nil:
					return float64(m.Histogram.GetSampleCount())
				}
			}
		}
	}
	t.Fatalf("no sample of %s{%s=%q}", family, name, value)
	return 0
}

func TestHandlerServesWorkqueueReconcileAndPhaseMetrics(t *testing.T) {
	Register()
	q := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Name: "metrics-test"})
	defer q.ShutDown()
	q.Add("a")
	q.Add("b")
	ObserveReconcile(time.Millisecond, nil)
	ObserveReconcile(time.Second, errors.New("conflict"))
	phase := func(p linv1.Phase) *linv1.Installation {
		return &linv1.Installation{Status: linv1.InstallationStatus{Phase: p}}
	}
	degraded := phase(linv1.PhaseDegraded)
	degraded.Namespace, degraded.Name = "ns", "demo"
	degraded.Status.Conditions = []metav1.Condition{
		{Type: linv1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: "ApplyFailed"},
		{Type: linv1.ConditionProgressing, Status: metav1.ConditionFalse, Reason: "RolloutStalled"},
	}
	list := func() ([]*linv1.Installation, error) {
		return []*linv1.Installation{phase(linv1.PhaseReady), phase(linv1.PhaseReady), phase(""), degraded}, nil
	}
	h, err := Handler(NewInstallationCollector(list))
	if err != nil {
		t.Fatal(err)
	}
	families := scrape(t, h)

	for _, c := range []struct {
		family, label, value string
		min                  float64
	}{
		{"workqueue_adds_total", "name", "metrics-test", 2},
		{"workqueue_depth", "name", "metrics-test", 2},
		{Prefix + "reconcile_total", "result", ResultSuccess, 1},
		{Prefix + "reconcile_total", "result", ResultError, 1},
		{Prefix + "reconcile_duration_seconds", "result", ResultError, 1},
		{Prefix + "installations", "phase", string(linv1.PhaseReady), 2},
		{Prefix + "installations", "phase", PhaseUnknown, 1},
	} {
		if got := value(t, families, c.family, c.label, c.value); got < c.min {
			t.Errorf("%s{%s=%q} = %g, want at least %g", c.family, c.label, c.value, got, c.min)
		}
	}
	if got := value(t, families, Prefix+"installations", "phase", string(linv1.PhaseStopped)); got != 0 {
		t.Errorf("Stopped Installations = %g, want 0", got)
	}
	var conditions []map[string]string
	for _, m := range families[Prefix+"installation_condition"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		conditions = append(conditions, labels)
	}
	want := map[string]string{"namespace": "ns", "installation": "demo", "type": "Degraded", "status": "True", "reason": "ApplyFailed"}
	if len(conditions) != 2 || !slices.ContainsFunc(conditions, func(l map[string]string) bool { return maps.Equal(l, want) }) {
		t.Errorf("installation_condition series %v, want the two conditions of the Degraded one, one of them %v", conditions, want)
	}
}

func TestInstallationCollectorReportsAListError(t *testing.T) {
	h, err := Handler(NewInstallationCollector(func() ([]*linv1.Installation, error) {
		return nil, errors.New("no cache")
	}))
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusInternalServerError {
		t.Errorf("GET /metrics with a failing list: %d, want 500", rec.Code)
	}
}
