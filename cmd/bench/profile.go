package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime/pprof"
	"strings"
)

// profileEntries is how many functions of the profile the report lists.
const profileEntries = 20

// cpuProfile is the top of the operator's CPU profile.
type cpuProfile struct {
	// Path is where the profile was written.
	Path string `json:"path"`
	// Top is `go tool pprof -top` of the operator's goroutines: a header,
	// then one line per function, by flat time.
	Top []string `json:"top"`
}

// profile starts a CPU profile into path and returns the function that ends it.
func profile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// topOfProfile reads the top functions of the operator's process from the
// profile at path with `go tool pprof`.
func topOfProfile(path string) (*cpuProfile, error) {
	cmd := exec.Command("go", "tool", "pprof", "-top", fmt.Sprintf("-nodecount=%d", profileEntries), path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go tool pprof: %w\n%s", err, stderr.String())
	}
	var top []string
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		// The first lines name the binary and the build; the table follows.
		if strings.HasPrefix(line, "File:") || strings.HasPrefix(line, "Build ID:") || strings.HasPrefix(line, "Type:") ||
			strings.HasPrefix(line, "Time:") {
			continue
		}
		top = append(top, line)
	}
	return &cpuProfile{Path: path, Top: top}, nil
}
