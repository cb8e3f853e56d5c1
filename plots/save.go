package plots

import (
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"weak"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgpdf"
	"gonum.org/v1/plot/vg/vgsvg"

	"gostachio/internal/atomicfile"
)

// Default figure size (Save) and PNG resolution.
const (
	DefaultWidth  = 16 * vg.Centimeter
	DefaultHeight = 10 * vg.Centimeter
	PNGDPI        = 150
)

// Formats are the file formats Save writes, by extension without the dot.
var Formats = []string{"png", "svg", "pdf"}

// sizes holds the size a figure function chose for its plot (the timeline
// is wider, and as tall as its lanes need). It is keyed by a weak pointer
// so that it never keeps a plot alive; a cleanup drops the entry when the
// plot is collected.
var sizes sync.Map // weak.Pointer[plot.Plot] -> vg.Point

func setSize(p *plot.Plot, w, h vg.Length) {
	k := weak.Make(p)
	if _, loaded := sizes.Swap(k, vg.Point{X: w, Y: h}); !loaded {
		runtime.AddCleanup(p, func(k weak.Pointer[plot.Plot]) { sizes.Delete(k) }, k)
	}
}

// Size is the size Save draws p at: the one the function that built p
// chose, else DefaultWidth x DefaultHeight.
func Size(p *plot.Plot) (w, h vg.Length) {
	if v, ok := sizes.Load(weak.Make(p)); ok {
		s := v.(vg.Point)
		return s.X, s.Y
	}
	return DefaultWidth, DefaultHeight
}

// Save writes p to path at Size(p), in the format of path's extension
// (.png at PNGDPI, .svg, .pdf). A plot with legend entries gets its legend
// in a column right of the axes, where it cannot cover data. The file is
// written to a temporary file in path's folder and renamed into place, so
// a reader never sees half a figure. Save does not modify p.
func Save(p *plot.Plot, path string) error {
	w, h := Size(p)
	return SaveSize(p, path, w, h)
}

// SaveSize is Save at an explicit size.
func SaveSize(p *plot.Plot, path string, w, h vg.Length) error {
	if p == nil {
		return fmt.Errorf("plots: save %s: nil plot", path)
	}
	if w <= 0 || h <= 0 {
		return fmt.Errorf("plots: save %s: size %v x %v is not positive", path, w, h)
	}
	ext := strings.ToLower(strings.TrimPrefix(filepath.Ext(path), "."))
	var cw vg.CanvasWriterTo
	switch ext {
	case "png":
		cw = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(PNGDPI))}
	case "svg":
		cw = vgsvg.New(w, h)
	case "pdf":
		cw = vgpdf.New(w, h)
	default:
		return fmt.Errorf("plots: save %s: unknown format %q (want .png, .svg or .pdf)", path, filepath.Ext(path))
	}
	drawWithLegend(p, draw.New(cw))

	if err := atomicfile.Write(path, func(w io.Writer) error {
		_, err := cw.WriteTo(w)
		return err
	}); err != nil {
		return fmt.Errorf("plots: save: %w", err)
	}
	return nil
}

// drawWithLegend draws p on c with its legend (if it has entries) in a
// column at the right, top-aligned with the data area, and its title
// lines wrapped to the width.
func drawWithLegend(p *plot.Plot, c draw.Canvas) {
	leg := p.Legend
	lw := leg.Rectangle(c).Size().X
	pad := vg.Points(6)
	q := *p // shallow: shares the plotters, which drawing does not change
	pc := c
	if lw > 0 {
		q.Legend = plot.NewLegend()
		pc = draw.Crop(c, 0, -(lw + 2*pad), 0, 0)
	}
	q.Title.Text = wrapTitle(q.Title.TextStyle, q.Title.Text, pc.Max.X-pc.Min.X-2*pad)
	q.Draw(pc)
	if lw > 0 {
		// The legend column starts below the title, where the axes start.
		top := vg.Length(0)
		if q.Title.Text != "" {
			top = q.Title.TextStyle.Rectangle(q.Title.Text).Size().Y + q.Title.Padding + pad
		}
		leg.Top, leg.Left = true, true
		leg.Draw(draw.Crop(c, c.Max.X-c.Min.X-lw-pad, -pad, 0, -top))
	}
}
