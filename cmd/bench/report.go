package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// report is everything a benchmark run measured, as written to JSON.
type report struct {
	// Date is when the run began, in UTC.
	Date     string   `json:"date"`
	Machine  machine  `json:"machine"`
	Settings settings `json:"settings"`
	Runs     []run    `json:"runs"`
	// Seconds is how long the whole benchmark took.
	Seconds float64 `json:"seconds"`
}

// machine describes where the run took place.
type machine struct {
	CPUs int    `json:"cpus"`
	Arch string `json:"arch"`
	Go   string `json:"go"`
	// LoadBefore and LoadAfter are /proc/loadavg at the start and the end:
	// other work on the machine makes the figures noisy.
	LoadBefore string `json:"loadBefore"`
	LoadAfter  string `json:"loadAfter"`
}

// settings are the operator's and the benchmark's parameters.
type settings struct {
	ControlPlane   string  `json:"controlPlane"`
	Workers        int     `json:"workers"`
	QPS            float64 `json:"qps"`
	Burst          int     `json:"burst"`
	ResyncSeconds  float64 `json:"resyncSeconds"`
	LatencySamples int     `json:"latencySamples"`
	Unrelated      int     `json:"unrelated"`
	// Rounds are the rounds of convergence and edits at N up to ratioN.
	Rounds int `json:"rounds"`
}

// newReport starts a report of a run with options o.
func newReport(o options) *report {
	return &report{
		Date:    started.UTC().Format(time.RFC3339),
		Machine: machine{CPUs: runtime.NumCPU(), Arch: runtime.GOOS + "/" + runtime.GOARCH, Go: runtime.Version(), LoadBefore: loadAvg()},
		Settings: settings{
			ControlPlane: "etcd (fsync on) and kube-apiserver, no controllers, new for each floor and contender run",
			Workers:      o.workers, QPS: o.qps, Burst: o.burst, ResyncSeconds: o.resync.Seconds(),
			LatencySamples: o.latencySamples, Unrelated: o.unrelated, Rounds: o.rounds,
		},
	}
}

// finish records the end of the run.
func (r *report) finish() {
	r.Machine.LoadAfter = loadAvg()
	r.Seconds = time.Since(started).Seconds()
}

// loadAvg returns the three load averages of /proc/loadavg.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

// write writes the JSON report, then the Markdown one with notesPath.
func (r *report) write(markdownPath, jsonPath, notesPath string) error {
	j, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(jsonPath, append(j, '\n'), 0o644); err != nil {
		return err
	}
	return r.render(markdownPath, notesPath)
}

// render writes the Markdown report and its plots, with the notes at
// notesPath (Markdown written by hand on the figures: what they mean, and
// why) after the targets, if that file exists.
func (r *report) render(markdownPath, notesPath string) error {
	notes, err := os.ReadFile(notesPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := r.plots(filepath.Dir(markdownPath)); err != nil {
		return err
	}
	return os.WriteFile(markdownPath, []byte(r.markdown(string(notes))), 0o644)
}

// readReport reads a report written as JSON.
func readReport(path string) (*report, error) {
	j, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r report
	if err := json.Unmarshal(j, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// markdown renders the report, with notes after the targets.
func (r *report) markdown(notes string) string {
	var b strings.Builder
	r.intro(&b)
	r.targets(&b)
	if notes != "" {
		b.WriteString(strings.TrimSpace(notes) + "\n\n")
	}
	r.sideBySide(&b)
	r.growthTable(&b)
	r.scaleTable(&b)
	r.roundsTable(&b)
	r.convergenceTable(&b)
	r.requestsTable(&b)
	r.latencyTable(&b)
	r.steadyTable(&b)
	r.memoryTable(&b)
	r.profileSection(&b)
	return b.String()
}

// table writes a Markdown table.
func table(b *strings.Builder, header []string, rows [][]string) {
	fmt.Fprintf(b, "| %s |\n|%s\n", strings.Join(header, " | "), strings.Repeat(" --- |", len(header)))
	for _, row := range rows {
		fmt.Fprintf(b, "| %s |\n", strings.Join(row, " | "))
	}
	b.WriteString("\n")
}

// f0, f1, f2 and d format numbers for the tables.
func f0(v float64) string { return fmt.Sprintf("%.0f", v) }
func f1(v float64) string { return fmt.Sprintf("%.1f", v) }
func f2(v float64) string { return fmt.Sprintf("%.2f", v) }
func d(v int) string      { return fmt.Sprint(v) }

// counts formats request counts as "verb resource: n", "none" when there are none.
func counts(c map[string]int) string {
	if len(c) == 0 {
		return "none"
	}
	keys := slices.Sorted(maps.Keys(c))
	for i, k := range keys {
		keys[i] = fmt.Sprintf("%s: %d", k, c[k])
	}
	return strings.Join(keys, ", ")
}
