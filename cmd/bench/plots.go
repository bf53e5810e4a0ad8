package main

import (
	"fmt"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Plot files, written next to the Markdown report.
const (
	convergencePlot = "benchmarks-convergence.svg"
	memoryPlot      = "benchmarks-memory.svg"
)

// plots draws the figures of the scale table into dir: convergence time
// of the floor and of each contender against N, and each contender's heap
// and RSS against N.
func (r *report) plots(dir string) error {
	var times, memory []line
	floor := line{name: "floor (plain client-go writer)"}
	// add adds p to the line name of lines, which it makes if need be.
	add := func(lines *[]line, name string, p plotter.XY) {
		i := slices.IndexFunc(*lines, func(l line) bool { return l.name == name })
		if i < 0 {
			*lines, i = append(*lines, line{name: name}), len(*lines)
		}
		(*lines)[i].xys = append((*lines)[i].xys, p)
	}
	rows := r.scale()
	if len(rows) == 0 {
		return nil
	}
	for i := range rows {
		run := &rows[i]
		n := float64(run.N)
		floor.xys = append(floor.xys, plotter.XY{X: n, Y: run.FloorSeconds})
		for _, e := range run.entries() {
			add(&times, string(e.name), plotter.XY{X: n, Y: e.res.Seconds.Median})
			for _, m := range e.res.Memory {
				if m.Installations == run.N && !m.KeepManagedFields && !m.WatchAllChildren {
					add(&memory, string(e.name)+" heap in use", plotter.XY{X: n, Y: float64(m.HeapInuseBytes) / (1 << 20)})
					add(&memory, string(e.name)+" RSS", plotter.XY{X: n, Y: float64(m.RSSBytes) / (1 << 20)})
				}
			}
		}
	}
	if err := linePlot(filepath.Join(dir, convergencePlot), "Convergence of N new Installations (one shard each)",
		"seconds", append([]line{floor}, times...)); err != nil {
		return err
	}
	if len(memory) == 0 {
		return nil
	}
	return linePlot(filepath.Join(dir, memoryPlot), "Memory with N Installations in sync", "MiB", memory)
}

// line is one named line of a plot.
type line struct {
	name string
	xys  plotter.XYs
}

// linePlot draws lines against the number of Installations into path.
func linePlot(path, title, unit string, lines []line) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "Installations (N)"
	p.Y.Label.Text = unit
	p.Y.Min = 0
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	var args []any
	for _, l := range lines {
		args = append(args, l.name, l.xys)
	}
	if err := plotutil.AddLinePoints(p, args...); err != nil {
		return fmt.Errorf("plotting %s: %w", path, err)
	}
	return p.Save(7*vg.Inch, 4*vg.Inch, path)
}
