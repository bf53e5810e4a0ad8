package deploy

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/metrics"
	"lin.dev/lin-operator/test/harness"
)

// sample names one series and the least value it must have.
type sample struct {
	family string
	labels map[string]string
	min    float64
}

func TestMetricsAndHealthEndpoints(t *testing.T) {
	install(t)
	ns := harness.Namespace(t, testEnv.Client)
	const lease = "metrics-test"
	op := startLeader(t, "metrics", ns, lease)

	createInstallation(t, ns, "fine", nil)
	// A ConfigMap of someone else holds a child's name: a conflict, which
	// is retried and so counts as a reconcile error.
	foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "taken-config", Namespace: ns}}
	if _, err := testEnv.Client.CoreV1().ConfigMaps(ns).Create(t.Context(), foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createInstallation(t, ns, "taken", nil)
	waitPhase(t, ns, "fine", linv1.PhaseReady)
	waitPhase(t, ns, "taken", linv1.PhaseDegraded)

	queue := map[string]string{"name": "installations"}
	want := []sample{
		{"workqueue_adds_total", queue, 2},
		{"workqueue_depth", queue, 0},
		{"workqueue_queue_duration_seconds", queue, 2},
		{"workqueue_work_duration_seconds", queue, 2},
		{"workqueue_retries_total", queue, 1},
		{"workqueue_unfinished_work_seconds", queue, 0},
		{"workqueue_longest_running_processor_seconds", queue, 0},
		{"rest_client_requests_total", map[string]string{"method": "GET", "code": "200"}, 1},
		{"rest_client_requests_total", map[string]string{"method": "POST", "code": "201"}, 1},
		{"rest_client_requests_total", map[string]string{"method": "PUT", "code": "200"}, 1},
		{"rest_client_request_duration_seconds", map[string]string{"verb": "POST"}, 1},
		{metrics.Prefix + "reconcile_total", map[string]string{"result": metrics.ResultSuccess}, 1},
		{metrics.Prefix + "reconcile_total", map[string]string{"result": metrics.ResultError}, 1},
		{metrics.Prefix + "reconcile_duration_seconds", map[string]string{"result": metrics.ResultSuccess}, 1},
		{metrics.Prefix + "installations", map[string]string{"phase": "Ready"}, 1},
		{metrics.Prefix + "installations", map[string]string{"phase": "Degraded"}, 1},
		{"leader_election_master_status", map[string]string{"name": lease}, 1},
		{"rest_client_rate_limiter_duration_seconds", map[string]string{"verb": "POST"}, 1},
		{metrics.Prefix + "installation_condition", map[string]string{"namespace": ns, "installation": "taken",
			"type": linv1.ConditionDegraded, "status": "True"}, 1},
	}
	var scraped metricFamilies
	harness.Eventually(t, timeout, "the metrics to show the reconciles", func(ctx context.Context) (bool, error) {
		var err error
		if scraped, err = op.metrics(ctx); err != nil {
			return false, err
		}
		return true, missing(scraped, want)
	})
	checkMonitoringServed(t, scraped)

	resp, err := scraper.Get(op.metricsURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("/metrics Content-Type = %q, want the Prometheus text format", ct)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		code, body, err := get(t.Context(), http.DefaultClient, op.healthURL+path)
		if err != nil || code != http.StatusOK || strings.TrimSpace(body) != "ok" {
			t.Errorf("GET %s: %d %q %v, want 200 ok", path, code, body, err)
		}
	}
}

// missing returns an error naming the samples of want that m lacks or that
// are below their minimum, or nil.
func missing(m metricFamilies, want []sample) error {
	var bad []string
	for _, s := range want {
		if m[s.family] == nil {
			bad = append(bad, s.family+" is missing")
		} else if got := m.sum(s.family, s.labels); got < s.min {
			bad = append(bad, fmt.Sprintf("%s%v = %g < %g", s.family, s.labels, got, s.min))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s", strings.Join(bad, "; "))
	}
	return nil
}
