//go:build chaos

package chaos

import (
	"bytes"
	"errors"
	"io"
	"maps"
	"net"
	"net/http"
	"path"
	"sync"
	"testing"

	"lin.dev/lin-operator/test/harness"
)

// proxy forwards TCP connections from a port of its own to the API server.
// cut closes every connection and refuses new ones, as a network partition
// between the operator and the API server would; heal ends the partition on
// the same port. It passes TLS through untouched.
type proxy struct {
	target, addr string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]bool
}

// startProxy starts a proxy to target (host:port) until the test ends.
func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{target: target, addr: ln.Addr().String(), conns: map[net.Conn]bool{}}
	p.serve(ln)
	t.Cleanup(p.cut)
	return p
}

// serve accepts connections on ln until it is closed.
func (p *proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.forward(c)
		}
	}()
}

// forward copies both ways between c and a new connection to the target.
func (p *proxy) forward(c net.Conn) {
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	if !p.track(c, s) {
		return
	}
	go func() {
		_, _ = io.Copy(s, c)
		s.Close()
	}()
	_, _ = io.Copy(c, s)
	c.Close()
}

// track records the connections of one forward, or closes them when a cut
// came in between.
func (p *proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		if p.ln == nil {
			c.Close()
			continue
		}
		p.conns[c] = true
	}
	return p.ln != nil
}

// cut closes the listener, so that new connections are refused, then every
// open connection.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// heal listens again on the proxy's port.
func (p *proxy) heal(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatalf("listening again on %s: %v", p.addr, err)
	}
	p.serve(ln)
}

// watchLog counts, per resource, the requests of a client that read a whole
// collection (lists, and watches that begin with the current state) and the
// answers saying that the resourceVersion asked for is too old, whether as
// the status of the response or as an error event in a watch stream.
type watchLog struct {
	mu      sync.Mutex
	relists map[string]int
	tooOld  map[string]int
}

// newWatchLog returns an empty log.
func newWatchLog() *watchLog {
	return &watchLog{relists: map[string]int{}, tooOld: map[string]int{}}
}

// wrap is a rest.Config transport wrapper that logs into l.
func (l *watchLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return harness.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resource := path.Base(req.URL.Path)
		q := req.URL.Query()
		watch := q.Get("watch") == "true"
		if req.Method == http.MethodGet && (!watch || q.Get("sendInitialEvents") == "true") {
			l.add(l.relists, resource)
		}
		resp, err := rt.RoundTrip(req)
		switch {
		case err != nil || req.Method != http.MethodGet:
		case resp.StatusCode == http.StatusGone:
			l.add(l.tooOld, resource)
		case watch:
			resp.Body = &tooOldScanner{ReadCloser: resp.Body, found: func() { l.add(l.tooOld, resource) }}
		}
		return resp, err
	})
}

// add counts one for resource in counts.
func (l *watchLog) add(counts map[string]int, resource string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	counts[resource]++
}

// snapshot returns copies of the counts.
func (l *watchLog) snapshot() (relists, tooOld map[string]int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.relists), maps.Clone(l.tooOld)
}

// tooOldMarker is in the message of every "resource version too old" answer,
// from etcd ("The resourceVersion for the provided watch is too old.") or
// from the watch cache ("too old resource version"); messages are plain
// bytes in JSON and protobuf alike.
var tooOldMarker = []byte("too old")

// tooOldScanner calls found once when the stream it reads holds tooOldMarker.
type tooOldScanner struct {
	io.ReadCloser
	found func()
	tail  []byte
	done  bool
}

// Read implements io.Reader, looking at what passes through.
func (s *tooOldScanner) Read(b []byte) (int, error) {
	n, err := s.ReadCloser.Read(b)
	if !s.done && n > 0 {
		// The tail of the last read goes first, for a marker split in two.
		window := append(s.tail, b[:n]...)
		if bytes.Contains(window, tooOldMarker) {
			s.done = true
			s.found()
		}
		s.tail = append([]byte(nil), window[max(0, len(window)-len(tooOldMarker)+1):]...)
	}
	return n, err
}

// listGate refuses, while it is closed, the lists and watches of some
// resources, as a network that lets a client's writes through but not yet
// its informers' reconnects would: their caches lag behind what the client
// itself wrote. Other requests pass.
type listGate struct {
	resources map[string]bool

	mu      sync.Mutex
	closed  bool
	refused int
}

// newListGate returns an open gate for the lists and watches of resources.
func newListGate(resources ...string) *listGate {
	g := &listGate{resources: map[string]bool{}}
	for _, r := range resources {
		g.resources[r] = true
	}
	return g
}

// set closes or opens the gate.
func (g *listGate) set(closed bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = closed
}

// refusals returns how many requests the gate has refused.
func (g *listGate) refusals() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.refused
}

// wrap is a rest.Config transport wrapper that applies the gate.
func (g *listGate) wrap(rt http.RoundTripper) http.RoundTripper {
	return harness.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
		// A list or watch names a collection: its path ends in the resource.
		if req.Method == http.MethodGet && g.resources[path.Base(req.URL.Path)] {
			g.mu.Lock()
			closed := g.closed
			if closed {
				g.refused++
			}
			g.mu.Unlock()
			if closed {
				return nil, errors.New("connection refused by the test's gate")
			}
		}
		return rt.RoundTrip(req)
	})
}
