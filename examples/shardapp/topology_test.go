package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// topologyOf is the operator's topology.json of demo in ns, 2 shards of 2.
const topologyOf = `{"installation":"demo","namespace":"ns","shards":[
{"index":0,"statefulSet":"demo-0","replicas":["demo-0-0.demo-headless.ns.svc.cluster.local","demo-0-1.demo-headless.ns.svc.cluster.local"]},
{"index":1,"statefulSet":"demo-1","replicas":["demo-1-0.demo-headless.ns.svc.cluster.local","demo-1-1.demo-headless.ns.svc.cluster.local"]}],
"ports":[{"name":"http","port":8080,"protocol":"TCP"}]}`

func TestTopologyPeers(t *testing.T) {
	topo, err := ParseTopology([]byte(topologyOf))
	if err != nil {
		t.Fatal(err)
	}
	peers := topo.Peers(1, "http")
	want := []string{"http://demo-1-0.demo-headless.ns.svc.cluster.local:8080", "http://demo-1-1.demo-headless.ns.svc.cluster.local:8080"}
	if !slices.Equal(peers, want) {
		t.Errorf("peers of shard 1: %v, want %v", peers, want)
	}
	if !IsSelf(peers[0], "demo-1-0") || IsSelf(peers[0], "demo-1") {
		t.Error("IsSelf must match the pod's whole name")
	}
	for _, bad := range []string{`{"shards":[]}`, `{"shards":[{"index":0,"replicas":[]}]}`, `{`} {
		if _, err := ParseTopology([]byte(bad)); err == nil {
			t.Errorf("%s parsed", bad)
		}
	}
}

func TestShardOfSpreadsKeys(t *testing.T) {
	counts := make([]int, 3)
	for i := range 3000 {
		counts[ShardOf(fmt.Sprintf("key-%d", i), 3)]++
	}
	for shard, n := range counts {
		if n < 800 {
			t.Errorf("shard %d got %d of 3000 keys: %v", shard, n, counts)
		}
	}
}

func TestTopologyFileFollowsTheMountedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "topology.json")
	if err := os.WriteFile(path, []byte(topologyOf), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := loadTopology(path)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	go f.watch(10*time.Millisecond, stop)

	// A bad file keeps the last good topology.
	if err := os.WriteFile(path, []byte(`{"shards":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if n := len(f.Get().Shards); n != 2 {
		t.Fatalf("%d shards after a bad file, want the 2 of before", n)
	}
	three := `{"shards":[{"index":0,"replicas":["a"]},{"index":1,"replicas":["b"]},{"index":2,"replicas":["c"]}],"ports":[]}`
	if err := os.WriteFile(path, []byte(three), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(f.Get().Shards) != 3 {
		if time.Now().After(deadline) {
			t.Fatal("the new topology was not read")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
