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
)

// Scatter's error band and the most outliers it labels.
const (
	scatterBand      = 0.10
	scatterMaxLabels = 12
)

// scatterPair is one point: the medians over repetitions of a sim and an
// engine configuration with equal query, policy, knob set, sweep point
// and scale factor.
type scatterPair struct {
	query, variant, sweep string
	sf                    float64
	engine, sim           float64 // seconds
}

func (p scatterPair) label() string {
	s := p.query + " " + p.variant
	if p.sweep != "" {
		s += " " + p.sweep
	}
	return s
}

// relErr is (sim - engine) / engine.
func (p scatterPair) relErr() float64 { return (p.sim - p.engine) / p.engine }

// scatterPairs pairs the sim and engine results (other backends are
// ignored). The scale factor is part of the key: a simulation of another
// size is no prediction of the measured run.
func scatterPairs(results []experiments.Result) []scatterPair {
	type key struct {
		query, variant, sweep string
		sf                    float64
	}
	sims, engines := map[key][]float64{}, map[key][]float64{}
	for i := range results {
		r := &results[i]
		k := key{r.Query, variant(r), r.Sweep, r.SF}
		switch r.Backend {
		case "sim":
			sims[k] = append(sims[k], r.Seconds)
		case "engine":
			engines[k] = append(engines[k], r.Seconds)
		}
	}
	var out []scatterPair
	for k, e := range engines {
		s, ok := sims[k]
		if !ok {
			continue
		}
		p := scatterPair{k.query, k.variant, k.sweep, k.sf, median(e), median(s)}
		if p.engine > 0 && p.sim > 0 {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b scatterPair) int {
		return cmp.Or(compareQueries(a.query, b.query), compareVariants(a.variant, b.variant),
			cmp.Compare(a.sweep, b.sweep), cmp.Compare(a.sf, b.sf))
	})
	return out
}

// Scatter draws the simulator against the engine: one point per
// configuration (query, policy, knob set, sweep point, scale factor) that
// has results of both backends, x the engine's median seconds, y the
// simulator's, coloured by policy variant; the line y = x, a ±10% band
// around it, and labels on points outside the band (the worst
// scatterMaxLabels). Both axes are logarithmic when the times span more
// than 10x. The sim results must share one profile and node count, and
// the engine results one machine and node count (DrawAll draws one figure
// per combination); no pair is an error.
func Scatter(results []experiments.Result) (*plot.Plot, error) {
	var sim, eng origin
	var nsim, neng int
	for i := range results {
		o := originOf(&results[i])
		o.sf = 0 // points may differ in scale factor
		switch o.backend {
		case "sim":
			if nsim > 0 && o != sim {
				return nil, fmt.Errorf("plots: scatter: sim results of several profiles (%s; %s): draw one figure per profile", sim, o)
			}
			sim, nsim = o, nsim+1
		case "engine":
			if neng > 0 && o != eng {
				return nil, fmt.Errorf("plots: scatter: engine results of several machines (%s; %s): draw one figure per machine", eng, o)
			}
			eng, neng = o, neng+1
		}
	}
	if nsim == 0 || neng == 0 {
		return nil, fmt.Errorf("plots: scatter: need results of both backends, have %d sim and %d engine", nsim, neng)
	}
	pairs := scatterPairs(results)
	if len(pairs) == 0 {
		return nil, fmt.Errorf("plots: scatter: no configuration (query, policy, knobs, sweep point, SF) has results of both the sim and the engine")
	}

	lo, hi := math.Inf(1), 0.0
	var absErr []float64
	inside := 0
	for _, p := range pairs {
		lo, hi = min(lo, p.engine, p.sim), max(hi, p.engine, p.sim)
		absErr = append(absErr, math.Abs(p.relErr()))
		if math.Abs(p.relErr()) <= scatterBand {
			inside++
		}
	}
	scale, unit := timeUnit(hi)
	lo, hi = lo*scale, hi*scale
	logAxes := hi > 10*lo

	var sfs []string
	for _, p := range pairs {
		if s := strconv.FormatFloat(p.sf, 'g', -1, 64); !slices.Contains(sfs, s) {
			sfs = append(sfs, s)
		}
	}
	caption := fmt.Sprintf("%s vs %s, SF %s\nmedian |error| %.0f%%; %d of %d within ±%.0f%%",
		sim, eng, strings.Join(sfs, ", "), 100*median(absErr), inside, len(pairs), 100*scatterBand)
	p := newPlot("Simulator vs engine", caption)
	p.X.Label.Text = "engine, measured (" + unit + ")"
	p.Y.Label.Text = "simulator, predicted (" + unit + ")"

	var x0, x1 float64
	if logAxes {
		x0, x1 = lo/1.3, hi*1.3
		p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
		p.X.Tick.Marker, p.Y.Tick.Marker = ticks125{}, ticks125{}
	} else {
		x0, x1 = 0, hi*1.12
	}

	// The band and y = x are straight on linear and on log-log axes.
	band, err := plotter.NewPolygon(plotter.XYs{
		{X: x0, Y: x0 * (1 - scatterBand)}, {X: x1, Y: x1 * (1 - scatterBand)},
		{X: x1, Y: x1 * (1 + scatterBand)}, {X: x0, Y: x0 * (1 + scatterBand)}})
	if err != nil {
		return nil, fmt.Errorf("plots: scatter: %w", err)
	}
	band.Color = rgb(0xD8E8F4)
	band.LineStyle.Width = 0
	diag, err := plotter.NewLine(plotter.XYs{{X: x0, Y: x0}, {X: x1, Y: x1}})
	if err != nil {
		return nil, fmt.Errorf("plots: scatter: %w", err)
	}
	diag.Color, diag.Width = rgb(0x333333), vg.Points(0.8)
	diag.Dashes = []vg.Length{vg.Points(3), vg.Points(2)}
	p.Add(band, diag)
	p.Legend.Add("y = x", diag)
	p.Legend.Add(fmt.Sprintf("±%.0f%%", 100*scatterBand), swatch{band.Color})

	all := variantsOf(results)
	shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.PyramidGlyph{}, draw.BoxGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{}, draw.RingGlyph{}}
	byVariant := map[string]plotter.XYs{}
	var order []string
	for _, q := range pairs {
		if _, ok := byVariant[q.variant]; !ok {
			order = append(order, q.variant)
		}
		byVariant[q.variant] = append(byVariant[q.variant], plotter.XY{X: q.engine * scale, Y: q.sim * scale})
	}
	slices.SortFunc(order, compareVariants)
	for _, v := range order {
		sc, err := plotter.NewScatter(byVariant[v])
		if err != nil {
			return nil, fmt.Errorf("plots: scatter: %w", err)
		}
		i := slices.Index(all, v)
		sc.GlyphStyle = draw.GlyphStyle{Color: variantColor(v, all), Radius: vg.Points(2.8), Shape: shapes[i%len(shapes)]}
		p.Add(sc)
		p.Legend.Add(v, sc)
	}

	// Labels on the worst outliers first (the placer drops those that
	// find no free spot).
	out := slices.Clone(pairs)
	slices.SortFunc(out, func(a, b scatterPair) int { return cmp.Compare(math.Abs(b.relErr()), math.Abs(a.relErr())) })
	pl := &pointLabels{style: fontStyle(p, 7)}
	for _, q := range out {
		pt := plotter.XY{X: q.engine * scale, Y: q.sim * scale}
		if math.Abs(q.relErr()) <= scatterBand || len(pl.labels) == scatterMaxLabels {
			pl.avoid = append(pl.avoid, pt)
			continue
		}
		pl.pts = append(pl.pts, pt)
		pl.labels = append(pl.labels, fmt.Sprintf("%s %+.0f%%", q.label(), 100*q.relErr()))
	}
	p.Add(pl)
	// Last: Add widens the axes to its plotters' data (the band's corners).
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = x0, x1, x0, x1
	setSize(p, DefaultWidth, 12*vg.Centimeter)
	return p, nil
}

// ticks125 marks 1, 2 and 5 times the powers of ten in range (labelled),
// for log axes that span a decade or two, where powers of ten alone give
// one or two ticks.
type ticks125 struct{}

func (ticks125) Ticks(min, max float64) []plot.Tick {
	if !(min > 0) || !(max > min) {
		return nil
	}
	var out []plot.Tick
	for e := math.Floor(math.Log10(min)); e <= math.Ceil(math.Log10(max)); e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if v >= min && v <= max {
				out = append(out, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', 3, 64)})
			}
		}
	}
	return out
}
