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

	corev1 "k8s.io/api/core/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"lin.dev/lin-operator/pkg/client/clientset/versioned"
	linscheme "lin.dev/lin-operator/pkg/client/clientset/versioned/scheme"
	"lin.dev/lin-operator/pkg/controller"
)

// userAgent names the operator in the API server's logs and metrics.
const userAgent = "lin-operator"

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

// run builds the clients, informers and controller, and runs the controller
// until ctx is done; then it drains the queue and returns.
func run(ctx context.Context, o options) error {
	cfg, err := restConfig(o.kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = float32(o.qps), o.burst
	cfg.UserAgent = userAgent
	// A hung request must not hold a worker, or the drain at shutdown, forever.
	cfg.Timeout = 30 * time.Second
	kubeClient, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("making the Kubernetes client: %w", err)
	}
	linClient, err := versioned.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("making the lin.dev client: %w", err)
	}

	utilruntime.Must(linscheme.AddToScheme(scheme.Scheme))
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	defer broadcaster.Shutdown()
	broadcaster.StartStructuredLogging(0)
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kubeClient.CoreV1().Events("")})

	inf := controller.NewInformers(kubeClient, linClient, controller.InformerOptions{
		Namespaces: o.namespaces, ResyncPeriod: o.resyncPeriod, InstallationSelector: o.installationSelector,
	})
	ctrl, err := controller.New(kubeClient, linClient, inf, controller.Options{
		ClusterDomain: o.clusterDomain,
		Recorder:      broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: userAgent}),
	})
	if err != nil {
		return err
	}
	inf.Start(ctx)
	defer inf.Shutdown()
	klog.InfoS("Starting lin-operator", "namespaces", o.namespaces.String(), "workers", o.workers,
		"resyncPeriod", o.resyncPeriod, "qps", o.qps, "burst", o.burst)
	return ctrl.Run(ctx, o.workers)
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
