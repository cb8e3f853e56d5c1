package plots

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"gostachio/experiments"
	"gostachio/internal/stats"
	"gostachio/internal/units"
)

// sweepPerQueryMax is the most queries a sweep figure draws a line per
// query for; with more it draws one line per policy: the geometric mean
// over queries.
const sweepPerQueryMax = 3

// sweepAxis is how a sweep axis's values are placed: as numbers (sizes
// like "8MiB" in bytes), or as categories in order of first appearance.
type sweepAxis struct {
	values []string
	x      map[string]float64
	bytes  bool // values are byte sizes
	number bool // values are numbers (or byte sizes)
}

func parseSweepAxis(values []string) sweepAxis {
	a := sweepAxis{values: values, x: map[string]float64{}, number: true}
	for _, v := range values {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			a.number = false
			break
		}
		a.x[v] = f
	}
	if !a.number {
		a.number, a.bytes = true, true
		for _, v := range values {
			n, err := units.ParseBytes(v)
			if err != nil {
				a.number, a.bytes = false, false
				break
			}
			a.x[v] = float64(n)
		}
	}
	if !a.number {
		for i, v := range values {
			a.x[v] = float64(i)
		}
		return a
	}
	slices.SortStableFunc(a.values, func(p, q string) int { return cmp.Compare(a.x[p], a.x[q]) })
	return a
}

func (a sweepAxis) label(v float64) string {
	if a.bytes {
		return units.FormatBytes(int64(v))
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// sweepAxes returns the sweep axes of results, in order of first
// appearance.
func sweepAxes(results []experiments.Result) []string {
	var out []string
	for i := range results {
		if results[i].Sweep == "" {
			continue
		}
		for _, kv := range strings.Split(results[i].Sweep, ",") {
			if k, _, ok := strings.Cut(kv, "="); ok && !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	return out
}

// sweepRest is r's sweep point without axis ("depth=4" of
// "chunk=8MiB,depth=4" for axis chunk): lines differ in it.
func sweepRest(r *experiments.Result, axis string) string {
	var rest []string
	for _, kv := range strings.Split(r.Sweep, ",") {
		if k, _, _ := strings.Cut(kv, "="); k != axis && kv != "" {
			rest = append(rest, kv)
		}
	}
	return strings.Join(rest, ",")
}

// sweepSeries is one line of the sweep figure.
type sweepSeries struct {
	name           string
	variant, query string // query "": geomean over queries
	rest           string // the other sweep axes' values
	pts            []sweepPoint
}

type sweepPoint struct {
	x, y, lo, hi float64 // seconds; lo, hi NaN without an interval
	reps         int
}

// sweepTable computes the lines of Sweep.
func sweepTable(results []experiments.Result, axis string) (sweepAxis, []sweepSeries, []string, error) {
	var rs []experiments.Result
	var values []string
	for i := range results {
		if v := results[i].SweepValue(axis); v != "" {
			rs = append(rs, results[i])
			if !slices.Contains(values, v) {
				values = append(values, v)
			}
		}
	}
	if len(rs) == 0 {
		return sweepAxis{}, nil, nil, fmt.Errorf("plots: sweep: no results sweep over %q", axis)
	}
	ax := parseSweepAxis(values)
	queries := queriesOf(rs)
	perQuery := len(queries) <= sweepPerQueryMax
	type cfg struct{ variant, rest, query, value string }
	times := map[cfg][]float64{}
	for i := range rs {
		k := cfg{variant(&rs[i]), sweepRest(&rs[i], axis), rs[i].Query, rs[i].SweepValue(axis)}
		times[k] = append(times[k], rs[i].Seconds)
	}
	type line struct{ variant, rest, query string }
	lines := map[line]bool{}
	for k := range times {
		q := k.query
		if !perQuery {
			q = ""
		}
		lines[line{k.variant, k.rest, q}] = true
	}
	keys := make([]line, 0, len(lines))
	for l := range lines {
		keys = append(keys, l)
	}
	slices.SortFunc(keys, func(a, b line) int {
		return cmp.Or(compareVariants(a.variant, b.variant), compareNatural(a.rest, b.rest), compareQueries(a.query, b.query))
	})
	var out []sweepSeries
	for _, l := range keys {
		s := sweepSeries{name: l.variant, variant: l.variant, query: l.query, rest: l.rest}
		if l.rest != "" {
			s.name += " " + l.rest
		}
		if perQuery && len(queries) > 1 {
			s.name += " · " + l.query
		}
		for _, v := range ax.values {
			pt := sweepPoint{x: ax.x[v], lo: nan, hi: nan}
			if perQuery {
				xs := times[cfg{l.variant, l.rest, l.query, v}]
				if len(xs) == 0 {
					continue
				}
				pt.y, pt.reps = median(xs), len(xs)
				if len(xs) >= 3 {
					ci := experiments.MedianRankCI(xs, speedupConf)
					pt.lo, pt.hi = ci.Lo, ci.Hi
				}
			} else {
				// Geomean over queries of the medians, only where every
				// query has a result (else the mean mixes query sets).
				meds := make([]float64, 0, len(queries))
				for _, q := range queries {
					if xs := times[cfg{l.variant, l.rest, q, v}]; len(xs) > 0 {
						meds = append(meds, median(xs))
						pt.reps = max(pt.reps, len(xs))
					}
				}
				if len(meds) < len(queries) {
					continue
				}
				pt.y = stats.GeoMean(meds)
				if pt.y != pt.y {
					continue
				}
			}
			s.pts = append(s.pts, pt)
		}
		if len(s.pts) > 0 {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return ax, nil, queries, fmt.Errorf("plots: sweep over %q: no sweep point has results of every query", axis)
	}
	return ax, out, queries, nil
}

// Sweep draws a sweep over axis (Result.SweepValue): x the axis value
// (numbers, or sizes like "8MiB" in bytes, on a log axis when they span
// 10x or more; other values as categories in order of appearance), y the
// median seconds, one line per policy variant and remaining sweep axes,
// and per query when there are at most sweepPerQueryMax queries (with
// more, a line is the geometric mean over queries of the medians, drawn
// at points where every query has results). With 3 or more repetitions,
// per-query lines get whiskers: the distribution-free interval of the
// median (experiments.MedianRankCI; min-max below 6 repetitions). results must come from one origin; those without axis are
// ignored.
func Sweep(results []experiments.Result, axis string) (*plot.Plot, error) {
	var rs []experiments.Result
	for i := range results {
		if results[i].SweepValue(axis) != "" {
			rs = append(rs, results[i])
		}
	}
	if len(rs) == 0 {
		return nil, fmt.Errorf("plots: sweep: no results sweep over %q", axis)
	}
	o, err := oneOrigin(rs, "sweep over "+axis)
	if err != nil {
		return nil, err
	}
	ax, series, queries, err := sweepTable(rs, axis)
	if err != nil {
		return nil, err
	}
	maxY := 0.0
	whiskered := false
	for _, s := range series {
		for _, pt := range s.pts {
			maxY = max(maxY, pt.y, nanTo(pt.hi, 0))
			whiskered = whiskered || pt.lo == pt.lo
		}
	}
	scale, unit := timeUnit(maxY)
	caption := o.String()
	if series[0].query == "" {
		caption += fmt.Sprintf("; geomean over %d queries of the median over repetitions", len(queries))
	} else {
		if len(queries) == 1 {
			caption += "; query " + queries[0]
		}
		caption += "; median over repetitions"
		if whiskered {
			caption += ", whiskers: 95% CI of the median (min-max below 6 repetitions)"
		}
	}
	p := newPlot("Sweep over "+axis, caption)
	p.Y.Label.Text = "time (" + unit + ", lower is better)"
	p.X.Label.Text = axis
	if ax.bytes {
		p.X.Label.Text += " (bytes)"
	}
	logX := ax.number && ax.x[ax.values[0]] > 0 && ax.x[ax.values[len(ax.values)-1]] >= 10*ax.x[ax.values[0]]
	if logX {
		p.X.Scale = plot.LogScale{}
	}
	var ticks plot.ConstantTicks
	step := (len(ax.values) + 9) / 10 // at most 10 labelled ticks
	for i, v := range ax.values {
		t := plot.Tick{Value: ax.x[v]}
		if i%step == 0 {
			t.Label = v
			if ax.number {
				t.Label = ax.label(ax.x[v])
			}
		}
		ticks = append(ticks, t)
	}
	p.X.Tick.Marker = ticks

	all := variantsOf(rs)
	styleIdx := map[string]int{}
	perVariant := map[string]int{}
	for _, s := range series {
		styleIdx[s.name] = perVariant[s.variant]
		perVariant[s.variant]++
	}
	shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.PyramidGlyph{}, draw.BoxGlyph{}, draw.RingGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{}}
	dashes := [][]vg.Length{nil, {vg.Points(5), vg.Points(2)}, {vg.Points(1.5), vg.Points(1.5)}, {vg.Points(5), vg.Points(2), vg.Points(1.5), vg.Points(2)}}
	p.Add(gridLines{})
	// Whiskers of different lines at one x would coincide: shift each line
	// a little (a fraction of the gap between values, in axis units).
	span := ax.x[ax.values[len(ax.values)-1]] - ax.x[ax.values[0]]
	for si, s := range series {
		c := variantColor(s.variant, all)
		// Lines of one variant differ in style: by query, or by the other
		// sweep axes' values.
		k := styleIdx[s.name]
		xys := make(plotter.XYs, len(s.pts))
		wh := &whiskers{halfCap: vg.Points(2), style: draw.LineStyle{Color: c, Width: vg.Points(0.8)}}
		shift := 0.0
		if whiskered && len(series) > 1 {
			shift = (float64(si) - float64(len(series)-1)/2) * 0.012
		}
		for i, pt := range s.pts {
			x := pt.x
			switch {
			case logX:
				x *= math.Pow(10, shift*math.Log10(ax.x[ax.values[len(ax.values)-1]]/ax.x[ax.values[0]]))
			case ax.number:
				x += shift * span
			default:
				x += shift * float64(len(ax.values))
			}
			xys[i] = plotter.XY{X: x, Y: pt.y * scale}
			if pt.lo == pt.lo {
				wh.items = append(wh.items, whisker{x, pt.lo * scale, pt.hi * scale})
			}
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, fmt.Errorf("plots: sweep: %w", err)
		}
		l.Color, l.Width, l.Dashes = c, vg.Points(1.2), dashes[k%len(dashes)]
		sc, err := plotter.NewScatter(xys)
		if err != nil {
			return nil, fmt.Errorf("plots: sweep: %w", err)
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(2.5), Shape: shapes[k%len(shapes)]}
		p.Add(wh, l, sc)
		p.Legend.Add(s.name, l, sc)
	}
	p.Y.Min = 0
	p.Y.Max = maxY * scale * 1.08
	if !ax.number {
		p.X.Min, p.X.Max = -0.5, float64(len(ax.values))-0.5
		p.X.Tick.Length = 0
	} else if logX {
		p.X.Min, p.X.Max = ax.x[ax.values[0]]/1.25, ax.x[ax.values[len(ax.values)-1]]*1.25
	} else {
		pad := 0.05 * max(span, 1e-9)
		p.X.Min, p.X.Max = ax.x[ax.values[0]]-pad, ax.x[ax.values[len(ax.values)-1]]+pad
	}
	return p, nil
}

func nanTo(x, y float64) float64 {
	if x != x {
		return y
	}
	return x
}
