package apps

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"
)

// ackTimeout is how long a write may take to be acknowledged, retries
// included, before it counts as failed; a read back gets as long.
const ackTimeout = 2 * time.Second

// kv is an application's key-value API, as a client reaches it through the
// client Service.
type kv interface {
	put(ctx context.Context, key, value string) error
	get(ctx context.Context, key string) (string, error)
}

// tryTimeout bounds one try of a request. A request that reached a member
// as it stops can hang until that member is gone; the client gives up on it
// and sends the next try, which kube-proxy gives to any Ready pod. Normal
// requests take a few milliseconds, so four tries fit in ackTimeout.
const tryTimeout = 500 * time.Millisecond

// newHTTPClient is a client whose every request opens a connection of its
// own, so that kube-proxy picks an endpoint for each, as for many clients;
// a dial to an address that went away gives up fast and is retried.
func newHTTPClient() *http.Client {
	dialer := &net.Dialer{Timeout: 250 * time.Millisecond}
	return &http.Client{Timeout: tryTimeout, Transport: &http.Transport{DialContext: dialer.DialContext, DisableKeepAlives: true}}
}

// do sends one request and returns the body of a 2xx answer.
func do(ctx context.Context, c *http.Client, method, url string, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, bytes.TrimSpace(data))
	}
	return data, nil
}

// etcdKV talks to etcd's JSON gateway (/v3/kv/...), which needs no client
// library.
type etcdKV struct {
	base   string
	client *http.Client
}

func (e etcdKV) put(ctx context.Context, key, value string) error {
	body, _ := json.Marshal(map[string]string{"key": b64(key), "value": b64(value)})
	_, err := do(ctx, e.client, http.MethodPost, e.base+"/v3/kv/put", body)
	return err
}

func (e etcdKV) get(ctx context.Context, key string) (string, error) {
	return etcdRange(ctx, e.client, e.base, key, false)
}

// etcdRange reads key from the etcd at base; serializable reads the
// member's own copy, without asking the leader.
func etcdRange(ctx context.Context, c *http.Client, base, key string, serializable bool) (string, error) {
	body, _ := json.Marshal(map[string]any{"key": b64(key), "serializable": serializable})
	data, err := do(ctx, c, http.MethodPost, base+"/v3/kv/range", body)
	if err != nil {
		return "", err
	}
	var resp struct {
		Kvs []struct {
			Value string `json:"value"`
		} `json:"kvs"`
	}
	if err := json.Unmarshal(data, &resp); err != nil {
		return "", err
	}
	if len(resp.Kvs) == 0 {
		return "", fmt.Errorf("no key %q", key)
	}
	v, err := base64.StdEncoding.DecodeString(resp.Kvs[0].Value)
	return string(v), err
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// shardKV talks to examples/shardapp's /keys API.
type shardKV struct {
	base   string
	client *http.Client
}

func (s shardKV) put(ctx context.Context, key, value string) error {
	_, err := do(ctx, s.client, http.MethodPut, s.base+"/keys/"+key, []byte(value))
	return err
}

func (s shardKV) get(ctx context.Context, key string) (string, error) {
	data, err := do(ctx, s.client, http.MethodGet, s.base+"/keys/"+key, nil)
	return string(data), err
}

// load is a client that writes a new key every 20-50 ms and reads it back,
// each within ackTimeout, retrying every 50 ms, until stopped.
type load struct {
	kv     kv
	prefix string
	cancel context.CancelFunc
	done   chan struct{}

	mu sync.Mutex
	// acked are the acknowledged writes, key to value.
	acked map[string]string
	// writes counts the writes tried; failed those not acknowledged in
	// time, readFailed those acknowledged but not read back in time.
	writes, failed, readFailed int
	// latencies are the acknowledged writes' times, retries included.
	latencies []time.Duration
	// errs are the first errors of failed writes and reads.
	errs []string
	// slowest is the acknowledged write that took longest.
	slowest slowWrite
}

// slowWrite is an acknowledged write, how long it took and the errors of
// its tries before the one that worked.
type slowWrite struct {
	key   string
	took  time.Duration
	tries error
}

// startLoad starts a client of kv whose keys start with prefix; the test's
// end stops it.
func startLoad(t *testing.T, kv kv, prefix string) *load {
	ctx, cancel := context.WithCancel(context.Background())
	l := &load{kv: kv, prefix: prefix, cancel: cancel, done: make(chan struct{}), acked: map[string]string{}}
	go l.run(ctx)
	t.Cleanup(l.halt)
	return l
}

func (l *load) run(ctx context.Context) {
	defer close(l.done)
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(20+rand.IntN(31)) * time.Millisecond):
		}
		key, value := fmt.Sprintf("%s-%06d", l.prefix, n), fmt.Sprintf("v%d-%d", n, rand.Int64())
		began := time.Now()
		tries, acked := retry(ctx, func(ctx context.Context) error { return l.kv.put(ctx, key, value) })
		took := time.Since(began)
		var readTries error
		read := false
		if acked {
			readTries, read = retry(ctx, func(ctx context.Context) error { return l.check(ctx, key, value) })
		}
		l.mu.Lock()
		l.writes++
		switch {
		case !acked:
			l.failed++
			l.note("write %s not acknowledged: %v", key, tries)
		default:
			l.acked[key] = value
			l.latencies = append(l.latencies, took)
			if took > l.slowest.took {
				l.slowest = slowWrite{key, took, tries}
			}
			if !read {
				l.readFailed++
				l.note("read back %s: %v", key, readTries)
			}
		}
		l.mu.Unlock()
	}
}

// check reads key and compares its value.
func (l *load) check(ctx context.Context, key, value string) error {
	got, err := l.kv.get(ctx, key)
	if err == nil && got != value {
		err = fmt.Errorf("%s = %q, want %q", key, got, value)
	}
	return err
}

// retry runs f until it succeeds or ackTimeout passes, every 50 ms, each
// try bounded by what is left. Stopping the load does not cut a try short:
// a write in flight is counted as it ends. It returns the errors of the
// tries that failed, joined, and whether one succeeded.
func retry(ctx context.Context, f func(context.Context) error) (tries error, ok bool) {
	deadline := time.Now().Add(ackTimeout)
	var errs []error
	for {
		try, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
		began := time.Now()
		err := f(try)
		cancel()
		if err == nil {
			return errors.Join(errs...), true
		}
		errs = append(errs, fmt.Errorf("%s +%v: %w", began.Format("15:04:05.000"), time.Since(began).Round(time.Millisecond), err))
		if time.Now().Add(50 * time.Millisecond).After(deadline) {
			return errors.Join(errs...), false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// note keeps the first errors; l.mu is held.
func (l *load) note(format string, args ...any) {
	if len(l.errs) < 10 {
		l.errs = append(l.errs, fmt.Sprintf(format, args...))
	}
}

// halt stops the client and waits for its last write.
func (l *load) halt() {
	l.cancel()
	<-l.done
}

// loadReport is what a load saw.
type loadReport struct {
	Writes, Failed, ReadFailed, Lost int
	P99, Max                         time.Duration
}

func (r loadReport) String() string {
	return fmt.Sprintf("%d writes, %d failed, %d not read back, %d acknowledged and lost; acknowledged in p99 %v, max %v",
		r.Writes, r.Failed, r.ReadFailed, r.Lost, r.P99, r.Max)
}

// finish stops the client, reads every acknowledged write back, fails the
// test for each write that failed or was lost, and returns the counts.
func (l *load) finish(t *testing.T, what string) loadReport {
	t.Helper()
	l.halt()
	l.mu.Lock()
	defer l.mu.Unlock()
	r := loadReport{Writes: l.writes, Failed: l.failed, ReadFailed: l.readFailed}
	for key, value := range l.acked {
		if tries, ok := retry(context.Background(), func(ctx context.Context) error { return l.check(ctx, key, value) }); !ok {
			r.Lost++
			l.note("at the end, %s: %v", key, tries)
		}
	}
	if n := len(l.latencies); n > 0 {
		slices.Sort(l.latencies)
		r.P99, r.Max = l.latencies[n*99/100].Round(time.Millisecond), l.latencies[n-1].Round(time.Millisecond)
	}
	t.Logf("%s: %s", what, r)
	if l.slowest.tries != nil {
		t.Logf("%s: the slowest acknowledged write, %s, took %v after tries that failed:\n%v", what, l.slowest.key, l.slowest.took.Round(time.Millisecond), l.slowest.tries)
	}
	if r.Failed > 0 || r.ReadFailed > 0 || r.Lost > 0 || r.Writes == 0 {
		t.Errorf("%s: the client saw failures: %s; first errors:\n%v", what, r, l.errs)
	}
	return r
}

// acknowledged returns how many writes were acknowledged so far.
func (l *load) acknowledged() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked)
}

// latest returns the newest acknowledged write.
func (l *load) latest() (key, value string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, v := range l.acked {
		if k > key {
			key, value = k, v
		}
	}
	return key, value
}
