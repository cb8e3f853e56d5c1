// Package plots draws the testbed's figures with gonum.org/v1/plot: the
// timeline of a trace (Timeline), utilization per resource kind and policy
// (Utilization), speedup per query with confidence intervals (Speedup),
// sweep lines (Sweep) and the simulator-vs-engine scatter (Scatter), and
// writes them as PNG, SVG or PDF (Save). DrawAll draws every figure a
// results table supports. Every figure names, in its title, the machine
// (measured) or hardware profile (simulated) its data came from.
package plots

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"gostachio/experiments"
)

// origin is where a result came from: the runs one figure may mix.
type origin struct {
	backend, profile, machine string
	nodes                     int
	sf                        float64
}

func originOf(r *experiments.Result) origin {
	return origin{r.Backend, r.Profile, r.Machine, r.Nodes, r.SF}
}

// String is the caption line naming the origin: "simulated: dgx-a100,
// 1 node, SF 100" or "measured: vm-2cpu, SF 0.01".
func (o origin) String() string {
	var b strings.Builder
	switch o.backend {
	case "sim":
		b.WriteString("simulated: ")
		b.WriteString(orUnknown(o.profile, "unknown profile"))
	case "engine":
		b.WriteString("measured: ")
		b.WriteString(orUnknown(o.machine, "unknown machine"))
	default:
		fmt.Fprintf(&b, "%s: %s", orUnknown(o.backend, "unknown backend"), orUnknown(o.machine+o.profile, "unknown machine"))
	}
	if o.nodes > 1 || o.backend == "sim" {
		fmt.Fprintf(&b, ", %d node%s", max(o.nodes, 1), plural(o.nodes))
	}
	if o.sf > 0 {
		fmt.Fprintf(&b, ", SF %s", strconv.FormatFloat(o.sf, 'g', -1, 64))
	}
	return b.String()
}

// slug is the origin as a file name part: "sim-dgx-a100-1n-sf100".
func (o origin) slug() string {
	name := o.profile
	if o.backend == "engine" {
		name = o.machine
	}
	s := fmt.Sprintf("%s-%s-%dn", o.backend, orUnknown(name, "unknown"), max(o.nodes, 1))
	if o.sf > 0 {
		s += "-sf" + strconv.FormatFloat(o.sf, 'g', -1, 64)
	}
	return slugify(s)
}

func compareOrigin(a, b origin) int {
	return cmp.Or(cmp.Compare(a.backend, b.backend), cmp.Compare(a.profile, b.profile),
		cmp.Compare(a.machine, b.machine), cmp.Compare(a.nodes, b.nodes), cmp.Compare(a.sf, b.sf))
}

// oneOrigin returns the origin of results, or an error naming two of them
// if they mix several (a figure must name the one its data came from).
func oneOrigin(results []experiments.Result, figure string) (origin, error) {
	if len(results) == 0 {
		return origin{}, fmt.Errorf("plots: %s: no results", figure)
	}
	o := originOf(&results[0])
	for i := range results[1:] {
		if p := originOf(&results[i+1]); p != o {
			return o, fmt.Errorf("plots: %s: results come from several machines/profiles (%s; %s): draw one figure per origin (DrawAll does)",
				figure, o, p)
		}
	}
	return o, nil
}

func orUnknown(s, unknown string) string {
	if s == "" {
		return unknown
	}
	return s
}

var nan = math.NaN()

// countOf is "1 query" or "3 queries".
func countOf(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func plural(n int) string {
	if n == 1 || n == 0 {
		return ""
	}
	return "s"
}

// slugify keeps letters, digits, '.', '-' and '_' of s; runs of other
// bytes become one '-' ("vm, 2 CPUs" -> "vm-2-CPUs").
func slugify(s string) string {
	var b []byte
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			c = '-'
		}
		if c == '-' && len(b) > 0 && b[len(b)-1] == '-' {
			continue
		}
		b = append(b, c)
	}
	return strings.Trim(string(b), "-.")
}

// variant is a policy with its knob overrides: the thing a figure compares.
func variant(r *experiments.Result) string {
	if r.Set == "" {
		return r.Policy
	}
	return r.Policy + " " + r.Set
}

// policyRank orders the built-in policies from the naive baseline to the
// full design; other policies come after them.
var policyRank = map[string]int{"serial": 0, "double-buffer": 1, "pipeline": 2, "overlap": 3}

// compareVariants orders variants by policy (baseline first), then knobs.
func compareVariants(a, b string) int {
	pa, sa, _ := strings.Cut(a, " ")
	pb, sb, _ := strings.Cut(b, " ")
	ra, oka := policyRank[pa]
	rb, okb := policyRank[pb]
	if !oka {
		ra = len(policyRank)
	}
	if !okb {
		rb = len(policyRank)
	}
	return cmp.Or(cmp.Compare(ra, rb), cmp.Compare(pa, pb), cmp.Compare(sa, sb))
}

// variantsOf returns the variants of results in compareVariants order.
func variantsOf(results []experiments.Result) []string {
	seen := map[string]bool{}
	var out []string
	for i := range results {
		if v := variant(&results[i]); !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	slices.SortFunc(out, compareVariants)
	return out
}

// queriesOf returns the queries of results in TPC-H order (q2 before q10).
func queriesOf(results []experiments.Result) []string {
	seen := map[string]bool{}
	var out []string
	for i := range results {
		if q := results[i].Query; !seen[q] {
			seen[q] = true
			out = append(out, q)
		}
	}
	slices.SortFunc(out, compareQueries)
	return out
}

func compareQueries(a, b string) int {
	na, ea := strconv.Atoi(strings.TrimPrefix(strings.ToLower(a), "q"))
	nb, eb := strconv.Atoi(strings.TrimPrefix(strings.ToLower(b), "q"))
	if ea == nil && eb == nil {
		return cmp.Compare(na, nb)
	}
	if (ea == nil) != (eb == nil) {
		if ea == nil {
			return -1
		}
		return 1
	}
	return cmp.Compare(a, b)
}

// compareNatural compares strings with their digit runs as numbers
// ("depth=2" before "depth=16").
func compareNatural(a, b string) int {
	for a != "" && b != "" {
		da, db := digitRun(a), digitRun(b)
		if da > 0 && db > 0 {
			na, _ := strconv.ParseUint(a[:da], 10, 64)
			nb, _ := strconv.ParseUint(b[:db], 10, 64)
			if c := cmp.Compare(na, nb); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

func digitRun(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

// median is experiments.Median (NaN for no values).
var median = experiments.Median

// palette is the Okabe-Ito colour-blind-safe palette, most distinct first.
var palette = []color.Color{
	rgb(0x0072B2), rgb(0xE69F00), rgb(0x009E73), rgb(0xD55E00),
	rgb(0xCC79A7), rgb(0x56B4E9), rgb(0x000000), rgb(0xF0E442),
}

// seriesColor is the colour of the i-th series (cycling past the palette).
func seriesColor(i int) color.Color { return palette[i%len(palette)] }

func rgb(v uint32) color.Color {
	return color.RGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 0xff}
}

var gray = color.Gray{Y: 0x80}

// newPlot returns a plot with the title (first line) and the caption
// line naming the origin, and the package's fonts: smaller than gonum's
// defaults so that figures of 16 cm keep their labels apart.
func newPlot(title, caption string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	if caption != "" {
		p.Title.Text += "\n" + caption
	}
	p.Title.TextStyle.Font.Size = vg.Points(10)
	p.Title.Padding = vg.Points(6)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size = vg.Points(9)
		a.Tick.Label.Font.Size = vg.Points(8)
	}
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	p.Legend.ThumbnailWidth = vg.Points(14)
	p.Legend.Padding = vg.Points(2.5)
	p.Y.Tick.Marker = niceTicks{}
	p.X.Tick.Marker = niceTicks{}
	return p
}

// gridLines draws light horizontal lines at the major Y ticks, behind the
// data (add it first).
type gridLines struct{}

func (gridLines) Plot(c draw.Canvas, p *plot.Plot) {
	_, trY := p.Transforms(&c)
	sty := draw.LineStyle{Color: color.Gray{Y: 0xe8}, Width: vg.Points(0.5)}
	for _, t := range p.Y.Tick.Marker.Ticks(p.Y.Min, p.Y.Max) {
		if t.IsMinor() || t.Value < p.Y.Min || t.Value > p.Y.Max {
			continue
		}
		y := trY(t.Value)
		c.StrokeLine2(sty, c.Min.X, y, c.Max.X, y)
	}
}

// bars fills rectangles given in data coordinates (bar charts whose bar
// widths are in axis units, and the timeline's task slices).
type bars struct {
	rects []rect
	// minWidth is the narrowest a rectangle is drawn, so that short tasks
	// stay visible.
	minWidth vg.Length
	// gap is cut off the right of rectangles wider than 4 gaps, so that
	// adjacent ones (back-to-back tasks) stay apart.
	gap vg.Length
}

type rect struct {
	x0, x1, y0, y1 float64
	color          color.Color
}

func (b *bars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, r := range b.rects {
		x0, x1 := trX(r.x0), trX(r.x1)
		if x1-x0 < b.minWidth {
			x1 = x0 + b.minWidth
			if x1 > c.Max.X { // a short task at the very end: keep it in
				x0, x1 = c.Max.X-b.minWidth, c.Max.X
			}
		} else if b.gap > 0 && x1-x0 > 4*b.gap {
			x1 -= b.gap
		}
		y0, y1 := trY(r.y0), trY(r.y1)
		pts := c.ClipPolygonXY([]vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}})
		c.FillPolygon(r.color, pts)
	}
}

func (b *bars) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, ymin = math.Inf(1), math.Inf(1)
	xmax, ymax = math.Inf(-1), math.Inf(-1)
	for _, r := range b.rects {
		xmin, xmax = min(xmin, r.x0), max(xmax, r.x1)
		ymin, ymax = min(ymin, r.y0, r.y1), max(ymax, r.y0, r.y1)
	}
	return
}

// swatch is a legend thumbnail: a filled box of one colour.
type swatch struct{ color color.Color }

func (s swatch) Thumbnail(c *draw.Canvas) {
	pts := []vg.Point{c.Min, {X: c.Max.X, Y: c.Min.Y}, c.Max, {X: c.Min.X, Y: c.Max.Y}}
	c.FillPolygon(s.color, pts)
}

// whiskers draws error bars: a vertical line from lo to hi at x with caps
// of half-width halfCap, or, if capFrac > 0, capFrac times the distance
// between x and x+1 on the axis (caps as wide as a fraction of a bar).
type whiskers struct {
	items   []whisker
	halfCap vg.Length
	capFrac float64
	style   draw.LineStyle
}

type whisker struct{ x, lo, hi float64 }

func (w *whiskers) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, it := range w.items {
		if math.IsNaN(it.lo) || math.IsNaN(it.hi) || it.hi <= it.lo {
			continue
		}
		x, lo, hi := trX(it.x), trY(it.lo), trY(it.hi)
		hc := w.halfCap
		if w.capFrac > 0 {
			hc = vg.Length(w.capFrac) * (trX(it.x+1) - x)
		}
		xl, xr := x-hc, x+hc
		c.StrokeLines(w.style, c.ClipLinesXY(
			[]vg.Point{{X: x, Y: lo}, {X: x, Y: hi}},
			[]vg.Point{{X: xl, Y: lo}, {X: xr, Y: lo}},
			[]vg.Point{{X: xl, Y: hi}, {X: xr, Y: hi}})...)
	}
}

func (w *whiskers) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, ymin = math.Inf(1), math.Inf(1)
	xmax, ymax = math.Inf(-1), math.Inf(-1)
	for _, it := range w.items {
		if math.IsNaN(it.lo) || math.IsNaN(it.hi) {
			continue
		}
		xmin, xmax = min(xmin, it.x), max(xmax, it.x)
		ymin, ymax = min(ymin, it.lo), max(ymax, it.hi)
	}
	return
}

// hline is a horizontal reference line across the data area at y.
type hline struct {
	y     float64
	style draw.LineStyle
}

func (h hline) Plot(c draw.Canvas, p *plot.Plot) {
	_, trY := p.Transforms(&c)
	y := trY(h.y)
	c.StrokeLines(h.style, c.ClipLinesXY([]vg.Point{{X: c.Min.X, Y: y}, {X: c.Max.X, Y: y}})...)
}

func (h hline) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(h.style, c.Min.X, y, c.Max.X, y)
}

// nominalTicks marks the integers 0..len(names)-1 with names (a
// categorical axis), without tick lines.
func nominalTicks(names []string) plot.ConstantTicks {
	t := make(plot.ConstantTicks, len(names))
	for i, n := range names {
		t[i] = plot.Tick{Value: float64(i), Label: n}
	}
	return t
}

// timeUnit picks seconds or milliseconds for times up to maxSec seconds:
// the factor to multiply seconds by and the unit's name.
func timeUnit(maxSec float64) (float64, string) {
	if maxSec < 1 {
		return 1e3, "ms"
	}
	return 1, "s"
}

// fontStyle is a text style of the default font at size pt.
func fontStyle(p *plot.Plot, pt float64) draw.TextStyle {
	s := p.Y.Tick.Label
	s.Font = font.From(plot.DefaultFont, vg.Points(pt))
	return s
}

// niceTicks marks about 5 to 8 labelled values at steps of 1, 2, 2.5 or 5
// times a power of ten, with unlabelled minor ticks between them: gonum's
// default labels only 2 or 3 values on a 10 cm axis.
type niceTicks struct{}

func (niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return nil
	}
	raw := (hi - lo) / 6
	e := math.Floor(math.Log10(raw))
	p := math.Pow(10, e)
	step, minorDiv := 10*p, 5
	for _, m := range []struct {
		f   float64
		div int
	}{{1, 5}, {2, 4}, {2.5, 5}, {5, 5}} {
		if m.f*p >= raw {
			step, minorDiv = m.f*p, m.div
			break
		}
	}
	// Decimals enough to tell the labels apart (2.5 steps need one more).
	dec := max(0, int(-math.Floor(math.Log10(step)+1e-9)))
	if r := step / math.Pow(10, math.Floor(math.Log10(step)+1e-9)); math.Abs(r-2.5) < 1e-9 {
		dec++
	}
	var out []plot.Tick
	minor := step / float64(minorDiv)
	for i := math.Ceil(lo/minor - 1e-9); i*minor <= hi+minor*1e-9; i++ {
		v := i * minor
		t := plot.Tick{Value: v}
		if k := v / step; math.Abs(k-math.Round(k)) < 1e-6 {
			if math.Abs(v) < step*1e-9 {
				v = 0 // no "-0"
			}
			t.Label = strconv.FormatFloat(v, 'f', dec, 64)
		}
		out = append(out, t)
	}
	return out
}

// variantColor is the colour of a policy variant, the same in every
// figure: the built-in policies without knob overrides have fixed colours
// (serial blue, double-buffer orange, pipeline green, overlap red), other
// variants the next palette colours in the order of variants (all the
// variants of the figure, in compareVariants order).
func variantColor(v string, variants []string) color.Color {
	if r, ok := policyRank[v]; ok {
		return seriesColor(r)
	}
	i := len(policyRank)
	for _, w := range variants {
		if w == v {
			return seriesColor(i)
		}
		if _, ok := policyRank[w]; !ok {
			i++
		}
	}
	return gray
}

// wrapTitle breaks the lines of a title that are wider than width: at
// "; " first, pieces still too wide at ", ", then at spaces, so that a
// long caption is not cut off.
func wrapTitle(sty text.Style, s string, width vg.Length) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		out = append(out, wrapLine(sty, line, width, []string{"; ", ", ", " "})...)
	}
	return strings.Join(out, "\n")
}

func wrapLine(sty text.Style, line string, width vg.Length, seps []string) []string {
	if sty.Width(line) <= width || len(seps) == 0 {
		return []string{line}
	}
	sep := seps[0]
	parts := strings.Split(line, sep)
	var out []string
	cur := ""
	flush := func() {
		if cur != "" {
			out = append(out, wrapLine(sty, cur, width, seps[1:])...)
		}
	}
	for i, part := range parts {
		if i < len(parts)-1 && sep != "; " {
			part += strings.TrimRight(sep, " ") // keep the comma at a break
		}
		switch {
		case cur == "":
			cur = part
		case sty.Width(cur+" "+part) <= width && sep != "; ":
			cur += " " + part
		case sty.Width(cur+sep+part) <= width && sep == "; ":
			cur += sep + part
		default:
			flush() // the break replaces a "; " separator
			cur = part
		}
	}
	flush()
	return out
}

// fmtNs formats a duration in nanoseconds with 4 significant digits:
// "394.5 ms" (the trace's full precision would only clutter a caption).
func fmtNs(ns int64) string {
	v, unit := float64(ns), "ns"
	for _, u := range []struct {
		f    float64
		name string
	}{{1e9, "s"}, {1e6, "ms"}, {1e3, "µs"}} {
		if math.Abs(v) >= u.f {
			v, unit = v/u.f, u.name
			break
		}
	}
	return strconv.FormatFloat(v, 'g', 4, 64) + " " + unit
}

// pointLabels writes labels next to points without letting them collide:
// each label takes the first of several positions around its point (right,
// left, above, below, then further out) that overlaps no label placed
// before it and no point; a label with no free position is left out.
// Labels are placed in order, so put the most important first.
type pointLabels struct {
	pts    []plotter.XY
	labels []string
	style  text.Style
	// avoid are further points (data coordinates) labels must not cover.
	avoid []plotter.XY
	// dropped counts the labels left out at the last Plot.
	dropped int
}

func (l *pointLabels) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	r := vg.Points(3.5) // a glyph's radius, and the gap to a label
	var taken []vg.Rectangle
	point := func(pt plotter.XY) vg.Rectangle {
		q := vg.Point{X: trX(pt.X), Y: trY(pt.Y)}
		return vg.Rectangle{Min: vg.Point{X: q.X - r, Y: q.Y - r}, Max: vg.Point{X: q.X + r, Y: q.Y + r}}
	}
	for _, pt := range append(slices.Clone(l.pts), l.avoid...) {
		taken = append(taken, point(pt))
	}
	overlaps := func(a vg.Rectangle) bool {
		if a.Min.X < c.Min.X || a.Max.X > c.Max.X || a.Min.Y < c.Min.Y || a.Max.Y > c.Max.Y {
			return true
		}
		for _, b := range taken {
			if a.Min.X < b.Max.X && b.Min.X < a.Max.X && a.Min.Y < b.Max.Y && b.Min.Y < a.Max.Y {
				return true
			}
		}
		return false
	}
	l.dropped = 0
	for i, txt := range l.labels {
		x, y := trX(l.pts[i].X), trY(l.pts[i].Y)
		w, h := l.style.Width(txt), l.style.Height(txt)
		var placed bool
		for _, k := range []vg.Length{1, 2.5} {
			d := r * k
			for _, at := range []vg.Point{
				{X: x + d, Y: y - h/2}, {X: x - d - w, Y: y - h/2}, // right, left
				{X: x - w/2, Y: y + d}, {X: x - w/2, Y: y - d - h}, // above, below
				{X: x + d, Y: y + d}, {X: x + d, Y: y - d - h}, // right above, right below
				{X: x - d - w, Y: y + d}, {X: x - d - w, Y: y - d - h},
			} {
				box := vg.Rectangle{Min: at, Max: vg.Point{X: at.X + w, Y: at.Y + h}}
				if overlaps(box) {
					continue
				}
				taken = append(taken, box)
				sty := l.style
				sty.XAlign, sty.YAlign = draw.XLeft, draw.YBottom
				c.FillText(sty, at, txt)
				placed = true
				break
			}
			if placed {
				break
			}
		}
		if !placed {
			l.dropped++
		}
	}
}
