package deploy

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/transport"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/metrics"
	"lin.dev/lin-operator/pkg/resources"
	"lin.dev/lin-operator/test/harness"
)

// The garbage load on each endpoint: bounded in connections and in time.
const (
	// garbageFor is how long the load lasts.
	garbageFor = 25 * time.Second
	// slowClients per endpoint send their headers a byte a second.
	slowClients = 100
	// scrapers per endpoint GET it as fast as it answers.
	scrapers = 100
	// bigHeaderClients and junkClients per endpoint send headers of
	// bigHeaderBytes, and bytes that are not HTTP, as fast as answered.
	bigHeaderClients, junkClients = 10, 10
	bigHeaderBytes                = 1 << 20
	// peakRSSBound is far above the operator's RSS under no load (about
	// 40 MiB): a bound on what garbage can make it hold, not a benchmark.
	peakRSSBound = 256 << 20
)

// TestEndpointsUnderGarbageKeepTheOperatorReconciling sends the metrics and
// health endpoints, from loopback, what a careless or hostile client sends:
// headers of 1 MiB, headers that trickle in a byte a second, bytes that are
// not HTTP, and a hundred scrapes at once. The operator must refuse the
// garbage, close the slow connections, answer its probes, go on
// reconciling, and hold its memory within a bound; the test prints the peak.
func TestEndpointsUnderGarbageKeepTheOperatorReconciling(t *testing.T) {
	install(t)
	ns := harness.Namespace(t, testEnv.Client)
	op := startLeader(t, "edge", ns, "edge-test")
	inst := createInstallation(t, ns, "edge", nil)
	waitPhase(t, ns, "edge", linv1.PhaseReady)
	idle := memoryKiB(t, op.Pid(), "VmRSS")

	ctx, cancel := context.WithTimeout(t.Context(), garbageFor)
	defer cancel()
	seen := &statusCounts{counts: map[string]int{}}
	// The scrapers keep their connections, as Prometheus does, and send the
	// token that lets them in, which the operator's caches of reviews
	// answer after the first scrape.
	client := &http.Client{Transport: transport.NewBearerAuthRoundTripper(scraperToken, &http.Transport{
		MaxIdleConnsPerHost: scrapers, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}})}
	var wg sync.WaitGroup
	slowClosed := make(chan time.Duration, 2*slowClients)
	for _, base := range []string{op.metricsURL, op.healthURL} {
		dial := dialer(base)
		path := "/metrics"
		if base == op.healthURL {
			path = "/healthz"
		}
		// Each client tries again 100 ms after an answer: a new connection
		// each time, but for the scrapers', would otherwise fill loopback's
		// ports with closed connections.
		// An answer cut short by the load's end is not counted.
		run := func(n int, what string, send func() string) {
			for range n {
				wg.Go(func() {
					for ctx.Err() == nil {
						if status := send(); ctx.Err() == nil {
							seen.add(what, status)
						}
						sleep(ctx, 100*time.Millisecond)
					}
				})
			}
		}
		for range slowClients {
			wg.Go(func() { slowClosed <- trickle(ctx, dial, path) })
		}
		run(scrapers, "GET "+path, func() string { return scrape(ctx, client, base+path) })
		run(bigHeaderClients, "1 MiB header", func() string { return rawStatus(ctx, dial, bigHeaderRequest(path)) })
		run(junkClients, "not HTTP", func() string { return rawStatus(ctx, dial, "\x16\x03\x01\x00\xff junk\x00\r\n\r\n") })
	}

	// Meanwhile the operator reconciles edits and answers its liveness
	// probe, asked every second (the Deployment asks every 10 s) with the
	// kubelet's default timeout of 1 s.
	probes := probeWhile(ctx, op.healthURL+"/healthz")
	sts := resources.StatefulSetName(inst, 0)
	hash := ""
	waitStatefulSet(t, ns, sts, "to carry a config hash", func(s *appsv1.StatefulSet) bool {
		if s != nil {
			hash = s.Spec.Template.Annotations[resources.AnnotationConfigHash]
		}
		return hash != ""
	})
	edits, slowestEdit := 0, time.Duration(0)
	for i := 1; ctx.Err() == nil; i++ {
		start := time.Now()
		level := "level=edit-" + strconv.Itoa(i) + "\n"
		harness.EditInstallation(t, linClient, ns, "edge", func(in *linv1.Installation) { in.Spec.Config["app.conf"] = level })
		waitStatefulSet(t, ns, sts, "to carry edit "+strconv.Itoa(i), func(s *appsv1.StatefulSet) bool {
			if s == nil || s.Spec.Template.Annotations[resources.AnnotationConfigHash] == hash {
				return false
			}
			hash = s.Spec.Template.Annotations[resources.AnnotationConfigHash]
			return true
		})
		edits, slowestEdit = i, max(slowestEdit, time.Since(start))
	}
	wg.Wait()
	close(slowClosed)
	if op.Exited() {
		t.Fatalf("the operator exited under the garbage load: %v\n%s", op.Err(), op.LogTail(30))
	}
	p := <-probes
	peak := memoryKiB(t, op.Pid(), "VmHWM")
	t.Logf("%d edits reconciled one after the other under the load, the slowest in %v", edits, slowestEdit.Round(time.Millisecond))
	t.Logf("answers: %s", seen)
	t.Logf("probes of /healthz: %d, %d failed (at most %d in a row), the slowest %v", p.total, p.failed, p.inARow, p.slowest.Round(time.Millisecond))
	t.Logf("memory: RSS %d MiB before the load, peak %d MiB", idle/1024, peak/1024)

	checkSlowClientsClosed(t, slowClosed)
	// The server closes a connection whose request it refused; with bytes
	// of the request not yet read (the rest of the 1 MiB, say), the close
	// is a reset, which may reach a client slowed by the load before it
	// reads the answer. Any answer it does read must be the refusal.
	if seen.get("1 MiB header", "431") == 0 || seen.other("1 MiB header", "431", "error") {
		t.Errorf("1 MiB headers: answers %s, want 431", seen)
	}
	if seen.get("not HTTP", "400") == 0 || seen.other("not HTTP", "400", "error") {
		t.Errorf("bytes that are not HTTP: answers %s, want 400", seen)
	}
	if seen.get("GET /healthz", "200") == 0 || seen.get("GET /metrics", "200") == 0 || seen.other("GET /metrics", "200", "503") {
		t.Errorf("scrapes: %s, want 200s, and for /metrics 503 only past %d at once", seen, metrics.MaxScrapesInFlight)
	}
	// The Deployment's failureThreshold: as many failures in a row would
	// have the kubelet restart the operator.
	if p.inARow >= 3 {
		t.Errorf("%d probes of /healthz in a row failed under the garbage load", p.inARow)
	}
	if peak*1024 > peakRSSBound {
		t.Errorf("peak RSS %d MiB, above the bound of %d MiB", peak/1024, peakRSSBound>>20)
	}
}

// statusCounts counts the answers by what was sent and the status received
// ("error" when none was).
type statusCounts struct {
	mu     sync.Mutex
	counts map[string]int
}

// add counts one answer to what.
func (c *statusCounts) add(what, status string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts[what+" "+status]++
}

// get returns how many answers to what had status.
func (c *statusCounts) get(what, status string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[what+" "+status]
}

// other reports whether an answer to what had a status not in allowed.
func (c *statusCounts) other(what string, allowed ...string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.counts {
		if status, ok := strings.CutPrefix(k, what+" "); ok && !slices.Contains(allowed, status) {
			return true
		}
	}
	return false
}

// String lists the counts, sorted.
func (c *statusCounts) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return harness.Format(c.counts)
}

// scrape GETs url with client and returns the status code, or "error".
func scrape(ctx context.Context, client *http.Client, url string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "error"
	}
	resp, err := client.Do(req)
	if err != nil {
		return "error"
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return "error"
	}
	return strconv.Itoa(resp.StatusCode)
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// bigHeaderRequest is a GET of path whose headers take bigHeaderBytes.
func bigHeaderRequest(path string) string {
	return "GET " + path + " HTTP/1.1\r\nHost: edge\r\nX-Big: " + strings.Repeat("a", bigHeaderBytes) + "\r\n\r\n"
}

// dialer returns a function that opens a connection to the endpoint at
// base: TLS, without verifying the certificate, for https.
func dialer(base string) func(context.Context) (net.Conn, error) {
	if addr, ok := strings.CutPrefix(base, "https://"); ok {
		d := &tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true}}
		return func(ctx context.Context) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
	}
	addr := strings.TrimPrefix(base, "http://")
	return func(ctx context.Context) (net.Conn, error) { return (&net.Dialer{}).DialContext(ctx, "tcp", addr) }
}

// rawStatus sends request on a new connection by dial and returns the
// status code of the answer's first line, or "error".
func rawStatus(ctx context.Context, dial func(context.Context) (net.Conn, error), request string) string {
	conn, err := dial(ctx)
	if err != nil {
		return "error"
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	// The server may answer and close before all of a large request is
	// written: the answer is what counts.
	go func() { _, _ = io.WriteString(conn, request) }()
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return "error"
	}
	if f := strings.Fields(line); len(f) >= 2 && strings.HasPrefix(f[0], "HTTP/") {
		return f[1]
	}
	return "error"
}

// trickle opens a connection by dial and sends a request for path a byte
// a second, never finishing its headers, until the server closes the
// connection or ctx ends. It returns how long the server kept it open, or
// a negative duration when ctx ended first.
func trickle(ctx context.Context, dial func(context.Context) (net.Conn, error), path string) time.Duration {
	conn, err := dial(ctx)
	if err != nil {
		return -1
	}
	defer conn.Close()
	start := time.Now()
	closed := make(chan struct{})
	go func() {
		// The server answers nothing and closes; Read returns then.
		_, _ = conn.Read(make([]byte, 1024))
		close(closed)
	}()
	msg := "GET " + path + " HTTP/1.1\r\nHost: edge\r\nX-Slow: "
	for i := 0; ; i++ {
		if i < len(msg) {
			if _, err := io.WriteString(conn, msg[i:i+1]); err != nil {
				return time.Since(start)
			}
		} else if _, err := io.WriteString(conn, "s"); err != nil {
			return time.Since(start)
		}
		select {
		case <-closed:
			return time.Since(start)
		case <-ctx.Done():
			return -1
		case <-time.After(time.Second):
		}
	}
}

// checkSlowClientsClosed checks that the server closed every trickling
// connection before the load ended, and prints how long it kept them.
func checkSlowClientsClosed(t *testing.T, closed <-chan time.Duration) {
	t.Helper()
	var n, open int
	var longest time.Duration
	for d := range closed {
		if d < 0 {
			open++
			continue
		}
		n++
		longest = max(longest, d)
	}
	t.Logf("slow clients: %d closed by the server, the longest after %v; %d still open at the end", n, longest.Round(time.Millisecond), open)
	if open > 0 {
		t.Errorf("%d connections that sent their headers a byte a second were still open after %v", open, garbageFor)
	}
}

// probeResult counts the probes of probeWhile.
type probeResult struct {
	// total and failed count the probes; inARow is the most that failed
	// one after the other.
	total, failed, inARow int
	slowest               time.Duration
}

// probeWhile GETs url every second, with the kubelet's default timeout of
// 1 s, until ctx ends, and then sends what it counted.
func probeWhile(ctx context.Context, url string) <-chan probeResult {
	out := make(chan probeResult, 1)
	// A new connection each time, as the kubelet's prober makes: the
	// connections are what the load competes for.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	go func() {
		var r probeResult
		run := 0
		for ctx.Err() == nil {
			start := time.Now()
			probeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
			status := scrape(probeCtx, client, url)
			cancel()
			r.total++
			r.slowest = max(r.slowest, time.Since(start))
			run++
			if status == "200" {
				run = 0
			} else {
				r.failed++
				r.inARow = max(r.inARow, run)
			}
			sleep(ctx, time.Second)
		}
		out <- r
	}()
	return out
}

// memoryKiB reads a field of /proc/<pid>/status in KiB: VmRSS, the
// resident memory now, or VmHWM, its peak.
func memoryKiB(t *testing.T, pid int, field string) int {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatalf("%s in /proc/%d/status: %v", field, pid, err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}
