package helm

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"lin.dev/lin-operator/test/harness"
)

// helm runs helm against the control plane with args and returns its
// standard output (harness.Helm).
func helm(t *testing.T, args ...string) []byte {
	t.Helper()
	return harness.Helm(t, testEnv.BinDir, testEnv.KubeconfigPath, args...)
}

// template renders the chart as release name in namespace with the --set
// values of set.
func template(t *testing.T, name, namespace string, set ...string) []*unstructured.Unstructured {
	t.Helper()
	args := []string{"template", name, chartDir, "--namespace", namespace}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	return harness.DecodeObjects(t, "helm template", helm(t, args...))
}

// kustomize renders the kustomization in the folder dir of the repository.
func kustomize(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	out, err := testEnv.Kubectl(t.Context(), "kustomize", filepath.Join(repoRoot, dir))
	if err != nil {
		t.Fatal(err)
	}
	return harness.DecodeObjects(t, "kubectl kustomize "+dir, out)
}

func TestTheChartLints(t *testing.T) {
	for _, set := range [][]string{
		nil,
		{"watchNamespaces={team-a,team-b}", "metrics.serviceMonitor.enabled=true", "metrics.prometheusRule.enabled=true",
			"metrics.grafanaDashboard.enabled=true", "extraArgs={--workers=8}"},
		{"metrics.certSecret=metrics-cert", "metrics.serviceMonitor.enabled=true"},
		{"metrics.secure=false", "metrics.serviceMonitor.enabled=true"},
	} {
		args := []string{"lint", "--strict", chartDir}
		for _, s := range set {
			args = append(args, "--set", s)
		}
		helm(t, args...)
	}
}

func TestTheSchemaRefusesBadValuesNamingThem(t *testing.T) {
	for _, tc := range []struct{ set, want string }{
		{"replicas=-1", "/replicas"},
		{"watchNamespaces={Team_A}", "/watchNamespaces/0"},
		{"image.pullPolicy=Sometimes", "/image/pullPolicy"},
		{"metrics.port=70000", "/metrics/port"},
		{"metrics.certSecret=Bad_Name", "/metrics/certSecret"},
		{"metrics.secure=yes", "/metrics/secure"},
		{"metrics.secure=false,metrics.certSecret=metrics-cert", "metrics.certSecret serves /metrics over HTTPS: it needs metrics.secure"},
		{"extraArgs={workers}", "/extraArgs/0"},
		{"replica=3", "additional properties 'replica' not allowed"},
		{"networkPolicy.apiServer.ports={0}", "/networkPolicy/apiServer/ports/0"},
		{"networkPolicy.metricsFrom=null", "metricsFrom"},
	} {
		cmd := exec.CommandContext(t.Context(), filepath.Join(testEnv.BinDir, "helm"), "template", "x", chartDir, "--set", tc.set)
		cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("helm template --set %s: %v, output does not name %q:\n%s", tc.set, err, tc.want, out)
		}
	}
}

// roles returns the rules of each Role and ClusterRole of objs, by kind,
// namespace and name.
func roles(t *testing.T, objs []*unstructured.Unstructured) map[string][]rbacv1.PolicyRule {
	t.Helper()
	out := map[string][]rbacv1.PolicyRule{}
	for _, o := range objs {
		if o.GetKind() != "Role" && o.GetKind() != "ClusterRole" {
			continue
		}
		var r rbacv1.ClusterRole
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &r); err != nil {
			t.Fatal(err)
		}
		out[o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName()] = r.Rules
	}
	return out
}

// bindings returns the role and the subjects of each RoleBinding and
// ClusterRoleBinding of objs, formatted, by kind, namespace and name.
func bindings(t *testing.T, objs []*unstructured.Unstructured) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, o := range objs {
		if o.GetKind() != "RoleBinding" && o.GetKind() != "ClusterRoleBinding" {
			continue
		}
		var b rbacv1.ClusterRoleBinding
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &b); err != nil {
			t.Fatal(err)
		}
		out[o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName()] = fmt.Sprintf("%s %s to %+v", b.RoleRef.Kind, b.RoleRef.Name, b.Subjects)
	}
	return out
}

// networkPolicy returns the spec of the NetworkPolicy in objs, with its pod
// selector, which must select the Deployment's pods, blanked: the chart's
// selector adds the release.
func networkPolicy(t *testing.T, what string, objs []*unstructured.Unstructured) networkingv1.NetworkPolicySpec {
	t.Helper()
	var np networkingv1.NetworkPolicy
	harness.Typed(t, objs, "NetworkPolicy", &np)
	var d appsv1.Deployment
	harness.Typed(t, objs, "Deployment", &d)
	selector, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil || selector.Empty() || !selector.Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("%s: the NetworkPolicy selects %v (%v); the operator's pods have labels %v", what, np.Spec.PodSelector, err, d.Spec.Template.Labels)
	}
	np.Spec.PodSelector = metav1.LabelSelector{}
	return np.Spec
}

// TestTheNetworkPolicyFollowsItsValues: networkPolicy.enabled=false renders
// none, and the API server's addresses, when given, narrow its egress.
func TestTheNetworkPolicyFollowsItsValues(t *testing.T) {
	for _, o := range template(t, "lin-operator", "lin-system", "networkPolicy.enabled=false") {
		if o.GetKind() == "NetworkPolicy" {
			t.Errorf("networkPolicy.enabled=false rendered NetworkPolicy %s", o.GetName())
		}
	}
	var np networkingv1.NetworkPolicy
	harness.Typed(t, template(t, "lin-operator", "lin-system", "networkPolicy.apiServer.cidrs={10.0.0.10/32}"), "NetworkPolicy", &np)
	if len(np.Spec.Egress) != 1 || len(np.Spec.Egress[0].To) != 1 || np.Spec.Egress[0].To[0].IPBlock == nil ||
		np.Spec.Egress[0].To[0].IPBlock.CIDR != "10.0.0.10/32" {
		t.Errorf("networkPolicy.apiServer.cidrs={10.0.0.10/32}: egress %+v, want to 10.0.0.10/32 alone", np.Spec.Egress)
	}
}

// TestTheMetricsFollowTheirValues: metrics.secure=false serves plain HTTP
// and grants nothing for reviews; metrics.certSecret mounts the Secret for
// the operator and has the ServiceMonitor verify it by the Service's name.
func TestTheMetricsFollowTheirValues(t *testing.T) {
	for _, tc := range []struct {
		set []string
		// args are in the operator's arguments; endpoint is the
		// ServiceMonitor's endpoint, rendered.
		args     []string
		endpoint string
		grants   bool
	}{
		{nil, []string{"--metrics-bind-address=:8443"},
			`map[bearerTokenFile:/var/run/secrets/kubernetes.io/serviceaccount/token honorLabels:true interval:30s path:/metrics port:metrics scheme:https tlsConfig:map[insecureSkipVerify:true]]`, true},
		{[]string{"metrics.secure=false"}, []string{"--metrics-secure=false"},
			`map[honorLabels:true interval:30s path:/metrics port:metrics]`, false},
		{[]string{"metrics.certSecret=metrics-cert"}, []string{"--metrics-cert-dir=/var/run/lin-operator/metrics-certs"},
			`map[bearerTokenFile:/var/run/secrets/kubernetes.io/serviceaccount/token honorLabels:true interval:30s path:/metrics port:metrics scheme:https tlsConfig:map[ca:map[secret:map[key:ca.crt name:metrics-cert]] serverName:lin-operator-metrics.lin-system.svc]]`, true},
	} {
		objs := template(t, "lin-operator", "lin-system", append(tc.set, "metrics.serviceMonitor.enabled=true")...)
		args := harness.DeploymentArgs(t, objs)
		for _, a := range tc.args {
			if !slices.Contains(args, a) {
				t.Errorf("--set %v: the operator runs with %q, without %s", tc.set, args, a)
			}
		}
		var endpoint string
		for _, o := range objs {
			if o.GetKind() == "ServiceMonitor" {
				eps, _, _ := unstructured.NestedSlice(o.Object, "spec", "endpoints")
				endpoint = fmt.Sprint(eps[0])
			}
		}
		if endpoint != tc.endpoint {
			t.Errorf("--set %v: the ServiceMonitor's endpoint is\n%s\nwant\n%s", tc.set, endpoint, tc.endpoint)
		}
		_, grants := bindings(t, objs)["ClusterRoleBinding /lin-operator-metrics-auth"]
		if grants != tc.grants {
			t.Errorf("--set %v: the binding to system:auth-delegator is there: %t, want %t", tc.set, grants, tc.grants)
		}
		var d appsv1.Deployment
		harness.Typed(t, objs, "Deployment", &d)
		volumes := d.Spec.Template.Spec.Volumes
		mounted := len(volumes) == 1 && volumes[0].Secret != nil && volumes[0].Secret.SecretName == "metrics-cert"
		if wantMount := slices.Contains(tc.set, "metrics.certSecret=metrics-cert"); mounted != wantMount {
			t.Errorf("--set %v: volumes %+v, want the Secret metrics-cert mounted: %t", tc.set, volumes, wantMount)
		}
	}
}

// comparableSpec returns the spec of the Deployment in objs, and its
// container's arguments expanded, with what the chart may render
// differently blanked: the arguments, the selectors and the pod labels,
// which must select the Deployment's own pods.
func comparableSpec(t *testing.T, what string, objs []*unstructured.Unstructured) (appsv1.DeploymentSpec, []string) {
	t.Helper()
	var d appsv1.Deployment
	harness.Typed(t, objs, "Deployment", &d)
	spec := *d.Spec.DeepCopy()
	pod := &spec.Template.Spec
	terms := pod.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
	for i := range terms {
		term := &terms[i]
		for k, v := range term.PodAffinityTerm.LabelSelector.MatchLabels {
			if spec.Template.Labels[k] != v {
				t.Errorf("%s: the anti-affinity selects %s=%s; the pods have labels %v", what, k, v, spec.Template.Labels)
			}
		}
		term.PodAffinityTerm.LabelSelector = nil
	}
	for k, v := range spec.Selector.MatchLabels {
		if spec.Template.Labels[k] != v {
			t.Errorf("%s: the Deployment selects %s=%s; its pods have labels %v", what, k, v, spec.Template.Labels)
		}
	}
	pod.Containers[0].Args = nil
	// The chart's selector and pod labels add the release (instance).
	spec.Selector, spec.Template.Labels = nil, nil
	return spec, harness.DeploymentArgs(t, objs)
}

// TestTemplateRendersWhatDeployDoes renders the chart with its default
// values, for every namespace and for one, and the kustomizations of
// deploy/ that install the same: the operator's Deployment (pod, container,
// expanded arguments), its rules and its bindings must be the same, so that
// the two installs never drift apart.
func TestTemplateRendersWhatDeployDoes(t *testing.T) {
	for _, tc := range []struct {
		name, dir, namespace string
		set                  []string
	}{
		{"every namespace", "deploy", "lin-system", nil},
		{"one namespace", "deploy/namespaced", "lin-apps", []string{"watchNamespaces={lin-apps}"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// deploy/ names the image lin-operator:latest, for kustomize edit set image to change.
			chart := template(t, "lin-operator", tc.namespace, append(tc.set, "image.tag=latest")...)
			kust := kustomize(t, tc.dir)

			chartSpec, chartArgs := comparableSpec(t, "the chart", chart)
			kustSpec, kustArgs := comparableSpec(t, tc.dir, kust)
			if !equality.Semantic.DeepEqual(chartSpec, kustSpec) {
				t.Errorf("the chart's Deployment differs from %s's:\nchart: %+v\n%s: %+v", tc.dir, chartSpec, tc.dir, kustSpec)
			}
			if !slices.Equal(chartArgs, kustArgs) {
				t.Errorf("the chart runs the operator with %q, %s with %q", chartArgs, tc.dir, kustArgs)
			}
			chartRoles, chartBindings := roles(t, chart), bindings(t, chart)
			if tc.set != nil {
				// deploy/namespaced holds nothing cluster-scoped, so that a
				// namespace admin can apply it, and leaves the grants of
				// authenticated metrics to a cluster admin, as its README
				// section says; a Helm install, which installs the CRD, makes
				// them.
				delete(chartRoles, "ClusterRole /lin-operator-metrics-reader")
				delete(chartBindings, "ClusterRoleBinding /lin-operator-metrics-auth")
			}
			for what, pair := range map[string][2]any{
				"Roles and ClusterRoles": {chartRoles, roles(t, kust)},
				"bindings":               {chartBindings, bindings(t, kust)},
				"NetworkPolicies":        {networkPolicy(t, "the chart", chart), networkPolicy(t, tc.dir, kust)},
			} {
				if !equality.Semantic.DeepEqual(pair[0], pair[1]) {
					t.Errorf("the chart's %s differ from %s's:\nchart: %+v\n%s: %+v", what, tc.dir, pair[0], tc.dir, pair[1])
				}
			}
		})
	}
}

func TestTheChartCarriesTheCRDAndTheMonitoringOfDeploy(t *testing.T) {
	for copy, source := range map[string]string{
		"crds/lin.dev_installations.yaml": "deploy/crds/lin.dev_installations.yaml",
		"files/prometheusrule.yaml":       "deploy/monitoring/prometheusrule.yaml",
		"files/dashboard.json":            "deploy/monitoring/dashboard.json",
	} {
		got, err1 := os.ReadFile(filepath.Join(chartDir, copy))
		want, err2 := os.ReadFile(filepath.Join(repoRoot, source))
		if err1 != nil || err2 != nil || !bytes.Equal(got, want) {
			t.Errorf("the chart's %s is not %s (run make generate): %v %v", copy, source, err1, err2)
		}
	}
	objs := template(t, "lin-operator", "lin-system", "metrics.serviceMonitor.enabled=true",
		"metrics.prometheusRule.enabled=true", "metrics.grafanaDashboard.enabled=true")
	kust := kustomize(t, "deploy/monitoring")
	for _, kind := range []string{"ServiceMonitor", "PrometheusRule"} {
		var chartSpec, kustSpec map[string]any
		for _, o := range objs {
			if o.GetKind() == kind {
				chartSpec = o.Object["spec"].(map[string]any)
			}
		}
		for _, o := range kust {
			if o.GetKind() == kind {
				kustSpec = o.Object["spec"].(map[string]any)
			}
		}
		if kind == "ServiceMonitor" && chartSpec != nil {
			// The chart selects its release's Service among others'.
			delete(chartSpec["selector"].(map[string]any)["matchLabels"].(map[string]any), "app.kubernetes.io/instance")
		}
		if chartSpec == nil || !equality.Semantic.DeepEqual(chartSpec, kustSpec) {
			t.Errorf("the chart's %s spec differs from deploy/monitoring's:\nchart: %v\ndeploy: %v", kind, chartSpec, kustSpec)
		}
	}
	var chartDashboard, kustDashboard string
	for _, o := range objs {
		if o.GetKind() == "ConfigMap" {
			chartDashboard, _, _ = unstructured.NestedString(o.Object, "data", "lin-operator.json")
		}
	}
	for _, o := range kust {
		if o.GetKind() == "ConfigMap" {
			kustDashboard, _, _ = unstructured.NestedString(o.Object, "data", "lin-operator.json")
		}
	}
	if chartDashboard == "" || strings.TrimSpace(chartDashboard) != strings.TrimSpace(kustDashboard) {
		t.Errorf("the chart's dashboard ConfigMap does not hold deploy/monitoring's dashboard (%d and %d bytes)", len(chartDashboard), len(kustDashboard))
	}
}
