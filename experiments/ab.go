package experiments

import (
	"cmp"
	"encoding/json"
	"fmt"
	"gostachio/internal/units"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"gostachio/internal/stats"
)

// ABConf is the confidence level of AB's intervals; ABSeed seeds its
// bootstrap, so that the same results always print the same intervals.
const (
	ABConf = 0.95
	ABSeed = 1
)

// Warnings AB attaches to rows (Hoefler & Belli's rules for reporting:
// enough repetitions for the interval, and no claim of a difference
// where the intervals overlap).
const (
	WarnFewReps = "n < 5: too few repetitions for a 95% CI"
	WarnOverlap = "CIs of A and B overlap: no significant difference"
	WarnGeoOne  = "CI of the geometric mean contains 1: no significant difference"
	// WarnRange: with 5 runs the best distribution-free interval of a
	// median, [min, max], covers only 93.75%.
	WarnRange = "n = 5: per-policy intervals are [min, max], 93.75% coverage"
)

// ABRow compares A and B on one query at one point (or, with Query
// "geomean", over the point's queries).
type ABRow struct {
	// Point is the sweep point ("chunk=8MiB,depth=4"), prefixed with the
	// backend, profile, nodes or sf where those differ among the results
	// outside the sweep; "" for a single point.
	Point string `json:"point"`
	Query string `json:"query"`
	// NA and NB count the runs; MedianA/B are the median times in
	// seconds with their median-rank intervals (MedianRankCI); for the
	// geomean row the sums of runs and the geometric means of the
	// medians.
	NA      int            `json:"n_a"`
	NB      int            `json:"n_b"`
	MedianA float64        `json:"median_a_s"`
	MedianB float64        `json:"median_b_s"`
	CIA     MedianInterval `json:"ci_a"`
	CIB     MedianInterval `json:"ci_b"`
	// Speedup is MedianA / MedianB (> 1: B is faster) with its bootstrap
	// interval [Lo, Hi] (MedianSpeedupCI; GeoMeanSpeedupCI for geomean).
	Speedup  float64  `json:"speedup"`
	Lo       float64  `json:"speedup_lo"`
	Hi       float64  `json:"speedup_hi"`
	Warnings []string `json:"warnings,omitempty"`
}

// ABReport is what AB prints as JSON.
type ABReport struct {
	A      string  `json:"a"`
	B      string  `json:"b"`
	Conf   float64 `json:"confidence"`
	Method string  `json:"method"`
	Rows   []ABRow `json:"rows"`
	// Unmatched lists the groups (point and query) with runs of only
	// one of A and B, which cannot be compared.
	Unmatched []string `json:"unmatched,omitempty"`
}

const abMethod = "speedup of B = median time of A / median time of B (> 1: B is faster);\n" +
	"95% CIs: speedup: percentile bootstrap of the ratio of medians (10000 resamples); " +
	"medians: median-rank interval (exact binomial)"

// abGroup is what runs are compared within: everything but the policy,
// its knobs and the repetition.
type abGroup struct {
	backend, profile string
	nodes            int
	sf               float64
	sweep, query     string
}

// AB compares policy labels a and b (Result.Policy) in results: per query
// and sweep point, the runs and median time of each, the speedup of b over
// a (median a / median b) with its 95% interval, and warnings where a side
// has fewer than 5 runs or the two medians' intervals overlap; then per
// point the geometric mean of the speedups over its queries. It writes a
// table, or with jsonOut an ABReport, to w. Results of neither policy are
// ignored; no group with runs of both is an error.
func AB(results []Result, a, b string, w io.Writer, jsonOut bool) error {
	if a == "" || b == "" || a == b {
		return fmt.Errorf("experiments: ab: want two different policies (--a %q, --b %q)", a, b)
	}
	times := map[abGroup][2][]float64{}
	labels := map[string]bool{}
	for _, r := range results {
		labels[r.Policy] = true
		side := -1
		switch r.Policy {
		case a:
			side = 0
		case b:
			side = 1
		}
		if side < 0 {
			continue
		}
		g := abGroup{r.Backend, r.Profile, r.Nodes, r.SF, r.Sweep, r.Query}
		t := times[g]
		t[side] = append(t[side], r.Seconds)
		times[g] = t
	}
	for _, p := range []string{a, b} {
		if !labels[p] {
			have := make([]string, 0, len(labels))
			for l := range labels {
				have = append(have, l)
			}
			slices.Sort(have)
			return fmt.Errorf("experiments: ab: no runs of policy %q (the results have: %s)", p, strings.Join(have, ", "))
		}
	}
	groups := make([]abGroup, 0, len(times))
	for g := range times {
		groups = append(groups, g)
	}
	// What varies outside the sweep names the point too.
	vary := func(f func(abGroup) string) bool {
		for _, g := range groups {
			if f(g) != f(groups[0]) {
				return true
			}
		}
		return false
	}
	inSweep := func(g abGroup, axis string) bool { return strings.Contains(","+g.sweep, ","+axis+"=") }
	vBackend := vary(func(g abGroup) string { return g.backend })
	vProfile := vary(func(g abGroup) string { return g.profile })
	vNodes := vary(func(g abGroup) string { return strconv.Itoa(g.nodes) })
	vSF := vary(func(g abGroup) string { return strconv.FormatFloat(g.sf, 'g', -1, 64) })
	point := func(g abGroup) string {
		var parts []string
		if vBackend {
			parts = append(parts, "backend="+g.backend)
		}
		if vProfile {
			parts = append(parts, "profile="+g.profile)
		}
		if vNodes && !inSweep(g, "nodes") {
			parts = append(parts, "nodes="+strconv.Itoa(g.nodes))
		}
		if vSF && !inSweep(g, "sf") {
			parts = append(parts, "sf="+strconv.FormatFloat(g.sf, 'g', -1, 64))
		}
		if g.sweep != "" {
			parts = append(parts, g.sweep)
		}
		return strings.Join(parts, ",")
	}
	slices.SortFunc(groups, func(x, y abGroup) int {
		if c := naturalCompare(point(x), point(y)); c != 0 {
			return c
		}
		return naturalCompare(x.query, y.query)
	})

	rep := ABReport{A: a, B: b, Conf: ABConf, Method: abMethod}
	rng := rand.New(rand.NewPCG(ABSeed, 0))
	flush := func(pt string, geo [][2][]float64, na, nb int, medA, medB []float64) {
		if len(geo) < 2 {
			return
		}
		gm, lo, hi := GeoMeanSpeedupCI(geo, ABConf, rng)
		row := ABRow{Point: pt, Query: "geomean", NA: na, NB: nb, MedianA: stats.GeoMean(medA), MedianB: stats.GeoMean(medB),
			Speedup: gm, Lo: lo, Hi: hi}
		if lo <= 1 && 1 <= hi {
			row.Warnings = append(row.Warnings, WarnGeoOne)
		}
		rep.Rows = append(rep.Rows, row)
	}
	var (
		curPt      string
		geo        [][2][]float64
		na, nb     int
		medA, medB []float64
		started    bool
	)
	for _, g := range groups {
		t := times[g]
		pt := point(g)
		if started && pt != curPt {
			flush(curPt, geo, na, nb, medA, medB)
			geo, na, nb, medA, medB = nil, 0, 0, nil, nil
		}
		started, curPt = true, pt
		if len(t[0]) == 0 || len(t[1]) == 0 {
			name := g.query
			if pt != "" {
				name = pt + " " + g.query
			}
			rep.Unmatched = append(rep.Unmatched, name)
			continue
		}
		row := ABRow{Point: pt, Query: g.query, NA: len(t[0]), NB: len(t[1]),
			CIA: MedianRankCI(t[0], ABConf), CIB: MedianRankCI(t[1], ABConf)}
		row.MedianA, row.MedianB = row.CIA.Median, row.CIB.Median
		row.Speedup, row.Lo, row.Hi = MedianSpeedupCI(t[0], t[1], ABConf, rng)
		if row.NA < 5 || row.NB < 5 {
			row.Warnings = append(row.Warnings, WarnFewReps)
		} else if !row.CIA.OK || !row.CIB.OK {
			row.Warnings = append(row.Warnings, WarnRange)
		}
		if row.CIA.Lo <= row.CIB.Hi && row.CIB.Lo <= row.CIA.Hi {
			row.Warnings = append(row.Warnings, WarnOverlap)
		}
		rep.Rows = append(rep.Rows, row)
		geo = append(geo, t)
		na, nb = na+row.NA, nb+row.NB
		medA, medB = append(medA, row.MedianA), append(medB, row.MedianB)
	}
	flush(curPt, geo, na, nb, medA, medB)
	if len(rep.Rows) == 0 {
		return fmt.Errorf("experiments: ab: no query has runs of both %q and %q", a, b)
	}
	if jsonOut {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return writeAB(w, &rep)
}

// writeAB prints rep as a table, warnings as footnote marks.
func writeAB(w io.Writer, rep *ABReport) error {
	fmt.Fprintf(w, "A = %s, B = %s\n%s\n\n", rep.A, rep.B, abMethod)
	notes := []string{}
	mark := func(ws []string) string {
		var m []string
		for _, x := range ws {
			i := slices.Index(notes, x)
			if i < 0 {
				notes = append(notes, x)
				i = len(notes) - 1
			}
			m = append(m, strconv.Itoa(i+1))
		}
		if len(m) == 0 {
			return ""
		}
		return "[" + strings.Join(m, ",") + "]"
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	hasPoint := slices.ContainsFunc(rep.Rows, func(r ABRow) bool { return r.Point != "" })
	if hasPoint {
		fmt.Fprint(tw, "point\t")
	}
	fmt.Fprint(tw, "query\tn A\tmedian A [95% CI]\tn B\tmedian B [95% CI]\tspeedup of B [95% CI]\t\t\n")
	for _, r := range rep.Rows {
		if hasPoint {
			fmt.Fprintf(tw, "%s\t", r.Point)
		}
		ciA, ciB := "", ""
		if r.Query != "geomean" {
			ciA = fmt.Sprintf(" [%s, %s]", fmtSec(r.CIA.Lo), fmtSec(r.CIA.Hi))
			ciB = fmt.Sprintf(" [%s, %s]", fmtSec(r.CIB.Lo), fmtSec(r.CIB.Hi))
		}
		fmt.Fprintf(tw, "%s\t%d\t%s%s\t%d\t%s%s\t%.3fx [%.3f, %.3f]\t%s\t\n", r.Query, r.NA, fmtSec(r.MedianA), ciA,
			r.NB, fmtSec(r.MedianB), ciB, r.Speedup, r.Lo, r.Hi, mark(r.Warnings))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for i, n := range notes {
		fmt.Fprintf(w, "[%d] %s\n", i+1, n)
	}
	if len(rep.Unmatched) > 0 {
		fmt.Fprintf(w, "not compared (runs of only one policy): %s\n", strings.Join(rep.Unmatched, "; "))
	}
	return nil
}

// fmtSec formats seconds with 3 decimals and a unit.
func fmtSec(s float64) string { return units.FormatSeconds(s, 3) }

// naturalCompare orders strings with their digit runs compared as numbers
// ("q2" < "q10", "chunk=8MiB" < "chunk=16MiB").
func naturalCompare(x, y string) int {
	for x != "" && y != "" {
		dx, dy := isDigit(x[0]), isDigit(y[0])
		if dx && dy {
			i, j := digits(x), digits(y)
			nx, ny := strings.TrimLeft(x[:i], "0"), strings.TrimLeft(y[:j], "0")
			if c := cmp.Compare(len(nx), len(ny)); c != 0 {
				return c
			}
			if c := strings.Compare(nx, ny); c != 0 {
				return c
			}
			x, y = x[i:], y[j:]
			continue
		}
		if x[0] != y[0] {
			return cmp.Compare(x[0], y[0])
		}
		x, y = x[1:], y[1:]
	}
	return cmp.Compare(len(x), len(y))
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func digits(s string) int {
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}
