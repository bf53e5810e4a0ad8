package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
)

// PhaseUnknown is the phase label of Installations that have no status yet.
const PhaseUnknown = "Unknown"

// phases are exported even when no Installation is in them, so that a gauge
// drops to zero instead of vanishing.
var phases = []linv1.Phase{
	linv1.PhasePending, linv1.PhaseProgressing, linv1.PhaseReady,
	linv1.PhaseDegraded, linv1.PhaseStopped, linv1.PhasePaused,
}

// installationsDesc describes the gauge of Installations by phase.
var installationsDesc = prometheus.NewDesc(Prefix+"installations",
	"Installations this operator reconciles (its namespaces and --installation-selector), by status phase.",
	[]string{"phase"}, nil)

// conditionDesc describes the conditions of each Installation, one series
// per condition (three per Installation), as kube-state-metrics exports
// those of Deployments: alerts can name the Installation that is Degraded or
// whose rollout stalled.
var conditionDesc = prometheus.NewDesc(Prefix+"installation_condition",
	"1 for each condition of an Installation's status, by namespace, installation, type, status and reason.",
	[]string{"namespace", "installation", "type", "status", "reason"}, nil)

// installationCollector counts the Installations in the informer caches at
// each scrape, which needs no bookkeeping as they change.
type installationCollector struct {
	// list returns the cached Installations.
	list func() ([]*linv1.Installation, error)
}

// NewInstallationCollector returns a collector of the Installations that list
// returns: their count by phase and the conditions of each. list should read from a cache, not the API server.
func NewInstallationCollector(list func() ([]*linv1.Installation, error)) prometheus.Collector {
	return installationCollector{list: list}
}

// Describe implements prometheus.Collector.
func (c installationCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- installationsDesc
	ch <- conditionDesc
}

// Collect implements prometheus.Collector.
func (c installationCollector) Collect(ch chan<- prometheus.Metric) {
	insts, err := c.list()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(installationsDesc, err)
		return
	}
	for _, inst := range insts {
		for _, cond := range inst.Status.Conditions {
			ch <- prometheus.MustNewConstMetric(conditionDesc, prometheus.GaugeValue, 1,
				inst.Namespace, inst.Name, cond.Type, string(cond.Status), cond.Reason)
		}
	}
	counts := map[string]int{}
	for _, p := range phases {
		counts[string(p)] = 0
	}
	for _, inst := range insts {
		phase := string(inst.Status.Phase)
		if phase == "" {
			phase = PhaseUnknown
		}
		counts[phase]++
	}
	for phase, n := range counts {
		ch <- prometheus.MustNewConstMetric(installationsDesc, prometheus.GaugeValue, float64(n), phase)
	}
}
