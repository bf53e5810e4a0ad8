// Command operator runs the lin-operator: it reconciles Installations
// (lin.dev/v1) into StatefulSets, ConfigMaps and Services.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"lin.dev/lin-operator/pkg/operator"
)

func main() {
	klog.InitFlags(nil)
	var o options
	o.bind(flag.CommandLine)
	flag.Parse()
	if err := o.validate(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, o); err != nil {
		klog.ErrorS(err, "Operator failed")
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}

// run builds the operator and runs it until ctx is done; then it drains the
// queue and returns.
func run(ctx context.Context, o options) error {
	cfg, err := restConfig(o.kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = float32(o.qps), o.burst
	cfg.UserAgent = operator.Component
	// A hung request must not hold a worker, or the drain at shutdown, forever.
	cfg.Timeout = 30 * time.Second
	op, err := operator.New(cfg, o.operatorConfig())
	if err != nil {
		return err
	}
	klog.InfoS("Starting lin-operator", "namespaces", o.namespaces.String(), "workers", o.workers,
		"resyncPeriod", o.resyncPeriod, "qps", o.qps, "burst", o.burst, "leaderElect", o.leaderElect)
	return op.Run(ctx)
}

// operatorConfig turns the flags into the operator's configuration.
func (o options) operatorConfig() operator.Config {
	cfg := operator.Config{
		Namespaces: o.namespaces, Workers: o.workers, ResyncPeriod: o.resyncPeriod,
		ClusterDomain: o.clusterDomain, InstallationSelector: o.installationSelector,
		MetricsAddress: enabled(o.metricsAddress), HealthAddress: enabled(o.healthAddress),
		MetricsInsecure: !o.metricsSecure, MetricsCertDir: o.metricsCertDir,
		Compression: o.compression,
	}
	if o.leaderElect {
		cfg.LeaderElection = &operator.LeaderElection{
			Namespace: o.leaderElectionNamespace, Name: o.leaderElectionID,
			LeaseDuration: o.leaseDuration, RenewDeadline: o.renewDeadline, RetryPeriod: o.retryPeriod,
		}
	}
	return cfg
}

// enabled returns addr, or "" for the address that turns an endpoint off.
func enabled(addr string) string {
	if addr == disabled {
		return ""
	}
	return addr
}

// restConfig loads the API server's address and credentials: from the
// kubeconfig named, else in-cluster, else by the usual kubeconfig rules.
func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		cfg, err := rest.InClusterConfig()
		if err == nil {
			return cfg, nil
		}
		if !errors.Is(err, rest.ErrNotInCluster) {
			return nil, fmt.Errorf("loading the in-cluster config: %w", err)
		}
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	return cfg, nil
}
