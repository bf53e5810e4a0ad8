package deploy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"lin.dev/lin-operator/pkg/metrics"
	"lin.dev/lin-operator/test/harness"
)

// operatorProcess is the operator binary running as a child of the test,
// with its HTTP endpoints on loopback ports of its own.
type operatorProcess struct {
	*harness.Process
	// metricsURL and healthURL are the endpoints' base URLs: metrics over
	// HTTPS, as the operator serves them by default.
	metricsURL, healthURL string
}

// startOperator runs the operator binary with args, then with its kubeconfig
// and endpoints on free loopback ports; a flag given twice takes the last
// value, so args may be a Deployment's and the endpoints still move. The
// process gets SIGTERM when the test ends, SIGKILL if it does not exit, and
// it dies with the test binary whatever happens.
func startOperator(t *testing.T, name, kubeconfig string, args ...string) *operatorProcess {
	t.Helper()
	setUpScraper(t)
	metricsAddr := harness.FreeAddress(t)
	healthAddr := harness.FreeAddress(t)
	args = append(args, "--kubeconfig="+kubeconfig,
		"--metrics-bind-address="+metricsAddr, "--health-probe-bind-address="+healthAddr)
	scheme := "https"
	if slices.Contains(args, "--metrics-secure=false") {
		scheme = "http"
	}
	p := &operatorProcess{Process: harness.StartProcess(t, name, operatorBinary, args...),
		metricsURL: scheme + "://" + metricsAddr, healthURL: "http://" + healthAddr}
	t.Logf("operator %s (pid %d): %s", name, p.Pid(), strings.Join(args, " "))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("operator %s log:\n%s", name, p.LogTail(60))
		}
	})
	return p
}

// get returns the status and body of a GET of url by client.
func get(ctx context.Context, client *http.Client, url string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// waitReady waits until the operator answers /readyz with 200.
func (p *operatorProcess) waitReady(t *testing.T) {
	t.Helper()
	harness.Eventually(t, time.Minute, "operator "+p.Name+" to be ready", func(ctx context.Context) (bool, error) {
		if p.Exited() {
			return false, fmt.Errorf("operator %s exited: %v\n%s", p.Name, p.Err(), p.LogTail(20))
		}
		code, body, err := get(ctx, http.DefaultClient, p.healthURL+"/readyz")
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("/readyz: %d %s", code, body)
		}
		return err == nil, err
	})
}

// metrics scrapes the operator's /metrics as a scraper that may.
func (p *operatorProcess) metrics(ctx context.Context) (metricFamilies, error) {
	code, body, err := get(ctx, scraper, p.metricsURL+"/metrics")
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("/metrics of %s: %d %s", p.Name, code, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(strings.NewReader(body))
}

// metricFamilies are parsed metrics, by name.
type metricFamilies map[string]*dto.MetricFamily

// sum adds up the samples of family whose labels include every one of want;
// a histogram's samples count its observations.
func (m metricFamilies) sum(family string, want map[string]string) float64 {
	total := 0.0
	for _, metric := range m[family].GetMetric() {
		if !hasLabels(metric, want) {
			continue
		}
		switch {
		case metric.Counter != nil:
			total += metric.Counter.GetValue()
		case metric.Gauge != nil:
			total += metric.Gauge.GetValue()
		case metric.Histogram != nil:
			total += float64(metric.Histogram.GetSampleCount())
		}
	}
	return total
}

// hasLabels reports whether metric carries every label of want.
func hasLabels(metric *dto.Metric, want map[string]string) bool {
	found := 0
	for _, l := range metric.GetLabel() {
		if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
			found++
		}
	}
	return found == len(want)
}

// writes adds up the operator's requests that are not reads, but for the
// reviews of scrapes of /metrics, which are creates that store nothing.
func (m metricFamilies) writes() float64 {
	total := -m.sum(metrics.Prefix+"access_reviews_total", nil)
	for _, metric := range m["rest_client_requests_total"].GetMetric() {
		for _, l := range metric.GetLabel() {
			if l.GetName() == "method" && l.GetValue() != http.MethodGet {
				total += metric.Counter.GetValue()
			}
		}
	}
	return total
}

// leading reports whether the operator holds the Lease named lease.
func (p *operatorProcess) leading(ctx context.Context, lease string) (bool, error) {
	m, err := p.metrics(ctx)
	if err != nil {
		return false, err
	}
	return m.sum("leader_election_master_status", map[string]string{"name": lease}) == 1, nil
}

// waitLeading waits until the operator holds the Lease and returns how long
// that took.
func (p *operatorProcess) waitLeading(t *testing.T, lease string, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	harness.Eventually(t, timeout, "operator "+p.Name+" to lead", func(ctx context.Context) (bool, error) {
		if p.Exited() {
			return false, fmt.Errorf("operator %s exited: %v", p.Name, p.Err())
		}
		return p.leading(ctx, lease)
	})
	return time.Since(start)
}
