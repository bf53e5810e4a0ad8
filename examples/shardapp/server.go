package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// maxValueBytes bounds a value.
const maxValueBytes = 1 << 20

// peerTimeout bounds one request to a peer. A peer that is being replaced
// has no address for a moment; the writes and reads go on with the others.
const peerTimeout = time.Second

// Server is one pod of the application: it takes reads and writes from
// clients for any key, sends each to the replicas of the key's shard, and
// keeps its own shard's keys in its Store.
type Server struct {
	store    *Store
	topology *topologyFile
	// pod and shard are this pod's name and shard index.
	pod   string
	shard int
	// portName is the name of the port, in topology.json, that peers
	// serve on.
	portName string
	client   *http.Client
	// ready is set once the pod has caught up with its shard's peers;
	// stopping once it was told to stop, so that it leaves the Service
	// before it stops serving.
	ready, stopping atomic.Bool
}

// newClient is the client for peers: short dial timeouts, since a peer's
// address can vanish while its pod is replaced.
func newClient() *http.Client {
	dialer := &net.Dialer{Timeout: 300 * time.Millisecond}
	return &http.Client{
		Timeout:   peerTimeout,
		Transport: &http.Transport{DialContext: dialer.DialContext, MaxIdleConnsPerHost: 16, IdleConnTimeout: 30 * time.Second},
	}
}

// Handler routes the client API and the peer API.
//
//	PUT /keys/{key}     stores the body as key's value on its shard
//	GET /keys/{key}     key's value
//	GET /status         this pod's view of the cluster, as JSON
//	GET /healthz        200 while the process runs
//	GET /readyz         200 once caught up, until told to stop
//	PUT /local          (peers) stores an Entry here
//	GET /local/{key}    (peers) this pod's Entry of key
//	GET /entries        (peers) every Entry here, for a catch-up
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /keys/{key}", s.putKey)
	mux.HandleFunc("GET /keys/{key}", s.getKey)
	mux.HandleFunc("GET /status", s.status)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !s.ready.Load() || s.stopping.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("PUT /local", s.putLocal)
	mux.HandleFunc("GET /local/{key}", s.getLocal)
	mux.HandleFunc("GET /entries", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, s.store.All()) })
	return mux
}

// putKey stamps the value with a version and sends it to every replica of
// the key's shard. The write is acknowledged once one replica has it on
// disk, as a ClickHouse insert without a quorum is; the replicas that were
// away get it from the catch-up. When no replica of that shard can take it
// (after a scale-up, the topology names a new shard's pods before they run
// or before the cluster's DNS knows them), it goes to this pod's own shard
// instead, where a read looks next.
func (s *Server) putKey(w http.ResponseWriter, r *http.Request) {
	value, err := io.ReadAll(io.LimitReader(r.Body, maxValueBytes+1))
	if err != nil || len(value) > maxValueBytes {
		http.Error(w, fmt.Sprintf("the value must be at most %d bytes", maxValueBytes), http.StatusRequestEntityTooLarge)
		return
	}
	e := Entry{Key: r.PathValue("key"), Value: string(value), Version: time.Now().UnixNano()}
	topo := s.topology.Get()
	shard := ShardOf(e.Key, len(topo.Shards))
	err = s.replicate(r.Context(), topo.Peers(shard, s.portName), e)
	if err != nil && shard != s.shard && s.shard < len(topo.Shards) {
		log.Printf("shard %d took %q for shard %d: %v", s.shard, e.Key, shard, err)
		err = s.replicate(r.Context(), topo.Peers(s.shard, s.portName), e)
	}
	if err != nil {
		http.Error(w, fmt.Sprintf("no replica stored %q: %v", e.Key, err), http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// replicate sends e to every peer and returns once one has stored it; the
// others get it all the same, within peerTimeout, after the client has its
// answer.
func (s *Server) replicate(ctx context.Context, peers []string, e Entry) error {
	ctx = context.WithoutCancel(ctx)
	results := make(chan error, len(peers))
	for _, peer := range peers {
		go func() {
			if IsSelf(peer, s.pod) {
				results <- s.store.Put(e)
				return
			}
			results <- s.send(ctx, http.MethodPut, peer+"/local", e, nil)
		}()
	}
	errs := []error{errors.New("no replica")}
	for range peers {
		err := <-results
		if err == nil {
			return nil
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// getKey returns the newest version of key among the replicas of its shard.
// A key written before the number of shards changed lives on the shard it
// belonged to then, and one whose shard could not take it on the shard of
// the pod that took it, so a key its shard lacks is looked for on all
// shards; the data never moves. Not found with a shard unreachable is an
// error, since the key may be there.
func (s *Server) getKey(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	topo := s.topology.Get()
	home := ShardOf(key, len(topo.Shards))
	shards := []int{home}
	for i := range topo.Shards {
		if i != home {
			shards = append(shards, i)
		}
	}
	var unreachable []error
	for _, shard := range shards {
		e, found, err := s.lookup(r.Context(), topo.Peers(shard, s.portName), key)
		if err != nil {
			unreachable = append(unreachable, fmt.Errorf("shard %d: %w", shard, err))
			continue
		}
		if found {
			io.WriteString(w, e.Value)
			return
		}
	}
	if len(unreachable) > 0 {
		http.Error(w, errors.Join(unreachable...).Error(), http.StatusServiceUnavailable)
		return
	}
	http.Error(w, fmt.Sprintf("no key %q", key), http.StatusNotFound)
}

// lookup asks every peer for key and returns the newest entry; it fails
// only when no peer answered, since then the key may be there.
func (s *Server) lookup(ctx context.Context, peers []string, key string) (Entry, bool, error) {
	results := each(peers, func(peer string) (Entry, error) {
		if IsSelf(peer, s.pod) {
			if e, ok := s.store.Get(key); ok {
				return e, nil
			}
			return Entry{}, errNotFound
		}
		// A key may hold any byte a path may: "/", "?" or "%" unescaped
		// would ask the peer for another key.
		var e Entry
		return e, s.send(ctx, http.MethodGet, peer+"/local/"+url.PathEscape(key), nil, &e)
	})
	var newest Entry
	found, answered, errs := false, 0, []error{}
	for _, res := range results {
		switch {
		case res.err == nil:
			answered++
			if !found || res.value.Version > newest.Version {
				newest, found = res.value, true
			}
		case errors.Is(res.err, errNotFound):
			answered++
		default:
			errs = append(errs, res.err)
		}
	}
	if answered == 0 {
		return Entry{}, false, fmt.Errorf("no replica answered for %q: %v", key, errors.Join(errs...))
	}
	return newest, found, nil
}

// putLocal stores an entry that a peer sends.
func (s *Server) putLocal(w http.ResponseWriter, r *http.Request) {
	var e Entry
	if err := json.NewDecoder(io.LimitReader(r.Body, 2*maxValueBytes)).Decode(&e); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if err := s.store.Put(e); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// getLocal returns this pod's entry of a key.
func (s *Server) getLocal(w http.ResponseWriter, r *http.Request) {
	e, ok := s.store.Get(r.PathValue("key"))
	if !ok {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	writeJSON(w, e)
}

// Status is what GET /status says.
type Status struct {
	Pod   string `json:"pod"`
	Shard int    `json:"shard"`
	// Shards is the number of replicas of each shard in the topology this
	// pod uses now.
	Shards  []int `json:"shards"`
	Entries int   `json:"entries"`
	Ready   bool  `json:"ready"`
}

func (s *Server) status(w http.ResponseWriter, _ *http.Request) {
	st := Status{Pod: s.pod, Shard: s.shard, Entries: len(s.store.All()), Ready: s.ready.Load()}
	for _, sh := range s.topology.Get().Shards {
		st.Shards = append(st.Shards, len(sh.Replicas))
	}
	writeJSON(w, st)
}

// catchUp copies from every reachable peer of this pod's shard the entries
// it lacks. It runs before the pod says it is ready, and then every
// interval, so a replica that was away while writes were acknowledged by
// the others gets them back.
func (s *Server) catchUp(ctx context.Context) {
	topo := s.topology.Get()
	if s.shard >= len(topo.Shards) {
		return
	}
	var peers []string
	for _, p := range topo.Peers(s.shard, s.portName) {
		if !IsSelf(p, s.pod) {
			peers = append(peers, p)
		}
	}
	fetched := each(peers, func(peer string) (entries []Entry, err error) {
		return entries, s.send(ctx, http.MethodGet, peer+"/entries", nil, &entries)
	})
	for _, res := range fetched {
		if res.err != nil {
			continue
		}
		for _, e := range res.value {
			if err := s.store.Put(e); err != nil {
				log.Printf("catching up: %v", err)
				return
			}
		}
	}
}

// answer is one peer's answer.
type answer[T any] struct {
	value T
	err   error
}

// errNotFound is a peer's answer that it has no such key.
var errNotFound = errors.New("not found")

// each runs f for every peer in parallel and returns their answers.
func each[T any](peers []string, f func(peer string) (T, error)) []answer[T] {
	out := make([]answer[T], len(peers))
	var wg sync.WaitGroup
	for i, p := range peers {
		wg.Go(func() { out[i].value, out[i].err = f(p) })
	}
	wg.Wait()
	return out
}

// send makes one request to a peer with body (if not nil) as JSON, and
// decodes its answer into out (if not nil). A 404 is errNotFound.
func (s *Server) send(ctx context.Context, method, url string, body, out any) error {
	var reader io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		reader = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, reader)
	if err != nil {
		return err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return errNotFound
	case resp.StatusCode >= 300:
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, bytes.TrimSpace(msg))
	case out != nil:
		return json.NewDecoder(resp.Body).Decode(out)
	}
	return nil
}

// writeJSON writes v as JSON.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}
