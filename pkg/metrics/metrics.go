// Package metrics exports the operator's metrics in the Prometheus text
// format: client-go's workqueue, request and leader election metrics, the
// reconciles of Installations, and the Installations by phase.
//
// client-go takes its metric providers once per process, so Register installs
// them in one process-wide registry; the Installations gauge belongs to one
// operator and is passed to Handler.
package metrics

import (
	"net/http"
	"path"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/util/workqueue"
)

// Prefix begins the name of each metric that is the operator's own.
const Prefix = "lin_operator_"

// Results of a reconcile, the values of the result label.
const (
	// ResultSuccess: the Installation was reconciled, or failed in a way that
	// only a new spec can fix (reported in its status, not retried).
	ResultSuccess = "success"
	// ResultError: the reconcile failed and is retried with backoff.
	ResultError = "error"
)

var (
	// registry holds the process-wide metrics.
	registry = prometheus.NewRegistry()
	// registerOnce guards Register.
	registerOnce sync.Once

	reconcileTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: Prefix + "reconcile_total",
		Help: "Reconciles of Installations, by result: success, or error (retried with backoff).",
	}, []string{"result"})
	reconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: Prefix + "reconcile_duration_seconds",
		Help: "How long a reconcile of one Installation took, by result.",
		// 1ms to about 16s: a reconcile in sync costs no request, one that
		// writes costs a few round trips.
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
	}, []string{"result"})
	accessReviews = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: Prefix + "access_reviews_total",
		Help: "Reviews the operator asked of the API server for scrapes of /metrics, by resource: " +
			"tokenreviews and subjectaccessreviews when a scrape's answer was not cached, selfsubjectaccessreviews at start.",
	}, []string{"resource"})
)

// The reviews that CountAccessReviews counts, the values of its resource label.
var reviewResources = []string{"tokenreviews", "subjectaccessreviews", "selfsubjectaccessreviews"}

// Register installs the metrics of client-go (workqueues, requests, leader
// election) and of the reconciles in the process registry. Only the first
// call does anything; call it before making clients and queues, which take
// their metrics when they are made.
func Register() {
	registerOnce.Do(func() {
		registry.MustRegister(
			collectors.NewGoCollector(),
			collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
			reconcileTotal, reconcileDuration, accessReviews,
		)
		// Both results are exported from the start, so that a rate of
		// errors is zero rather than absent.
		for _, result := range []string{ResultSuccess, ResultError} {
			reconcileTotal.WithLabelValues(result)
			reconcileDuration.WithLabelValues(result)
		}
		for _, r := range reviewResources {
			accessReviews.WithLabelValues(r)
		}
		workqueue.SetProvider(newWorkqueueProvider(registry))
		registerClientMetrics(registry)
		leaderelection.SetProvider(newLeaderProvider(registry))
	})
}

// ObserveReconcile records one reconcile that took d and returned err.
func ObserveReconcile(d time.Duration, err error) {
	result := ResultSuccess
	if err != nil {
		result = ResultError
	}
	reconcileTotal.WithLabelValues(result).Inc()
	reconcileDuration.WithLabelValues(result).Observe(d.Seconds())
}

// CountAccessReviews wraps the transport of the client that asks for the
// reviews of scrapes, counting each request by the resource it creates. It
// shows how often the caches of reviews spare the API server a request, and
// tells the reviews apart from the operator's writes, which a follower must
// not send.
func CountAccessReviews(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		accessReviews.WithLabelValues(path.Base(req.URL.Path)).Inc()
		return rt.RoundTrip(req)
	})
}

// roundTripperFunc is a function that is an http.RoundTripper.
type roundTripperFunc func(*http.Request) (*http.Response, error)

// RoundTrip implements http.RoundTripper.
func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// MaxScrapesInFlight bounds the scrapes that Handler serves at once; it
// answers more with 503. Each scrape gathers every Installation's series
// into memory, so this bounds what many clients at once can make the
// operator hold; Prometheus servers scrape one at a time each.
const MaxScrapesInFlight = 4

// ScrapeTimeout bounds a scrape's gathering; past it, Handler answers 503.
const ScrapeTimeout = 30 * time.Second

// Handler serves the process registry and the extra collectors, which are
// one operator's own, in the Prometheus exposition formats (text unless the
// scraper asks for another), at most MaxScrapesInFlight at once.
func Handler(extra ...prometheus.Collector) (http.Handler, error) {
	own := prometheus.NewRegistry()
	for _, c := range extra {
		if err := own.Register(c); err != nil {
			return nil, err
		}
	}
	opts := promhttp.HandlerOpts{MaxRequestsInFlight: MaxScrapesInFlight, Timeout: ScrapeTimeout}
	return promhttp.HandlerFor(prometheus.Gatherers{registry, own}, opts), nil
}
