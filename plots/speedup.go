package plots

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"gostachio/experiments"
)

// speedupConf is the confidence level of the speedup intervals.
const speedupConf = 0.95

// speedupCell is one bar: the median speedup of a variant over the base
// on one query and its confidence interval (lo = hi = med without one).
type speedupCell struct {
	med, lo, hi float64
	ok          bool
}

// speedupTable is the speedup figure's data: cells[q][v] for queries[q]
// and variants[v] (the variants other than base), geo[v] the geometric
// mean of the median speedups over the queries that have both, with its
// interval (experiments.GeoMeanSpeedupCI).
type speedupTable struct {
	base             string
	queries          []string
	variants         []string
	cells            [][]speedupCell
	geo              []speedupCell
	minReps, maxReps int
}

func computeSpeedup(results []experiments.Result, base string) (speedupTable, error) {
	t := speedupTable{base: base}
	all := variantsOf(results)
	if len(all) < 2 {
		return t, fmt.Errorf("plots: speedup: need results of at least 2 policies, have %d (%v)", len(all), all)
	}
	if t.base == "" {
		t.base = all[0]
	}
	for _, v := range all {
		if v != t.base {
			t.variants = append(t.variants, v)
		}
	}
	if len(t.variants) == len(all) {
		return t, fmt.Errorf("plots: speedup: no results of the base policy %q (have %v)", t.base, all)
	}
	t.queries = queriesOf(results)
	times := map[[2]string][]float64{}
	for i := range results {
		k := [2]string{results[i].Query, variant(&results[i])}
		times[k] = append(times[k], results[i].Seconds)
	}
	t.minReps = math.MaxInt
	// A fixed seed: a figure drawn twice from the same results is the same.
	rng := rand.New(rand.NewPCG(1, 2))
	groups := make([][][2][]float64, len(t.variants)) // per variant: {a, b} per query
	for _, q := range t.queries {
		a := times[[2]string{q, t.base}]
		row := make([]speedupCell, len(t.variants))
		for v, name := range t.variants {
			b := times[[2]string{q, name}]
			if len(a) == 0 || len(b) == 0 {
				continue
			}
			t.minReps = min(t.minReps, len(a), len(b))
			t.maxReps = max(t.maxReps, len(a), len(b))
			med, lo, hi := experiments.MedianSpeedupCI(a, b, speedupConf, rng)
			if !(med > 0) || math.IsInf(med, 0) {
				continue // a zero time: no speedup to draw
			}
			row[v] = speedupCell{med, lo, hi, true}
			groups[v] = append(groups[v], [2][]float64{a, b})
		}
		t.cells = append(t.cells, row)
	}
	found := false
	t.geo = make([]speedupCell, len(t.variants))
	for v := range t.variants {
		if len(groups[v]) > 0 {
			g, lo, hi := experiments.GeoMeanSpeedupCI(groups[v], speedupConf, rng)
			t.geo[v] = speedupCell{g, lo, hi, true}
			found = true
		}
	}
	if !found {
		return t, fmt.Errorf("plots: speedup: no query has results of both %q and another policy", t.base)
	}
	return t, nil
}

// Speedup draws, per query, the median speedup of each policy variant
// (policy and knob set) over base (base's seconds / the variant's: above
// 1 is faster) as grouped bars with speedupConf confidence intervals from
// experiments.MedianSpeedupCI over the repetitions, a reference line at
// 1, and a last group with the geometric mean over queries. base "" is
// the first variant in policy order (serial, double-buffer, pipeline,
// overlap, others). results must come from one origin; DrawAll passes
// the results without a sweep point. Fewer than two variants, or no query
// with results of both, is an error.
func Speedup(results []experiments.Result, base string) (*plot.Plot, error) {
	o, err := oneOrigin(results, "speedup")
	if err != nil {
		return nil, err
	}
	t, err := computeSpeedup(results, base)
	if err != nil {
		return nil, err
	}
	reps := strconv.Itoa(t.minReps)
	if t.maxReps != t.minReps {
		reps += "-" + strconv.Itoa(t.maxReps)
	}
	caption := fmt.Sprintf("%s; bars: median over %s repetitions, whiskers: %.0f%% bootstrap CI", o, reps, 100*speedupConf)
	if t.minReps < 5 {
		// experiments.MedianSpeedupCI: too coarse to trust below 5.
		caption += " (rough: fewer than 5 repetitions)"
	}
	p := newPlot("Speedup over "+t.base, caption)
	p.Y.Label.Text = "speedup over " + t.base + " (×, higher is faster)"

	nv := len(t.variants)
	w := 0.8 / float64(nv)
	b := &bars{}
	wh := &whiskers{capFrac: min(w*0.25, 0.06), style: draw.LineStyle{Color: rgb(0x333333), Width: vg.Points(0.8)}}
	all := variantsOf(results)
	top := 1.0
	nq := len(t.queries)
	geoX := float64(nq) + 0.4 // the geomean group, set apart
	for v, name := range t.variants {
		c := variantColor(name, all)
		for q := range t.queries {
			cell := t.cells[q][v]
			if !cell.ok {
				continue
			}
			x0 := float64(q) - 0.4 + float64(v)*w
			b.rects = append(b.rects, rect{x0, x0 + w*0.92, 0, cell.med, c})
			wh.items = append(wh.items, whisker{x0 + w*0.46, cell.lo, cell.hi})
			top = max(top, cell.hi, cell.med)
		}
		entry := name
		if g := t.geo[v]; g.ok {
			x0 := geoX - 0.4 + float64(v)*w
			b.rects = append(b.rects, rect{x0, x0 + w*0.92, 0, g.med, c})
			wh.items = append(wh.items, whisker{x0 + w*0.46, g.lo, g.hi})
			top = max(top, g.hi, g.med)
			// The value goes in the legend: labels over narrow bars collide.
			entry += fmt.Sprintf(" (geomean %.3g×)", g.med)
		}
		p.Legend.Add(entry, swatch{c})
	}
	p.Add(gridLines{}, b, wh,
		hline{1, draw.LineStyle{Color: rgb(0x333333), Width: vg.Points(0.8), Dashes: []vg.Length{vg.Points(3), vg.Points(2)}}})
	ticks := nominalTicks(t.queries)
	ticks = append(ticks, plot.Tick{Value: geoX, Label: "geomean"})
	p.X.Tick.Marker = ticks
	p.X.Tick.Length = 0
	p.X.Min, p.X.Max = -0.6, geoX+0.6
	p.X.Padding = 0
	p.X.Label.Text = "query"
	p.Y.Min, p.Y.Max = 0, top*1.1
	// Many queries: widen the figure so that each group keeps room for
	// its label ("q22") and bars, rather than letting labels collide.
	group := vg.Length(max(0.8, 0.22*float64(nv))) * vg.Centimeter
	if need := vg.Length(float64(nq)+1.5)*group + 8*vg.Centimeter; need > DefaultWidth {
		setSize(p, min(need, 40*vg.Centimeter), DefaultHeight)
	}
	return p, nil
}
