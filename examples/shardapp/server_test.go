package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAWriteForAShardNoReplicaCanTakeStaysHere: after a scale-up the
// topology names a shard whose pods cannot be reached yet; a write for it
// goes to this pod's shard, and a read finds it there.
func TestAWriteForAShardNoReplicaCanTakeStaysHere(t *testing.T) {
	// Shard 0 is this pod; shard 1's only replica is a closed port.
	topo := `{"shards":[{"index":0,"replicas":["demo-0-0.demo-headless"]},{"index":1,"replicas":["127.0.0.1"]}],
		"ports":[{"name":"http","port":1}]}`
	path := filepath.Join(t.TempDir(), "topology.json")
	if err := os.WriteFile(path, []byte(topo), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := loadTopology(path)
	if err != nil {
		t.Fatal(err)
	}
	store, err := OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	s := &Server{store: store, topology: f, pod: "demo-0-0", shard: 0, portName: "http", client: newClient()}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()

	key := ""
	for i := 0; key == ""; i++ {
		if k := fmt.Sprintf("key-%d", i); ShardOf(k, 2) == 1 {
			key = k
		}
	}
	req, _ := http.NewRequest(http.MethodPut, srv.URL+"/keys/"+key, strings.NewReader("value"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("PUT of a key of the unreachable shard: %s, want 204", resp.Status)
	}
	if e, ok := store.Get(key); !ok || e.Value != "value" {
		t.Fatalf("the write is not on this pod's shard: %+v, %v", e, ok)
	}
	resp, err = http.Get(srv.URL + "/keys/" + key)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "value" {
		t.Errorf("GET: %s %q, want 200 \"value\"", resp.Status, body)
	}

	// A key that is nowhere, with a shard unreachable, may be there: 503.
	resp, err = http.Get(srv.URL + "/keys/missing")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("GET of a missing key with a shard unreachable: %s, want 503", resp.Status)
	}
}

// TestAKeyThatAPathWouldSplitIsAskedOfPeersWhole: a key holding "?" or "/"
// reaches a peer escaped, so the peer answers for that key, not for the
// part of it before the "?".
func TestAKeyThatAPathWouldSplitIsAskedOfPeersWhole(t *testing.T) {
	peerStore, err := OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer peerStore.Close()
	for _, e := range []Entry{{"a", "wrong", 1}, {"a?b/c", "right", 1}} {
		if err := peerStore.Put(e); err != nil {
			t.Fatal(err)
		}
	}
	peer := httptest.NewServer((&Server{store: peerStore, pod: "demo-0-1", client: newClient()}).Handler())
	defer peer.Close()
	_, port, _ := strings.Cut(strings.TrimPrefix(peer.URL, "http://"), ":")

	// One shard: this pod, and the peer on loopback.
	topo := `{"shards":[{"index":0,"replicas":["demo-0-0.demo-headless","127.0.0.1"]}],"ports":[{"name":"http","port":` + port + `}]}`
	path := filepath.Join(t.TempDir(), "topology.json")
	if err := os.WriteFile(path, []byte(topo), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := loadTopology(path)
	if err != nil {
		t.Fatal(err)
	}
	store, err := OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	srv := httptest.NewServer((&Server{store: store, topology: f, pod: "demo-0-0", shard: 0, portName: "http", client: newClient()}).Handler())
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/keys/" + url.PathEscape("a?b/c"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(body) != "right" {
		t.Errorf("GET of the key a?b/c: %s %q, want 200 \"right\"", resp.Status, body)
	}
}
