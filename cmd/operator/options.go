package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
)

// options are the operator's command-line flags.
type options struct {
	kubeconfig           string
	namespaces           namespaceList
	workers              int
	resyncPeriod         time.Duration
	qps                  float64
	burst                int
	clusterDomain        string
	installationSelector string
}

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
	fs.IntVar(&o.workers, "workers", 4, "Number of Installations reconciled at once.")
	fs.DurationVar(&o.resyncPeriod, "resync-period", 10*time.Minute,
		"How often every Installation is reconciled again although nothing changed (0: never).")
	fs.Float64Var(&o.qps, "kube-api-qps", 50, "Steady requests per second to the API server.")
	fs.IntVar(&o.burst, "kube-api-burst", 100, "Requests allowed in a burst above --kube-api-qps.")
	fs.StringVar(&o.clusterDomain, "cluster-domain", "cluster.local", "The cluster's DNS domain, used in pod and Service names.")
	fs.StringVar(&o.installationSelector, "installation-selector", "",
		"Label selector of the Installations this operator reconciles; empty: all.")
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
	for _, ns := range o.namespaces {
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--namespace %q: %s", ns, strings.Join(msgs, "; ")))
		}
	}
	if _, err := labels.Parse(o.installationSelector); err != nil {
		errs = append(errs, fmt.Errorf("--installation-selector: %w", err))
	}
	return errors.Join(errs...)
}
