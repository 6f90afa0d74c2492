package main

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

var (
	pipeColor  = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	naiveColor = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	floorColor = color.RGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xff}
	freezeCol  = color.RGBA{R: 0x9e, G: 0x9a, B: 0xc8, A: 0xff}
	cutColor   = color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}
)

// plotFloor and plotCeil bound the drawn errors: the log axis cannot show
// zero, and a corrupted float the naive receiver applied can be kilometres.
const (
	plotFloor = 1e-5
	plotCeil  = 100
)

// drawPlot draws, per scenario, the largest displayed joint error at each
// render tick for both receivers, the server's own floor, and markers where
// the pipeline froze an island and where it showed a segment cut.
func drawPlot(path string, rep *report, sers []series) error {
	rows := len(sers)
	plots := make([][]*plot.Plot, rows)
	for i, s := range sers {
		p := plot.New()
		sc := rep.Scenarios[i]
		p.Title.Text = fmt.Sprintf("%s — half-frames: pipeline %d", sc.Name, sc.Pipeline.HalfFramesApplied)
		if sc.Naive != nil {
			p.Title.Text += fmt.Sprintf(", naive %d", sc.Naive.HalfFramesApplied)
		}
		p.X.Label.Text = "time (s)"
		p.Y.Label.Text = "max joint error"
		p.Y.Scale = plot.LogScale{}
		p.Y.Min, p.Y.Max = plotFloor, plotCeil
		p.Y.Tick.Marker = plot.ConstantTicks([]plot.Tick{
			{Value: 1e-5, Label: "10 µm"}, {Value: 1e-4}, {Value: 1e-3, Label: "1 mm"}, {Value: 1e-2},
			{Value: 1e-1, Label: "10 cm"}, {Value: 1}, {Value: 10, Label: "10 m"}, {Value: 100},
		})
		add := func(name string, ys []float64, c color.Color, w vg.Length) error {
			pts := make(plotter.XYs, len(s.T))
			for k := range s.T {
				pts[k].X, pts[k].Y = s.T[k], min(max(ys[k], plotFloor), plotCeil)
			}
			l, err := plotter.NewLine(pts)
			if err != nil {
				return err
			}
			l.Color, l.Width = c, w
			p.Add(l)
			p.Legend.Add(name, l)
			return nil
		}
		if sc.Naive != nil {
			if err := add("naive", s.Naive, naiveColor, vg.Points(1)); err != nil {
				return err
			}
		}
		if err := add("pipeline", s.Pipeline, pipeColor, vg.Points(1.2)); err != nil {
			return err
		}
		if err := add("server floor", s.Floor, floorColor, vg.Points(0.8)); err != nil {
			return err
		}
		marks := func(name string, ts []float64, c color.Color, shape draw.GlyphDrawer) error {
			if len(ts) == 0 {
				return nil
			}
			pts := make(plotter.XYs, len(ts))
			for k, t := range ts {
				pts[k].X, pts[k].Y = t, plotFloor
			}
			sct, err := plotter.NewScatter(pts)
			if err != nil {
				return err
			}
			sct.GlyphStyle.Color, sct.GlyphStyle.Shape, sct.GlyphStyle.Radius = c, shape, vg.Points(2)
			p.Add(sct)
			p.Legend.Add(name, sct)
			return nil
		}
		if err := marks("island frozen", s.Freezes, freezeCol, draw.BoxGlyph{}); err != nil {
			return err
		}
		if err := marks("segment cut", s.Cuts, cutColor, draw.TriangleGlyph{}); err != nil {
			return err
		}
		p.Legend.Top = true
		p.Legend.Left = false
		p.Legend.XOffs = -vg.Points(4)
		p.Legend.YOffs = -vg.Points(2)
		p.Add(plotter.NewGrid())
		plots[i] = []*plot.Plot{p}
	}
	return save(path, plots, 11*vg.Inch, vg.Length(rows)*3.2*vg.Inch)
}

// save draws the plots in one column and writes them to path (.png or .svg).
func save(path string, plots [][]*plot.Plot, width, height vg.Length) error {
	var cv vg.CanvasWriterTo
	switch strings.ToLower(filepath.Ext(path)) {
	case ".svg":
		cv = vgsvg.New(width, height)
	case ".png":
		cv = vgimg.PngCanvas{Canvas: vgimg.New(width, height)}
	default:
		return fmt.Errorf("plot file must end in .png or .svg: %s", path)
	}
	drawAligned(plots, len(plots), draw.New(cv))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := cv.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// drawAligned lays the plots out in one column with aligned axes.
func drawAligned(plots [][]*plot.Plot, rows int, dc draw.Canvas) {
	tiles := draw.Tiles{Rows: rows, Cols: 1, PadTop: vg.Points(4), PadBottom: vg.Points(4), PadY: vg.Points(10), PadX: vg.Points(4)}
	canvases := plot.Align(plots, tiles, dc)
	for r := range plots {
		for c := range plots[r] {
			plots[r][c].Draw(canvases[r][c])
		}
	}
}

// drawMatrix draws two panels against independent loss: the worst displayed
// joint error p99 over the server floor's, and the mean commit ratio of the
// frames that need the most fragments, one line per scenario.
func drawMatrix(path string, m *matrixReport) error {
	errP := plot.New()
	errP.Title.Text = "displayed joint error p99 ÷ server floor p99 (worst cell at each loss)"
	errP.X.Label.Text = "independent loss (%)"
	errP.Y.Label.Text = "× floor"
	comP := plot.New()
	comP.Title.Text = "frames committed ÷ frames sent (mean over cells at each loss)"
	comP.X.Label.Text = "independent loss (%)"
	comP.Y.Label.Text = "commit ratio"
	comP.Y.Min, comP.Y.Max = 0, 1
	palette := []color.Color{pipeColor, naiveColor, floorColor, freezeCol, cutColor,
		color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff}}
	for k := range m.Cells[0].Scenarios {
		name := m.Cells[0].Scenarios[k].Name
		worst := make(plotter.XYs, len(matrixLoss))
		mean := make(plotter.XYs, len(matrixLoss))
		for i, l := range matrixLoss {
			worst[i].X, mean[i].X = l*100, l*100
			n := 0.0
			for _, c := range m.Cells {
				if c.Impairments.Loss != l {
					continue
				}
				s := &c.Scenarios[k]
				worst[i].Y = max(worst[i].Y, ratio(s.Pipeline.P99JointError, s.ServerFloor.P99JointError))
				mean[i].Y += commitRatio(s)
				n++
			}
			mean[i].Y /= max(n, 1)
		}
		for _, panel := range []struct {
			p   *plot.Plot
			pts plotter.XYs
		}{{errP, worst}, {comP, mean}} {
			l, err := plotter.NewLine(panel.pts)
			if err != nil {
				return err
			}
			l.Color, l.Width = palette[k%len(palette)], vg.Points(1.2)
			panel.p.Add(l)
			panel.p.Legend.Add(name, l)
		}
	}
	for _, p := range []*plot.Plot{errP, comP} {
		p.Legend.Top, p.Legend.Left = true, false
		p.Add(plotter.NewGrid())
	}
	return save(path, [][]*plot.Plot{{errP}, {comP}}, 10*vg.Inch, 7*vg.Inch)
}
