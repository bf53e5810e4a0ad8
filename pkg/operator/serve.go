package operator

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/controller"
	"lin.dev/lin-operator/pkg/metrics"
)

// The limits of the metrics and health servers. Their clients, Prometheus
// and the kubelet's probes, send small GETs without a body, so the limits
// only bound what a slow, stuck or hostile client can hold: its headers in
// memory, and its connection in time. Each connection still gets its own
// goroutine: a cap on connections would let a few slow clients starve the
// kubelet's probes, and a failed liveness probe restarts the operator.
const (
	// maxHeaderBytes bounds a request's headers (net/http adds 4 KiB of
	// slack); the default is 1 MiB. A bearer token fits many times over.
	maxHeaderBytes = 16 << 10
	// readHeaderTimeout closes a connection whose headers trickle in.
	readHeaderTimeout = 10 * time.Second
	// readTimeout bounds the reading of a whole request.
	readTimeout = 30 * time.Second
	// writeTimeout leaves a scrape its metrics.ScrapeTimeout and the
	// writing of the answer.
	writeTimeout = 2 * metrics.ScrapeTimeout
	// idleTimeout closes a kept-alive connection that nobody uses.
	idleTimeout = 2 * time.Minute
)

// endpoint is one HTTP server the operator runs.
type endpoint struct {
	// name says what it serves, in logs and errors.
	name string
	// addr is the address it listens on.
	addr string
	// handler serves its paths.
	handler http.Handler
	// certs, if set, serve it over HTTPS.
	certs certSource
}

// endpoints are the metrics and health servers that the config asks for.
func (o *Operator) endpoints() ([]endpoint, error) {
	var eps []endpoint
	if o.config.MetricsAddress != "" {
		ep, err := o.metricsEndpoint()
		if err != nil {
			return nil, err
		}
		eps = append(eps, ep)
	}
	if o.config.HealthAddress != "" {
		// Plain HTTP, with no authentication: the kubelet probes it so.
		mux := http.NewServeMux()
		mux.Handle("/healthz", probe(o.watchdog.Check))
		mux.Handle("/readyz", probe(o.ready))
		eps = append(eps, endpoint{name: "health", addr: o.config.HealthAddress, handler: mux})
	}
	return eps, nil
}

// metricsEndpoint serves /metrics: over HTTPS, to callers that may get it,
// unless the config asks for plain HTTP.
func (o *Operator) metricsEndpoint() (endpoint, error) {
	h, err := metrics.Handler(metrics.NewInstallationCollector(o.installations))
	if err != nil {
		return endpoint{}, err
	}
	ep := endpoint{name: "metrics", addr: o.config.MetricsAddress}
	if !o.config.MetricsInsecure {
		ctx, cancel := context.WithTimeout(context.Background(), reviewTimeout)
		checkReviewAccess(ctx, o.reviewClient)
		cancel()
		if h, err = authorized(h, o.reviewClient); err != nil {
			return endpoint{}, err
		}
		if ep.certs, err = newCertSource(o.config.MetricsCertDir); err != nil {
			return endpoint{}, err
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	ep.handler = mux
	return ep, nil
}

// serve starts the endpoints and returns a function that stops them. It
// fails at once when an address cannot be bound, rather than running blind.
func (o *Operator) serve() (stop func(), err error) {
	eps, err := o.endpoints()
	if err != nil {
		return nil, err
	}
	// The certificates are kept current while the endpoints serve.
	ctx, stopCerts := context.WithCancel(context.Background())
	var servers []*http.Server
	stop = func() {
		stopCerts()
		for _, s := range servers {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = s.Shutdown(ctx)
			cancel()
		}
	}
	for _, ep := range eps {
		if ep.certs != nil {
			go ep.certs.Run(ctx)
		}
		s, err := listen(ep)
		if err != nil {
			stop()
			return nil, err
		}
		servers = append(servers, s)
	}
	return stop, nil
}

// listen binds ep's address and serves it in the background.
func listen(ep endpoint) (*http.Server, error) {
	l, err := net.Listen("tcp", ep.addr)
	if err != nil {
		return nil, fmt.Errorf("serving %s: %w", ep.name, err)
	}
	scheme := "http"
	if ep.certs != nil {
		l, scheme = tls.NewListener(l, serverTLS(ep.certs)), "https"
	}
	s := &http.Server{
		Handler:           ep.handler,
		MaxHeaderBytes:    maxHeaderBytes,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
	}
	go func() {
		if err := s.Serve(l); !errors.Is(err, http.ErrServerClosed) {
			klog.ErrorS(err, "Server stopped", "server", ep.name, "address", ep.addr)
		}
	}()
	klog.InfoS("Serving", "server", ep.name, "address", l.Addr().String(), "scheme", scheme)
	return s, nil
}

// probe answers 200 "ok" when check passes, else 503 with its error.
func probe(check func(*http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := check(r); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
}

// ready holds once the informer caches have synced and, with leader
// election, while the election runs: a replica waiting for the Lease is ready
// to take over.
func (o *Operator) ready(*http.Request) error {
	if !o.Controller.HasSynced() {
		return errors.New("the informer caches have not synced")
	}
	if o.config.LeaderElection != nil && !o.electing.Load() {
		return errors.New("the leader election is not running")
	}
	return nil
}

// cachedInstallations returns a function that lists the Installations in the
// informer caches of every watched namespace.
func cachedInstallations(inf *controller.Informers) func() ([]*linv1.Installation, error) {
	var listers []func(labels.Selector) ([]*linv1.Installation, error)
	for _, f := range inf.Lin {
		listers = append(listers, f.Lin().V1().Installations().Lister().List)
	}
	return func() ([]*linv1.Installation, error) {
		var all []*linv1.Installation
		for _, list := range listers {
			insts, err := list(labels.Everything())
			if err != nil {
				return nil, err
			}
			all = append(all, insts...)
		}
		return all, nil
	}
}
