package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestStoreKeepsTheNewestVersionAcrossARestart(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []Entry{{"a", "1", 10}, {"a", "old", 5}, {"b", "2", 7}, {"a", "3", 11}} {
		if err := s.Put(e); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	// A crash in the middle of a write leaves half a line at the end.
	f, err := os.OpenFile(filepath.Join(dir, "entries.log"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"key":"c","val`)
	f.Close()

	s, err = OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"a": "3", "b": "2"} {
		if e, ok := s.Get(key); !ok || e.Value != want {
			t.Errorf("%s = %+v, %v after the restart; want %q", key, e, ok, want)
		}
	}
	if _, ok := s.Get("c"); ok {
		t.Error("the half-written entry was kept")
	}
	if n := len(s.All()); n != 2 {
		t.Errorf("%d entries, want 2", n)
	}
	// A write after the restart starts a line of its own, which the next
	// restart reads.
	if err := s.Put(Entry{"d", "4", 12}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := s.Get("d"); !ok || e.Value != "4" {
		t.Errorf("d = %+v, %v after a second restart; want the write made after the half-written line", e, ok)
	}
}
