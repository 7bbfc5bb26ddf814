package main

import (
	"fmt"
	"image/color"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// replicaColors tell the replicas apart in every panel.
var replicaColors = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
}

// writeSoakPlot draws the samples as five panels stacked in one PNG (RSS,
// goroutines and open descriptors per replica; Redis memory; Redis keys),
// minutes on the x axis. A replica's line breaks where it was not running.
func writeSoakPlot(path string, ss []soakSample) error {
	replicas := 0
	for _, s := range ss {
		replicas = max(replicas, len(s.Replicas))
	}
	type line struct {
		name string
		v    func(soakSample) (float64, bool)
	}
	perReplica := func(f func(procSample) (float64, bool)) []line {
		var out []line
		for i := range replicas {
			out = append(out, line{fmt.Sprintf("r%d", i+1), func(s soakSample) (float64, bool) {
				if i >= len(s.Replicas) || s.Replicas[i].Inc == "" {
					return 0, false
				}
				return f(s.Replicas[i])
			}})
		}
		return out
	}
	panels := []struct {
		title, y string
		lines    []line
	}{
		{"daemon RSS", "MiB", perReplica(func(p procSample) (float64, bool) { return float64(p.RSS) / (1 << 20), p.RSS > 0 })},
		{"goroutines", "count", perReplica(func(p procSample) (float64, bool) { return float64(p.Goroutines), p.Goroutines >= 0 })},
		{"open file descriptors", "count", perReplica(func(p procSample) (float64, bool) { return float64(p.FDs), p.FDs > 0 })},
		{"Redis used_memory", "MiB", []line{{"used", func(s soakSample) (float64, bool) { return float64(s.RedisUsed) / (1 << 20), s.RedisUsed > 0 }}}},
		{"Redis keys", "count", []line{
			{"all", func(s soakSample) (float64, bool) { return float64(s.Keys), s.RedisUsed > 0 }},
			{"without TTL", func(s soakSample) (float64, bool) { return float64(s.Keys - s.Expires), s.RedisUsed > 0 }},
		}},
	}
	const w, h = 20 * vg.Centimeter, 40 * vg.Centimeter
	img := vgimg.New(w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadTop: vg.Millimeter * 3, PadBottom: vg.Millimeter * 3,
		PadLeft: vg.Millimeter * 3, PadRight: vg.Millimeter * 3, PadY: vg.Millimeter * 4}
	plots := make([][]*plot.Plot, len(panels))
	for i, pn := range panels {
		p := plot.New()
		p.Title.Text = pn.title
		p.X.Label.Text = "minutes"
		p.Y.Label.Text = pn.y
		p.Y.Min = 0
		p.Legend.Top = true
		for j, ln := range pn.lines {
			// One line per unbroken run of samples, the first one named in
			// the legend.
			var seg plotter.XYs
			labelled := false
			flush := func() error {
				if len(seg) == 0 {
					return nil
				}
				l, err := plotter.NewLine(seg)
				if err != nil {
					return fmt.Errorf("plot %s: %w", pn.title, err)
				}
				l.Color = replicaColors[j%len(replicaColors)]
				l.Width = vg.Points(1.5)
				p.Add(l)
				if !labelled {
					p.Legend.Add(ln.name, l)
					labelled = true
				}
				seg = nil
				return nil
			}
			for _, s := range ss {
				if y, ok := ln.v(s); ok {
					seg = append(seg, plotter.XY{X: s.At.Minutes(), Y: y})
				} else if err := flush(); err != nil {
					return err
				}
			}
			if err := flush(); err != nil {
				return err
			}
		}
		plots[i] = []*plot.Plot{p}
	}
	canvases := plot.Align(plots, tiles, dc)
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return f.Close()
}
