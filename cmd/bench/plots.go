package main

import (
	"fmt"
	"path/filepath"

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

// plots draws the figures of the scale table: convergence time of the floor
// and of the operator against N, and the operator's heap and RSS against N,
// into dir.
func (r *report) plots(dir string) error {
	var floor, operator, heap, rss plotter.XYs
	for _, s := range r.scale() {
		n := float64(s.run.N)
		floor = append(floor, plotter.XY{X: n, Y: s.run.FloorSeconds})
		operator = append(operator, plotter.XY{X: n, Y: s.run.Convergence.Seconds})
		if s.shipped != nil {
			heap = append(heap, plotter.XY{X: n, Y: float64(s.shipped.HeapInuseBytes) / (1 << 20)})
			rss = append(rss, plotter.XY{X: n, Y: float64(s.shipped.RSSBytes) / (1 << 20)})
		}
	}
	if len(floor) == 0 {
		return nil
	}
	if err := linePlot(filepath.Join(dir, convergencePlot), "Convergence of N new Installations (one shard each)",
		"seconds", "floor (plain client-go writer)", floor, "operator", operator); err != nil {
		return err
	}
	if len(heap) == 0 {
		return nil
	}
	return linePlot(filepath.Join(dir, memoryPlot), "Operator memory with N Installations in sync",
		"MiB", "heap in use", heap, "RSS", rss)
}

// linePlot draws two lines against the number of Installations into path.
func linePlot(path, title, unit, name1 string, line1 plotter.XYs, name2 string, line2 plotter.XYs) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "Installations (N)"
	p.Y.Label.Text = unit
	p.Y.Min = 0
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	if err := plotutil.AddLinePoints(p, name1, line1, name2, line2); err != nil {
		return fmt.Errorf("plotting %s: %w", path, err)
	}
	return p.Save(7*vg.Inch, 4*vg.Inch, path)
}
