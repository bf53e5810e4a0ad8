package deploy

import (
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"lin.dev/lin-operator/test/harness"
)

// monitoringDir holds the ServiceMonitor, the alerts and the dashboard.
const monitoringDir = "deploy/monitoring"

// promql parses PromQL as Prometheus does by default.
var promql = parser.NewParser(parser.Options{})

// scrapeMade are the series that Prometheus makes for each target itself,
// which no /metrics serves.
var scrapeMade = []string{"up"}

// alertRules parses the rule groups of the PrometheusRule in dir with
// Prometheus' own rule parser, which also parses each expression and
// template.
func alertRules(t *testing.T, dir string) *rulefmt.RuleGroups {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, dir, "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		Kind string         `json:"kind"`
		Spec map[string]any `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &rule); err != nil || rule.Kind != "PrometheusRule" {
		t.Fatalf("%s/prometheusrule.yaml is no PrometheusRule (kind %q): %v", dir, rule.Kind, err)
	}
	spec, err := yaml.Marshal(rule.Spec)
	if err != nil {
		t.Fatal(err)
	}
	groups, errs := rulefmt.Parse(spec, false, model.UTF8Validation, promql, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for _, err := range errs {
		t.Errorf("%s/prometheusrule.yaml: %v", dir, err)
	}
	if groups == nil {
		t.FailNow()
	}
	return groups
}

// dashboardQuery is one PromQL expression of the dashboard and where it is.
type dashboardQuery struct{ where, expr string }

// dashboardQueries returns the expressions of every panel of the Grafana
// dashboard JSON in dir, rows' panels included, and of its template
// variables, with Grafana's variables replaced by values so that they parse.
func dashboardQueries(t *testing.T, dir string) []dashboardQuery {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, dir, "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		Title   string                  `json:"title"`
		Targets []struct{ Expr string } `json:"targets"`
		Panels  []json.RawMessage       `json:"panels"`
	}
	var dash struct {
		Panels     []json.RawMessage `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("%s/dashboard.json: %v", dir, err)
	}
	grafana := strings.NewReplacer("$__rate_interval", "5m", "${namespace}", "lin-system", "$namespace", "lin-system")
	var out []dashboardQuery
	var walk func([]json.RawMessage)
	walk = func(raw []json.RawMessage) {
		for _, r := range raw {
			var p panel
			if err := json.Unmarshal(r, &p); err != nil {
				t.Fatalf("%s/dashboard.json: a panel: %v", dir, err)
			}
			for i, target := range p.Targets {
				if target.Expr == "" {
					t.Errorf("dashboard panel %q: target %d has no expression", p.Title, i)
				}
				out = append(out, dashboardQuery{"panel " + p.Title, grafana.Replace(target.Expr)})
			}
			walk(p.Panels)
		}
	}
	walk(dash.Panels)
	for _, v := range dash.Templating.List {
		// label_values(selector, label) holds a selector.
		if inner, ok := strings.CutPrefix(v.Definition, "label_values("); ok {
			selector := inner[:strings.LastIndex(inner, ",")]
			out = append(out, dashboardQuery{"variable " + v.Name, selector})
		}
	}
	return out
}

// metricNames returns the metric names the selectors of expr select.
func metricNames(expr parser.Expr) []string {
	var names []string
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		if vs, ok := node.(*parser.VectorSelector); ok {
			for _, m := range vs.LabelMatchers {
				if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
					names = append(names, m.Value)
				}
			}
		}
		return nil
	})
	return names
}

// monitoringMetrics parses every expression of the alerts and the dashboard
// of dir and returns the metric names they select, each with where.
func monitoringMetrics(t *testing.T, dir string) map[string][]string {
	t.Helper()
	used := map[string][]string{}
	add := func(where, expr string) {
		e, err := promql.ParseExpr(expr)
		if err != nil {
			t.Errorf("%s: %q: %v", where, expr, err)
			return
		}
		names := metricNames(e)
		if len(names) == 0 {
			t.Errorf("%s: %q names no metric", where, expr)
		}
		for _, n := range names {
			used[n] = append(used[n], where)
		}
	}
	for _, g := range alertRules(t, dir).Groups {
		for _, r := range g.Rules {
			add("alert "+r.Alert, r.Expr)
		}
	}
	for _, q := range dashboardQueries(t, dir) {
		add("dashboard "+q.where, q.expr)
	}
	return used
}

// served reports whether the metric name is in families: a family itself,
// or a histogram's _bucket, _sum or _count series.
func served(name string, families metricFamilies) bool {
	if families[name] != nil {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && families[base].GetType() == dto.MetricType_HISTOGRAM {
			return true
		}
	}
	return false
}

// checkMonitoringServed fails the test for each metric that an alert or a
// dashboard panel of deploy/monitoring names and that families, scraped
// from a running operator, lacks.
func checkMonitoringServed(t *testing.T, families metricFamilies) {
	t.Helper()
	used := monitoringMetrics(t, monitoringDir)
	names := make([]string, 0, len(used))
	for n := range used {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !served(n, families) && !slices.Contains(scrapeMade, n) {
			t.Errorf("metric %s, named by %s, is not served by the operator's /metrics", n, strings.Join(used[n], ", "))
		}
	}
	t.Logf("the alerts and the dashboard name %d metrics, all served: %s", len(names), strings.Join(names, " "))
}

func TestAlertsPageOnWhatAPlatformTeamWatches(t *testing.T) {
	groups := alertRules(t, monitoringDir)
	var alerts []string
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				t.Errorf("group %s: rule %q is no alert", g.Name, r.Record)
				continue
			}
			alerts = append(alerts, r.Alert)
			if r.For == 0 {
				t.Errorf("alert %s fires on one evaluation: give it a for", r.Alert)
			}
			if s := r.Labels["severity"]; s != "critical" && s != "warning" {
				t.Errorf("alert %s: severity %q, want critical or warning", r.Alert, s)
			}
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("alert %s lacks a summary or a description", r.Alert)
			}
			if !strings.Contains(r.Expr, `job="lin-operator"`) {
				t.Errorf("alert %s: %q does not select job=\"lin-operator\", the ServiceMonitor's job", r.Alert, r.Expr)
			}
		}
	}
	for _, want := range []string{
		"LinOperatorDown", "LinOperatorNoLeader", "LinOperatorReconcileErrors", "LinOperatorWorkqueueDepthHigh",
		"LinOperatorWorkqueueLatencyHigh", "LinInstallationDegraded", "LinInstallationRolloutStalled", "LinOperatorClientThrottled",
	} {
		if !slices.Contains(alerts, want) {
			t.Errorf("no alert %s among %v", want, alerts)
		}
	}
	// Every expression parses; that each metric is served is checked
	// against a running operator in TestMetricsAndHealthEndpoints.
	if used := monitoringMetrics(t, monitoringDir); len(used) == 0 {
		t.Error("the alerts and the dashboard name no metric")
	}
}

func TestTheServiceMonitorScrapesTheOperatorsMetricsPort(t *testing.T) {
	objs := render(t, filepath.Join(repoRoot, monitoringDir))
	var svc corev1.Service
	harness.Typed(t, objs, "Service", &svc)
	var monitor *unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "ServiceMonitor" {
			monitor = o
		}
	}
	if monitor == nil {
		t.Fatal("deploy/monitoring makes no ServiceMonitor")
	}
	selector, _, _ := unstructured.NestedStringMap(monitor.Object, "spec", "selector", "matchLabels")
	for k, v := range selector {
		if svc.Labels[k] != v {
			t.Errorf("the ServiceMonitor selects %s=%s; the metrics Service has labels %v", k, v, svc.Labels)
		}
	}
	if job, _, _ := unstructured.NestedString(monitor.Object, "spec", "jobLabel"); svc.Labels[job] != "lin-operator" {
		t.Errorf("the ServiceMonitor's job label %q gives job %q, want lin-operator, which the alerts select", job, svc.Labels[job])
	}
	endpoints, _, _ := unstructured.NestedSlice(monitor.Object, "spec", "endpoints")
	if len(endpoints) != 1 || endpoints[0].(map[string]any)["port"] != "metrics" || svc.Spec.Ports[0].Name != "metrics" {
		t.Errorf("the ServiceMonitor scrapes %v; the Service's ports are %+v", endpoints, svc.Spec.Ports)
	}

	// The Service reaches the Deployment's metrics port.
	var deployment appsv1.Deployment
	harness.Typed(t, render(t, filepath.Join(repoRoot, "deploy")), "Deployment", &deployment)
	operatorPod := deployment.Spec.Template
	for k, v := range svc.Spec.Selector {
		if operatorPod.Labels[k] != v {
			t.Errorf("the metrics Service selects %s=%s; the operator's pods have labels %v", k, v, operatorPod.Labels)
		}
	}
	if !slices.ContainsFunc(operatorPod.Spec.Containers[0].Ports, func(p corev1.ContainerPort) bool {
		return p.Name == svc.Spec.Ports[0].TargetPort.String()
	}) {
		t.Errorf("the metrics Service targets port %s; the operator's container has %+v", svc.Spec.Ports[0].TargetPort.String(), operatorPod.Spec.Containers[0].Ports)
	}
}
