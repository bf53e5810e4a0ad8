package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// Entry is one key's value with its version: the time in nanoseconds at
// which the pod that took the write from a client stamped it. Replicas keep
// the entry of the highest version, so they agree whatever order the writes
// and the catch-ups arrive in.
type Entry struct {
	Key     string `json:"key"`
	Value   string `json:"value"`
	Version int64  `json:"version"`
}

// Store is the pod's copy of its keys: a map in memory backed by an
// append-only log on the storage mount, written through and synced before a
// write is acknowledged, and replayed at start.
type Store struct {
	mu      sync.Mutex
	entries map[string]Entry
	log     *os.File
}

// OpenStore opens, or makes, the log in dir and replays it.
func OpenStore(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "entries.log")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	s := &Store{entries: map[string]Entry{}, log: f}
	// A crash can leave the last line half written: it was never
	// acknowledged, and the catch-up brings it back from a peer. It is cut
	// off, so that the next write starts a line of its own rather than
	// joining it, and the replay after the next restart reads past it.
	r := bufio.NewReader(f)
	var good int64
	for {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		var e Entry
		if err := json.Unmarshal(line, &e); err != nil {
			break
		}
		s.keep(e)
		good += int64(len(line))
	}
	if err := f.Truncate(good); err != nil {
		f.Close()
		return nil, fmt.Errorf("cutting the half-written end of %s: %w", path, err)
	}
	return s, nil
}

// Put stores e unless the store holds a newer version of its key, and
// returns once it is on disk.
func (s *Store) Put(e Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.entries[e.Key]; ok && old.Version >= e.Version {
		return nil
	}
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if _, err := s.log.Write(append(line, '\n')); err != nil {
		return err
	}
	if err := s.log.Sync(); err != nil {
		return err
	}
	s.keep(e)
	return nil
}

// keep sets e in memory if it is newer than what is there.
func (s *Store) keep(e Entry) {
	if old, ok := s.entries[e.Key]; !ok || old.Version < e.Version {
		s.entries[e.Key] = e
	}
}

// Get returns the entry of key.
func (s *Store) Get(key string) (Entry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[key]
	return e, ok
}

// All returns every entry, for a peer that catches up.
func (s *Store) All() []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := make([]Entry, 0, len(s.entries))
	for _, e := range s.entries {
		all = append(all, e)
	}
	return all
}

// Close closes the log.
func (s *Store) Close() error {
	return s.log.Close()
}
