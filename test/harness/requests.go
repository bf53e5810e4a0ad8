package harness

import (
	"fmt"
	"maps"
	"net/http"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/util/sets"
)

// RequestCounter counts the requests that pass through a client transport,
// by verb and resource, as the API server would name them, and apart from
// them the requests that the API server refused with a conflict.
type RequestCounter struct {
	mu        sync.Mutex
	counts    map[string]int
	conflicts map[string]int
}

// NewRequestCounter returns an empty counter.
func NewRequestCounter() *RequestCounter {
	return &RequestCounter{counts: map[string]int{}, conflicts: map[string]int{}}
}

// Wrap is a rest.Config transport wrapper that counts each request.
func (c *RequestCounter) Wrap(rt http.RoundTripper) http.RoundTripper {
	return RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
		key := RequestKey(req)
		c.mu.Lock()
		c.counts[key]++
		c.mu.Unlock()
		resp, err := rt.RoundTrip(req)
		if err == nil && resp.StatusCode == http.StatusConflict {
			c.mu.Lock()
			c.conflicts[key]++
			c.mu.Unlock()
		}
		return resp, err
	})
}

// RoundTripperFunc adapts a function to http.RoundTripper.
type RoundTripperFunc func(*http.Request) (*http.Response, error)

// RoundTrip implements http.RoundTripper.
func (f RoundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// writeVerbs are the verbs that change objects.
var writeVerbs = sets.New("create", "update", "patch", "delete", "deletecollection")

// RequestKey names a request "verb resource[/subresource]", with the verbs
// of the API server's audit log: get, list, watch, create, update, patch,
// delete; a dry run's verb starts with DryRunPrefix.
func RequestKey(req *http.Request) string {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	// /api/v1/namespaces/ns/configmaps/name or /apis/group/version/...
	if len(parts) > 0 && parts[0] == "apis" && len(parts) > 1 {
		parts = parts[1:]
	}
	if len(parts) > 2 {
		parts = parts[2:]
	} else {
		parts = nil
	}
	if len(parts) >= 2 && parts[0] == "namespaces" && len(parts) > 2 {
		parts = parts[2:]
	}
	resource, named := "", false
	switch len(parts) {
	case 0:
	case 1:
		resource = parts[0]
	case 2:
		resource, named = parts[0], true
	default:
		resource, named = parts[0]+"/"+parts[2], true
	}
	verb := strings.ToLower(req.Method)
	switch {
	case req.Method == http.MethodGet && req.URL.Query().Get("watch") == "true":
		verb = "watch"
	case req.Method == http.MethodGet && !named:
		verb = "list"
	case req.Method == http.MethodPost:
		verb = "create"
	case req.Method == http.MethodPut:
		verb = "update"
	}
	if req.URL.Query().Has("dryRun") {
		// A server-side dry run changes nothing: it is counted apart from the writes.
		verb = DryRunPrefix + verb
	}
	return verb + " " + resource
}

// DryRunPrefix starts the verb of a dry-run request: "dryrun-create configmaps".
const DryRunPrefix = "dryrun-"

// Snapshot returns a copy of the counts.
func (c *RequestCounter) Snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.counts)
}

// Conflicts returns a copy of the counts of requests answered 409 Conflict: a
// write made from a stale copy of an object, which the API server refused.
func (c *RequestCounter) Conflicts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.conflicts)
}

// Since returns the counts made after an earlier snapshot.
func (c *RequestCounter) Since(before map[string]int) map[string]int {
	return Diff(c.Snapshot(), before)
}

// Diff returns the counts that grew from before to now, by how much.
func Diff(now, before map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range now {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// Writes returns the requests of counts that change objects, events excluded.
func Writes(counts map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range counts {
		verb, resource, _ := strings.Cut(k, " ")
		if writeVerbs.Has(verb) && resource != "events" {
			out[k] = v
		}
	}
	return out
}

// Reads returns the get and list requests of counts.
func Reads(counts map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range counts {
		if verb, _, _ := strings.Cut(k, " "); verb == "get" || verb == "list" {
			out[k] = v
		}
	}
	return out
}

// Format prints counts sorted, for logs and failure messages.
func Format(counts map[string]int) string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%d ", k, counts[k])
	}
	return strings.TrimSpace(b.String())
}
