package plots

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"gonum.org/v1/plot"

	"gostachio/experiments"
	"gostachio/traces/event"
)

// resourceKindOrder orders resource kinds as the scheduler numbers them
// (storage to network); unknown kinds ("nvlink-out") come after, by name.
func compareResourceKinds(a, b string) int {
	rank := func(s string) int {
		for k := range event.NumResourceKinds {
			if event.ResourceKind(k).String() == s {
				return k
			}
		}
		return event.NumResourceKinds
	}
	return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(a, b))
}

// utilTable is the utilization figure's data: util[v][k] is the mean
// over queries of the median over repetitions of variant variants[v]'s
// utilization of resource kind kinds[k] (NaN: not recorded).
type utilTable struct {
	variants, kinds, queries []string
	util                     [][]float64
	// idle are the kinds dropped because every variant left them idle.
	idle []string
}

func utilizationTable(results []experiments.Result, query string) (utilTable, error) {
	var t utilTable
	var rs []experiments.Result
	for i := range results {
		if (query == "" || results[i].Query == query) && len(results[i].Util) > 0 {
			rs = append(rs, results[i])
		}
	}
	if len(rs) == 0 {
		if query != "" {
			return t, fmt.Errorf("plots: utilization: no results of query %s record utilization", query)
		}
		return t, fmt.Errorf("plots: utilization: no results record utilization")
	}
	t.variants, t.queries = variantsOf(rs), queriesOf(rs)
	kindSet := map[string]bool{}
	// Per configuration (variant, query, sweep point) and kind: the
	// repetitions' values.
	type cfgKey struct{ variant, query, sweep, kind string }
	reps := map[cfgKey][]float64{}
	for i := range rs {
		for k, u := range rs[i].Util {
			kindSet[k] = true
			ck := cfgKey{variant(&rs[i]), rs[i].Query, rs[i].Sweep, k}
			reps[ck] = append(reps[ck], u)
		}
	}
	var kinds []string
	for k := range kindSet {
		kinds = append(kinds, k)
	}
	slices.SortFunc(kinds, compareResourceKinds)
	vIdx := map[string]int{}
	for i, v := range t.variants {
		vIdx[v] = i
	}
	sum := make([]map[string]float64, len(t.variants))
	cnt := make([]map[string]int, len(t.variants))
	for i := range sum {
		sum[i], cnt[i] = map[string]float64{}, map[string]int{}
	}
	for ck, xs := range reps {
		v := vIdx[ck.variant]
		sum[v][ck.kind] += median(xs)
		cnt[v][ck.kind]++
	}
	for _, k := range kinds {
		col := make([]float64, len(t.variants))
		busy := false
		for v := range t.variants {
			col[v] = nan
			if cnt[v][k] > 0 {
				col[v] = sum[v][k] / float64(cnt[v][k])
				busy = busy || col[v] >= 0.0005
			}
		}
		if !busy {
			t.idle = append(t.idle, k)
			continue
		}
		t.kinds = append(t.kinds, k)
		for v := range t.variants {
			if len(t.util) <= v {
				t.util = append(t.util, nil)
			}
			t.util[v] = append(t.util[v], col[v])
		}
	}
	if len(t.kinds) == 0 {
		return t, fmt.Errorf("plots: utilization: every resource kind is idle in every result")
	}
	return t, nil
}

// Utilization draws grouped bars: per resource kind (nvme, h2d, gpu, ...)
// the mean utilization of each policy variant (policy and knob set), from
// Result.Util: the median over repetitions of each configuration, then
// the mean over queries (or of query alone if query is not ""). Kinds no
// variant used are left out (the caption lists them). results must come
// from one origin (backend, profile/machine, nodes, SF); DrawAll passes
// the results without a sweep point.
func Utilization(results []experiments.Result, query string) (*plot.Plot, error) {
	o, err := oneOrigin(results, "utilization")
	if err != nil {
		return nil, err
	}
	t, err := utilizationTable(results, query)
	if err != nil {
		return nil, err
	}
	what := "mean over " + countOf(len(t.queries), "query", "queries")
	if query != "" {
		what = "query " + query
	}
	caption := o.String() + "; median over repetitions, " + what
	if len(t.idle) > 0 {
		caption += "\nidle under every policy (not shown): " + strings.Join(t.idle, ", ")
	}
	p := newPlot("Utilization per resource kind", caption)
	p.Y.Label.Text = "utilization (% of run time busy)"
	p.X.Label.Text = "resource kind"
	n := len(t.variants)
	w := 0.8 / float64(n)
	b := &bars{}
	top := 100.0
	for v, name := range t.variants {
		for k := range t.kinds {
			u := t.util[v][k]
			if u != u { // NaN: not recorded
				continue
			}
			x0 := float64(k) - 0.4 + float64(v)*w
			b.rects = append(b.rects, rect{x0, x0 + w*0.92, 0, 100 * u, variantColor(name, t.variants)})
			top = max(top, 100*u*1.05)
		}
		p.Legend.Add(name, swatch{variantColor(name, t.variants)})
	}
	p.Add(gridLines{}, b)
	p.X.Tick.Marker = nominalTicks(t.kinds)
	p.X.Tick.Length = 0
	p.X.Min, p.X.Max = -0.6, float64(len(t.kinds))-0.4
	p.Y.Min, p.Y.Max = 0, top
	p.X.Padding = 0
	return p, nil
}
