package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"log"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Topology is the part of the operator's topology.json that the application
// reads: every shard with the stable DNS names of its pods, by ordinal, and
// the ports they listen on.
type Topology struct {
	Shards []struct {
		Index    int      `json:"index"`
		Replicas []string `json:"replicas"`
	} `json:"shards"`
	Ports []struct {
		Name string `json:"name"`
		Port int    `json:"port"`
	} `json:"ports"`
}

// ParseTopology parses topology.json and checks what the application
// relies on: at least one shard, each with at least one replica.
func ParseTopology(data []byte) (*Topology, error) {
	t := &Topology{}
	if err := json.Unmarshal(data, t); err != nil {
		return nil, err
	}
	if len(t.Shards) == 0 {
		return nil, fmt.Errorf("no shards")
	}
	for i, s := range t.Shards {
		if len(s.Replicas) == 0 {
			return nil, fmt.Errorf("shard %d has no replicas", i)
		}
	}
	return t, nil
}

// ShardOf returns the shard that a key belongs to among n.
func ShardOf(key string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % uint32(n))
}

// Peers returns the base URLs of the pods of shard, on the port named
// portName.
func (t *Topology) Peers(shard int, portName string) []string {
	port := 0
	for _, p := range t.Ports {
		if p.Name == portName {
			port = p.Port
		}
	}
	urls := make([]string, 0, len(t.Shards[shard].Replicas))
	for _, host := range t.Shards[shard].Replicas {
		urls = append(urls, "http://"+host+":"+strconv.Itoa(port))
	}
	return urls
}

// IsSelf says whether the peer URL names the pod podName: its host's first
// label is the pod's name.
func IsSelf(peer, podName string) bool {
	return strings.HasPrefix(strings.TrimPrefix(peer, "http://"), podName+".")
}

// topologyFile holds the newest topology read from path. kubelet replaces
// the mounted file when the operator changes the ConfigMap (scaling), so it
// is read again every interval, and a running pod learns of new peers with
// no restart.
type topologyFile struct {
	path    string
	current atomic.Pointer[Topology]
	raw     []byte
}

// loadTopology reads path once, which must work, so that a pod never
// serves without knowing its cluster.
func loadTopology(path string) (*topologyFile, error) {
	f := &topologyFile{path: path}
	if err := f.reload(); err != nil {
		return nil, err
	}
	return f, nil
}

// reload reads the file and keeps the topology if it changed and parses.
func (f *topologyFile) reload() error {
	data, err := os.ReadFile(f.path)
	if err != nil {
		return err
	}
	if bytes.Equal(data, f.raw) {
		return nil
	}
	t, err := ParseTopology(data)
	if err != nil {
		return fmt.Errorf("%s: %w", f.path, err)
	}
	f.raw = data
	f.current.Store(t)
	return nil
}

// watch reloads the file every interval until stop is closed. A bad file
// keeps the last good topology, and is logged.
func (f *topologyFile) watch(interval time.Duration, stop <-chan struct{}) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			before := f.current.Load()
			if err := f.reload(); err != nil {
				log.Printf("keeping the topology of %d shards: %v", len(before.Shards), err)
			} else if after := f.current.Load(); after != before {
				log.Printf("new topology: %d shards of %d replicas", len(after.Shards), len(after.Shards[0].Replicas))
			}
		}
	}
}

// Get returns the newest topology.
func (f *topologyFile) Get() *Topology {
	return f.current.Load()
}
