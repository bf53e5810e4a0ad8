package deploy

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	promconfig "github.com/prometheus/common/config"

	"k8s.io/client-go/transport"
	certutil "k8s.io/client-go/util/cert"

	"lin.dev/lin-operator/pkg/metrics"
	"lin.dev/lin-operator/test/harness"
)

// metricsReader is the ClusterRole of deploy/ that lets a scraper in.
const metricsReader = "lin-operator-metrics-reader"

var (
	// scraper GETs the operators' /metrics as Prometheus does: with the
	// token of a ServiceAccount bound to metricsReader, over HTTPS without
	// verifying the self-signed certificate. startOperator sets it.
	scraper      *http.Client
	scraperToken string
	scraperOnce  sync.Once
)

// setUpScraper makes scraper, once: deploy/ must be installed for its role.
func setUpScraper(t *testing.T) {
	t.Helper()
	install(t)
	scraperOnce.Do(func() {
		scraperToken = harness.ScraperToken(t, testEnv.Client, systemNamespace, "metrics-scraper", metricsReader)
		scraper = tokenClient(scraperToken)
	})
	if scraper == nil {
		t.Fatal("no scraper: its set-up failed in an earlier test")
	}
}

// tokenClient returns a client that sends token, when there is one, and
// does not verify the server's certificate.
func tokenClient(token string) *http.Client {
	var rt http.RoundTripper = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	if token != "" {
		rt = transport.NewBearerAuthRoundTripper(token, rt)
	}
	return &http.Client{Transport: rt}
}

// TestMetricsLetInOnlyWhomRBACAllows scrapes an operator that runs as the
// ServiceAccount of deploy/, under its RBAC, as four callers: without a
// token, with a token the API server never issued, as a ServiceAccount
// with no role, and as one bound to lin-operator-metrics-reader. The
// health endpoints stay open, for the kubelet.
func TestMetricsLetInOnlyWhomRBACAllows(t *testing.T) {
	ns := harness.Namespace(t, testEnv.Client)
	op := startLeader(t, "auth", ns, "auth-test")
	url := op.metricsURL + "/metrics"
	if !strings.HasPrefix(url, "https://") {
		t.Fatalf("the operator serves %s, want HTTPS by default", url)
	}
	for _, c := range []struct {
		who    string
		client *http.Client
		want   int
	}{
		{"no token", tokenClient(""), http.StatusUnauthorized},
		{"a token the API server never issued", tokenClient("not-a-token"), http.StatusUnauthorized},
		{"a ServiceAccount with no role", tokenClient(harness.ScraperToken(t, testEnv.Client, ns, "nobody", "")), http.StatusForbidden},
		{"a ServiceAccount bound to " + metricsReader, scraper, http.StatusOK},
	} {
		code, body, err := get(t.Context(), c.client, url)
		if err != nil || code != c.want {
			t.Errorf("%s: GET %s = %d %v, want %d:\n%.300s", c.who, url, code, err, c.want, body)
			continue
		}
		t.Logf("%s: %d %.80s", c.who, code, strings.TrimSpace(body))
		if code == http.StatusOK && !strings.Contains(body, metrics.Prefix+"reconcile_total") {
			t.Errorf("%s: the answer has no %sreconcile_total:\n%.300s", c.who, metrics.Prefix, body)
		}
	}
	// The reviews' caches answer the next scrapes with the same token: no
	// review, and the two checks of the operator's own access at start.
	before, err := op.metrics(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	const scrapes = 20
	for range scrapes {
		if _, err := op.metrics(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	after, err := op.metrics(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	reviews := func(m metricFamilies, resource string) float64 {
		return m.sum(metrics.Prefix+"access_reviews_total", map[string]string{"resource": resource})
	}
	for _, r := range []string{"tokenreviews", "subjectaccessreviews"} {
		if n := reviews(after, r) - reviews(before, r); n != 0 {
			t.Errorf("%d scrapes with a token just reviewed cost %g %s, want none", scrapes+1, n, r)
		}
	}
	t.Logf("reviews so far: %g tokenreviews, %g subjectaccessreviews (for %d callers and %d scrapes), %g selfsubjectaccessreviews at start",
		reviews(after, "tokenreviews"), reviews(after, "subjectaccessreviews"), 4, scrapes+6, reviews(after, "selfsubjectaccessreviews"))
	if n := reviews(after, "selfsubjectaccessreviews"); n != 2 {
		t.Errorf("%g selfsubjectaccessreviews, want the 2 of the start", n)
	}

	// Plain HTTP to the HTTPS port is refused by the TLS server.
	if code, body, err := get(t.Context(), http.DefaultClient, strings.Replace(url, "https://", "http://", 1)); err != nil ||
		code != http.StatusBadRequest || !strings.Contains(body, "HTTP request to an HTTPS server") {
		t.Errorf("GET over plain HTTP = %d %q %v, want 400 from the TLS server", code, body, err)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body, err := get(t.Context(), http.DefaultClient, op.healthURL+path); err != nil || code != http.StatusOK {
			t.Errorf("GET %s without a token: %d %q %v, want 200", path, code, body, err)
		}
	}
	assertNothingForbidden(t, op)
}

// serviceMonitorEndpoint is what the ServiceMonitor of deploy/monitoring
// tells Prometheus about scraping the operator.
type serviceMonitorEndpoint struct {
	Scheme          string `json:"scheme"`
	Path            string `json:"path"`
	BearerTokenFile string `json:"bearerTokenFile"`
	TLSConfig       struct {
		InsecureSkipVerify bool   `json:"insecureSkipVerify"`
		ServerName         string `json:"serverName"`
	} `json:"tlsConfig"`
}

// promScrape GETs url with Prometheus' own HTTP client library, configured
// as the Prometheus Operator configures a scrape: a bearer token file and
// TLS settings. It returns the status and body.
func promScrape(t *testing.T, cfg promconfig.HTTPClientConfig, url string) (int, string, error) {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	client, err := promconfig.NewClientFromConfig(cfg, "lin-operator")
	if err != nil {
		t.Fatal(err)
	}
	return get(t.Context(), client, url)
}

// TestAScrapeWithTheServiceMonitorsSettingsGetsIn scrapes an operator of
// deploy/ as Prometheus would through the ServiceMonitor: its scheme, path,
// bearer token file (holding the token of a Prometheus ServiceAccount bound
// to lin-operator-metrics-reader, as the ServiceMonitor's comment says) and
// TLS settings, with Prometheus' HTTP client library.
func TestAScrapeWithTheServiceMonitorsSettingsGetsIn(t *testing.T) {
	var monitor struct {
		Spec struct {
			Endpoints []serviceMonitorEndpoint `json:"endpoints"`
		} `json:"spec"`
	}
	objs := render(t, filepath.Join(repoRoot, monitoringDir))
	for _, o := range objs {
		if o.GetKind() == "ServiceMonitor" {
			data, _ := o.MarshalJSON()
			if err := json.Unmarshal(data, &monitor); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(monitor.Spec.Endpoints) != 1 {
		t.Fatalf("the ServiceMonitor has endpoints %+v, want one", monitor.Spec.Endpoints)
	}
	ep := monitor.Spec.Endpoints[0]
	if ep.Scheme != "https" || ep.BearerTokenFile == "" {
		t.Errorf("the ServiceMonitor scrapes with scheme %q and token file %q, want https with a token", ep.Scheme, ep.BearerTokenFile)
	}

	ns := harness.Namespace(t, testEnv.Client)
	op := startLeader(t, "servicemonitor", ns, "servicemonitor-test")
	// The file that Prometheus' pod mounts at ep.BearerTokenFile.
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(harness.ScraperToken(t, testEnv.Client, ns, "prometheus", metricsReader)), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := promconfig.HTTPClientConfig{
		BearerTokenFile: tokenFile,
		TLSConfig:       promconfig.TLSConfig{InsecureSkipVerify: ep.TLSConfig.InsecureSkipVerify, ServerName: ep.TLSConfig.ServerName},
	}
	url := ep.Scheme + "://" + strings.SplitN(op.metricsURL, "://", 2)[1] + ep.Path
	code, body, err := promScrape(t, cfg, url)
	if err != nil || code != http.StatusOK || !strings.Contains(body, metrics.Prefix+"installations") {
		t.Fatalf("scraping %s with the ServiceMonitor's settings: %d %v:\n%.300s", url, code, err, body)
	}
	t.Logf("scraped %s with the ServiceMonitor's settings: %d, %d bytes", url, code, len(body))
}

// TestMetricsServeTheMountedCertificateAndItsRotation gives the operator a
// certificate with --metrics-cert-dir, as the chart's metrics.certSecret
// mounts cert-manager's Secret, and scrapes it verifying the certificate by
// the metrics Service's DNS name. Then it replaces the files, as the kubelet
// updates a Secret's volume, and waits until the new certificate is served,
// with no restart.
func TestMetricsServeTheMountedCertificateAndItsRotation(t *testing.T) {
	const serverName = "lin-operator-metrics.lin-system.svc"
	dir := t.TempDir()
	firstCA := writeCertificate(t, dir, serverName)
	ns := harness.Namespace(t, testEnv.Client)
	op := startLeader(t, "certificate", ns, "certificate-test", "--metrics-cert-dir="+dir)
	url := op.metricsURL + "/metrics"
	verifying := func(ca string) promconfig.HTTPClientConfig {
		return promconfig.HTTPClientConfig{BearerToken: promconfig.Secret(scraperToken),
			TLSConfig: promconfig.TLSConfig{CA: ca, ServerName: serverName}}
	}
	if code, _, err := promScrape(t, verifying(firstCA), url); err != nil || code != http.StatusOK {
		t.Fatalf("scraping %s, verifying the mounted certificate: %d %v", url, code, err)
	}

	secondCA := writeCertificate(t, dir, serverName)
	if _, _, err := promScrape(t, verifying(secondCA), url); err == nil {
		t.Log("the new certificate was served at once")
	}
	start := time.Now()
	harness.Eventually(t, 2*time.Minute, "the new certificate to be served", func(context.Context) (bool, error) {
		code, _, err := promScrape(t, verifying(secondCA), url)
		return err == nil && code == http.StatusOK, err
	})
	t.Logf("the rotated certificate was served %v after the files changed, by the same process (pid %d)", time.Since(start).Round(time.Millisecond), op.Pid())
	if op.Exited() {
		t.Fatalf("the operator exited: %v", op.Err())
	}
}

// writeCertificate writes a new key and a certificate for serverName, signed
// by a new CA, into dir's tls.key and tls.crt, as the kubelet writes a
// Secret's volume: the files are links into ..data, a link to a directory
// of the current version, which a rename swaps at once. It returns the CA's
// certificate in PEM.
func writeCertificate(t *testing.T, dir, serverName string) string {
	t.Helper()
	// The certificate first, then the CA that signed it.
	chain, key, err := certutil.GenerateSelfSignedCertKey(serverName, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	leaf, rest := pem.Decode(chain)
	ca, _ := pem.Decode(rest)
	if leaf == nil || ca == nil {
		t.Fatal("the generated chain does not hold a certificate and its CA")
	}
	version, err := os.MkdirTemp(dir, "..version-")
	if err != nil {
		t.Fatal(err)
	}
	old, _ := os.Readlink(filepath.Join(dir, "..data"))
	for name, data := range map[string][]byte{"tls.key": key, "tls.crt": pem.EncodeToMemory(leaf)} {
		if err := os.WriteFile(filepath.Join(version, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join("..data", name), filepath.Join(dir, name)); err != nil && !os.IsExist(err) {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Base(version), filepath.Join(dir, "..data_tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if old != "" {
		if err := os.RemoveAll(filepath.Join(dir, old)); err != nil {
			t.Fatal(err)
		}
	}
	return string(pem.EncodeToMemory(ca))
}
