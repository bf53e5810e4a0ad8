// Command peer is lin-operator's reconciler as a team would write it with
// controller-runtime, the kubebuilder way, for cmd/bench to measure next to
// the operator: same children, same status, same event, same number of
// workers. Its README says where each choice comes from.
package main

import (
	"context"
	"flag"
	"os"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"lin.dev/lin-operator/cmd/bench/measured"
	"lin.dev/lin-operator/cmd/bench/peer/internal/controller"
	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/resources"
	"lin.dev/lin-operator/test/harness"
)

var (
	scheme   = runtime.NewScheme()
	setupLog = ctrl.Log.WithName("setup")
)

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(linv1.AddToScheme(scheme))
}

// children are the kinds the reconciler owns, each cached by the label that
// every child carries.
var children = []client.Object{&corev1.ConfigMap{}, &corev1.Service{}, &appsv1.StatefulSet{}, &policyv1.PodDisruptionBudget{}}

func main() {
	var namespace, clusterDomain, statsSocket string
	var workers int
	var syncPeriod time.Duration
	flag.StringVar(&namespace, "namespace", "", "The namespace to watch.")
	flag.StringVar(&clusterDomain, "cluster-domain", "cluster.local", "The cluster's DNS domain.")
	flag.IntVar(&workers, "workers", 4, "Concurrent reconciles, as the operator's --workers.")
	flag.DurationVar(&syncPeriod, "sync-period", 10*time.Minute, "The cache's resync period, as the operator's --resync-period.")
	flag.StringVar(&statsSocket, "stats-socket", "", "A Unix socket where the benchmark reads requests, sync and memory.")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))

	cfg := ctrl.GetConfigOrDie()
	// Measurement only: the benchmark counts every request, as it does the operator's.
	counter := harness.NewRequestCounter()
	cfg.Wrap(counter.Wrap)

	managed, err := labels.Parse(resources.ManagedBySelector)
	if err != nil {
		setupLog.Error(err, "parsing the children's label selector")
		os.Exit(1)
	}
	byObject := map[client.Object]cache.ByObject{}
	for _, obj := range children {
		byObject[obj] = cache.ByObject{Label: managed}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme,
		// The operator in the benchmark serves neither metrics nor probes.
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache: cache.Options{
			DefaultNamespaces: map[string]cache.Config{namespace: {}},
			SyncPeriod:        &syncPeriod,
			DefaultTransform:  cache.TransformStripManagedFields(),
			ByObject:          byObject,
		},
	})
	if err != nil {
		setupLog.Error(err, "unable to start manager")
		os.Exit(1)
	}
	r := &controller.InstallationReconciler{
		Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Recorder: mgr.GetEventRecorder("lin-peer"), ClusterDomain: clusterDomain,
	}
	if err := r.SetupWithManager(mgr, workers); err != nil {
		setupLog.Error(err, "unable to create controller", "controller", "Installation")
		os.Exit(1)
	}
	ctx := ctrl.SetupSignalHandler()
	if statsSocket != "" {
		go func() {
			if err := measured.Serve(ctx, statsSocket, counter, func() bool { return synced(ctx, mgr.GetCache()) }); err != nil {
				setupLog.Error(err, "serving stats")
				os.Exit(1)
			}
		}()
	}
	setupLog.Info("starting manager")
	if err := mgr.Start(ctx); err != nil {
		setupLog.Error(err, "problem running manager")
		os.Exit(1)
	}
}

// synced reports whether the informers of the Installations and of every
// child kind have synced: those that the controller's watches use.
func synced(ctx context.Context, c cache.Cache) bool {
	for _, obj := range append([]client.Object{&linv1.Installation{}}, children...) {
		inf, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		if err != nil || !inf.HasSynced() {
			return false
		}
	}
	return true
}
