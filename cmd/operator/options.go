package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"lin.dev/lin-operator/pkg/operator"
	"lin.dev/lin-operator/pkg/resources"
)

// options are the operator's command-line flags.
type options struct {
	kubeconfig           string
	namespaces           namespaceList
	workers              int
	resyncPeriod         time.Duration
	qps                  float64
	burst                int
	compression          bool
	clusterDomain        string
	installationSelector string

	leaderElect             bool
	leaderElectionNamespace string
	leaderElectionID        string
	leaseDuration           time.Duration
	renewDeadline           time.Duration
	retryPeriod             time.Duration

	metricsAddress string
	metricsSecure  bool
	metricsCertDir string
	healthAddress  string
}

// disabled is the address that turns an endpoint off.
const disabled = "0"

// namespaceList is a repeatable flag that also takes comma-separated lists.
type namespaceList []string

// String implements flag.Value.
func (n *namespaceList) String() string { return strings.Join(*n, ",") }

// Set implements flag.Value.
func (n *namespaceList) Set(v string) error {
	for _, ns := range strings.Split(v, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			*n = append(*n, ns)
		}
	}
	return nil
}

// bind registers the flags on fs with their defaults.
func (o *options) bind(fs *flag.FlagSet) {
	fs.StringVar(&o.kubeconfig, "kubeconfig", "",
		"Path to a kubeconfig. Empty: the in-cluster config, else $KUBECONFIG or ~/.kube/config.")
	fs.Var(&o.namespaces, "namespace",
		"Namespace to watch; repeat the flag or give a comma-separated list. Empty: all namespaces.")
	fs.IntVar(&o.workers, "workers", operator.DefaultWorkers, "Number of Installations reconciled at once.")
	fs.DurationVar(&o.resyncPeriod, "resync-period", operator.DefaultResyncPeriod,
		"How often every Installation is reconciled again although nothing changed (0: never).")
	fs.Float64Var(&o.qps, "kube-api-qps", operator.DefaultQPS, "Steady requests per second to the API server.")
	fs.IntVar(&o.burst, "kube-api-burst", operator.DefaultBurst, "Requests allowed in a burst above --kube-api-qps.")
	fs.BoolVar(&o.compression, "kube-api-compression", false,
		"Let the API server gzip its answers: worth it only over a slow network, for it costs the API server CPU on every watched write.")
	fs.StringVar(&o.clusterDomain, "cluster-domain", "cluster.local", "The cluster's DNS domain, used in pod and Service names.")
	fs.StringVar(&o.installationSelector, "installation-selector", "",
		"Label selector of the Installations this operator reconciles; empty: all. "+
			"Operators with disjoint selectors (and their own --leader-election-id) split a cluster between them.")
	o.bindLeaderElection(fs)
	fs.StringVar(&o.metricsAddress, "metrics-bind-address", ":8443",
		`Address of the Prometheus /metrics endpoint; "0" turns it off.`)
	fs.BoolVar(&o.metricsSecure, "metrics-secure", true,
		"Serve /metrics over HTTPS, only to callers with a bearer token that a TokenReview accepts and whom RBAC allows get on the "+
			"non-resource URL /metrics (the ClusterRole lin-operator-metrics-reader). False: plain HTTP, open to anyone who reaches the port.")
	fs.StringVar(&o.metricsCertDir, "metrics-cert-dir", "",
		"Directory with the tls.crt and tls.key of /metrics (a kubernetes.io/tls Secret, e.g. from cert-manager), reloaded when they change. "+
			"Empty: a self-signed certificate made at start.")
	fs.StringVar(&o.healthAddress, "health-probe-bind-address", ":8081",
		`Address of the /healthz and /readyz endpoints; "0" turns them off.`)
}

// bindLeaderElection registers the leader election flags, with client-go's
// usual durations.
func (o *options) bindLeaderElection(fs *flag.FlagSet) {
	fs.BoolVar(&o.leaderElect, "leader-elect", false,
		"Run the workers only while holding a Lease, so that one replica of several is active.")
	fs.StringVar(&o.leaderElectionNamespace, "leader-election-namespace", "",
		"Namespace of the Lease; required with --leader-elect.")
	fs.StringVar(&o.leaderElectionID, "leader-election-id", "lin-operator", "Name of the Lease.")
	fs.DurationVar(&o.leaseDuration, "leader-election-lease-duration", 15*time.Second,
		"How long the other replicas wait after the leader's last renewal before taking over.")
	fs.DurationVar(&o.renewDeadline, "leader-election-renew-deadline", 10*time.Second,
		"How long the leader tries to renew the Lease before it gives up and exits.")
	fs.DurationVar(&o.retryPeriod, "leader-election-retry-period", 2*time.Second,
		"Time between tries to take or renew the Lease.")
}

// validate checks the flags, naming the one that is wrong.
func (o *options) validate() error {
	var errs []error
	if o.workers < 1 {
		errs = append(errs, fmt.Errorf("--workers must be at least 1, got %d", o.workers))
	}
	if o.resyncPeriod < 0 {
		errs = append(errs, fmt.Errorf("--resync-period must not be negative, got %s", o.resyncPeriod))
	}
	if o.qps <= 0 || o.burst < 1 {
		errs = append(errs, fmt.Errorf("--kube-api-qps and --kube-api-burst must be positive, got %g and %d", o.qps, o.burst))
	}
	if msgs := validation.IsDNS1123Subdomain(o.clusterDomain); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--cluster-domain %q: %s", o.clusterDomain, strings.Join(msgs, "; ")))
	}
	if len(o.clusterDomain) > resources.MaxClusterDomainLength {
		// The schema's bound on shards x replicas counts on it.
		errs = append(errs, fmt.Errorf("--cluster-domain %q: must be at most %d characters", o.clusterDomain, resources.MaxClusterDomainLength))
	}
	for _, ns := range o.namespaces {
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--namespace %q: %s", ns, strings.Join(msgs, "; ")))
		}
	}
	if _, err := labels.Parse(o.installationSelector); err != nil {
		errs = append(errs, fmt.Errorf("--installation-selector: %w", err))
	}
	errs = append(errs, o.validateLeaderElection()...)
	errs = append(errs, validateAddress("--metrics-bind-address", o.metricsAddress),
		validateAddress("--health-probe-bind-address", o.healthAddress))
	if o.metricsCertDir != "" && !o.metricsSecure {
		errs = append(errs, errors.New("--metrics-cert-dir is for HTTPS: it cannot go with --metrics-secure=false"))
	}
	if o.metricsAddress != disabled && o.metricsAddress == o.healthAddress {
		errs = append(errs, fmt.Errorf("--metrics-bind-address and --health-probe-bind-address must differ, both are %q", o.metricsAddress))
	}
	return errors.Join(errs...)
}

// validateLeaderElection checks the leader election flags, in the order of
// the durations client-go requires: lease > renew deadline > 1.2 retry periods.
func (o *options) validateLeaderElection() []error {
	if !o.leaderElect {
		return nil
	}
	var errs []error
	if o.leaderElectionNamespace == "" {
		errs = append(errs, errors.New("--leader-election-namespace is required with --leader-elect"))
	} else if msgs := validation.IsDNS1123Label(o.leaderElectionNamespace); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--leader-election-namespace %q: %s", o.leaderElectionNamespace, strings.Join(msgs, "; ")))
	}
	if msgs := validation.IsDNS1123Subdomain(o.leaderElectionID); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--leader-election-id %q: %s", o.leaderElectionID, strings.Join(msgs, "; ")))
	}
	if o.retryPeriod <= 0 {
		errs = append(errs, fmt.Errorf("--leader-election-retry-period must be positive, got %s", o.retryPeriod))
	}
	if o.renewDeadline <= o.retryPeriod*12/10 {
		errs = append(errs, fmt.Errorf("--leader-election-renew-deadline (%s) must be longer than 1.2 times --leader-election-retry-period (%s)",
			o.renewDeadline, o.retryPeriod))
	}
	if o.leaseDuration <= o.renewDeadline {
		errs = append(errs, fmt.Errorf("--leader-election-lease-duration (%s) must be longer than --leader-election-renew-deadline (%s)",
			o.leaseDuration, o.renewDeadline))
	}
	return errs
}

// validateAddress checks a host:port address of an endpoint, or "0".
func validateAddress(flag, addr string) error {
	if addr == disabled {
		return nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s %q: want host:port, :port or %q: %w", flag, addr, disabled, err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("%s %q: the port must be a number from 0 to 65535", flag, addr)
	}
	return nil
}
