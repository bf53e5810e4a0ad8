package metrics

import (
	"context"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/leaderelection"
	clientmetrics "k8s.io/client-go/tools/metrics"
)

// The names and labels are those of Kubernetes' own components, so that
// their dashboards work for the operator too.

// latencyBuckets are those of Kubernetes' components for request latencies,
// 5ms to a minute.
var latencyBuckets = []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60}

// registerClientMetrics hands client-go the request metrics: the count by
// HTTP method and response code, the latency by verb, and the wait for the
// client's rate limiter by verb.
func registerClientMetrics(reg prometheus.Registerer) {
	results := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rest_client_requests_total",
		Help: "Requests to the API server, by HTTP method, response code and host.",
	}, []string{"code", "method", "host"})
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "rest_client_request_duration_seconds",
		Help:    "Latency of requests to the API server, by verb and host.",
		Buckets: latencyBuckets,
	}, []string{"verb", "host"})
	// Time a request waited for the client's own rate limit (--kube-api-qps
	// and --kube-api-burst) before it was sent: client-side throttling.
	throttled := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "rest_client_rate_limiter_duration_seconds",
		Help:    "Time requests to the API server waited for the client's rate limiter, by verb and host.",
		Buckets: latencyBuckets,
	}, []string{"verb", "host"})
	reg.MustRegister(results, latency, throttled)
	clientmetrics.Register(clientmetrics.RegisterOpts{
		RequestResult:      resultAdapter{results},
		RequestLatency:     latencyAdapter{latency},
		RateLimiterLatency: latencyAdapter{throttled},
	})
}

// resultAdapter counts requests for client-go.
type resultAdapter struct{ m *prometheus.CounterVec }

// Increment implements clientmetrics.ResultMetric.
func (a resultAdapter) Increment(_ context.Context, code, method, host string) {
	a.m.WithLabelValues(code, method, host).Inc()
}

// latencyAdapter observes request latencies for client-go.
type latencyAdapter struct{ m *prometheus.HistogramVec }

// Observe implements clientmetrics.LatencyMetric.
func (a latencyAdapter) Observe(_ context.Context, verb string, u url.URL, latency time.Duration) {
	a.m.WithLabelValues(verb, u.Host).Observe(latency.Seconds())
}

// leaderProvider makes client-go's leader election metric: 1 while this
// process holds the Lease, else 0.
type leaderProvider struct{ status *prometheus.GaugeVec }

// newLeaderProvider registers the leader election gauge in reg.
func newLeaderProvider(reg prometheus.Registerer) leaderProvider {
	status := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "leader_election_master_status",
		Help: "1 while this process holds the Lease of the given name, else 0.",
	}, []string{"name"})
	reg.MustRegister(status)
	return leaderProvider{status}
}

// NewLeaderMetric implements leaderelection.MetricsProvider.
func (p leaderProvider) NewLeaderMetric() leaderelection.LeaderMetric { return leaderMetric(p) }

// leaderMetric sets the gauge of one election.
type leaderMetric leaderProvider

// On implements leaderelection.LeaderMetric.
func (m leaderMetric) On(name string) { m.status.WithLabelValues(name).Set(1) }

// Off implements leaderelection.LeaderMetric.
func (m leaderMetric) Off(name string) { m.status.WithLabelValues(name).Set(0) }

// SlowpathExercised implements leaderelection.LeaderMetric; the slow path (a
// lease update that had to read first) is of no interest here.
func (m leaderMetric) SlowpathExercised(string) {}
