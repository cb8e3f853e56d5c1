package experiments

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// abResults makes results of policies serial and overlap: per query, n
// runs of each with times drawn around the given medians.
func abResults(rng *rand.Rand, sweep string, rows map[string][4]float64) []Result {
	var out []Result
	for q, v := range rows {
		medA, medB, nA, nB := v[0], v[1], int(v[2]), int(v[3])
		for i := range nA {
			out = append(out, Result{Backend: "sim", Profile: "dgx-a100", Nodes: 1, SF: 1, Query: q, Policy: "serial",
				Sweep: sweep, Rep: i, Seconds: medA * math.Exp(0.02*rng.NormFloat64())})
		}
		for i := range nB {
			out = append(out, Result{Backend: "sim", Profile: "dgx-a100", Nodes: 1, SF: 1, Query: q, Policy: "overlap",
				Sweep: sweep, Rep: i, Seconds: medB * math.Exp(0.02*rng.NormFloat64())})
		}
	}
	return out
}

func TestAB(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	rs := abResults(rng, "", map[string][4]float64{
		"q1":  {2, 1, 10, 10}, // clearly faster
		"q2":  {1, 1, 8, 8},   // no difference
		"q10": {3, 1.5, 3, 3}, // too few runs
		"q3":  {1, 1, 4, 0},   // only A
		"q4":  {1, 0.9, 5, 6}, // n = 5 on one side
	})
	rs = append(rs, Result{Query: "q1", Policy: "pipeline", Seconds: 9, Backend: "sim", Profile: "dgx-a100", Nodes: 1, SF: 1})
	var out bytes.Buffer
	if err := AB(rs, "serial", "overlap", &out, true); err != nil {
		t.Fatal(err)
	}
	var rep ABReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	var qs []string
	row := map[string]ABRow{}
	for _, r := range rep.Rows {
		qs = append(qs, r.Query)
		row[r.Query] = r
	}
	if !slices.Equal(qs, []string{"q1", "q2", "q4", "q10", "geomean"}) {
		t.Fatalf("rows %v", qs)
	}
	if !slices.Equal(rep.Unmatched, []string{"q3"}) || rep.A != "serial" || rep.B != "overlap" || rep.Conf != 0.95 {
		t.Errorf("report %+v", rep)
	}
	// Independent recomputation of one row.
	var a, b []float64
	for _, r := range rs {
		if r.Query == "q1" && r.Policy == "serial" {
			a = append(a, r.Seconds)
		} else if r.Query == "q1" && r.Policy == "overlap" {
			b = append(b, r.Seconds)
		}
	}
	q1 := row["q1"]
	if q1.NA != 10 || q1.NB != 10 || q1.MedianA != Median(a) || q1.MedianB != Median(b) || q1.Speedup != Median(a)/Median(b) ||
		!(q1.Lo < q1.Speedup && q1.Speedup < q1.Hi) || q1.Lo < 1.8 || q1.Hi > 2.2 || len(q1.Warnings) != 0 {
		t.Errorf("q1 %+v", q1)
	}
	if w := row["q2"].Warnings; !slices.Equal(w, []string{WarnOverlap}) {
		t.Errorf("q2 (same distribution) warnings %v", w)
	}
	if w := row["q10"].Warnings; !slices.Contains(w, WarnFewReps) {
		t.Errorf("q10 (3 runs) warnings %v", w)
	}
	if w := row["q4"].Warnings; !slices.Contains(w, WarnRange) || slices.Contains(w, WarnFewReps) {
		t.Errorf("q4 (5 and 6 runs) warnings %v", w)
	}
	g := row["geomean"]
	want := math.Pow(row["q1"].Speedup*row["q2"].Speedup*row["q4"].Speedup*row["q10"].Speedup, 0.25)
	if math.Abs(g.Speedup-want) > 1e-9 || g.NA != 10+8+5+3 || !(g.Lo < g.Speedup && g.Speedup < g.Hi) {
		t.Errorf("geomean %+v, want speedup %v", g, want)
	}

	// The text table: same numbers, warnings as footnotes; reproducible.
	var txt, txt2 bytes.Buffer
	if err := AB(rs, "serial", "overlap", &txt, false); err != nil {
		t.Fatal(err)
	}
	AB(rs, "serial", "overlap", &txt2, false)
	s := txt.String()
	for _, want := range []string{"A = serial, B = overlap", "geomean", WarnOverlap, WarnFewReps, "not compared (runs of only one policy): q3"} {
		if !strings.Contains(s, want) {
			t.Errorf("text lacks %q:\n%s", want, s)
		}
	}
	if s != txt2.String() {
		t.Error("two runs of AB print different tables (bootstrap not seeded)")
	}

	for _, bad := range [][2]string{{"serial", "serial"}, {"serial", "turbo"}, {"", "overlap"}} {
		if err := AB(rs, bad[0], bad[1], &out, false); err == nil {
			t.Errorf("AB(%q, %q) succeeded", bad[0], bad[1])
		}
	}
}

// TestABSweepPoints: rows per sweep point, each point with its geomean.
func TestABSweepPoints(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	var rs []Result
	rs = append(rs, abResults(rng, "chunk=16MiB", map[string][4]float64{"q1": {2, 1, 6, 6}, "q6": {2, 1, 6, 6}})...)
	rs = append(rs, abResults(rng, "chunk=8MiB", map[string][4]float64{"q1": {4, 1, 6, 6}, "q6": {4, 1, 6, 6}})...)
	// Another cluster size outside the sweep names the point too.
	for _, r := range abResults(rng, "chunk=8MiB", map[string][4]float64{"q1": {1, 1, 6, 6}}) {
		r.Nodes = 4
		rs = append(rs, r)
	}
	var out bytes.Buffer
	if err := AB(rs, "serial", "overlap", &out, true); err != nil {
		t.Fatal(err)
	}
	var rep ABReport
	json.Unmarshal(out.Bytes(), &rep)
	var got []string
	for _, r := range rep.Rows {
		got = append(got, r.Point+" "+r.Query)
	}
	want := []string{"nodes=1,chunk=8MiB q1", "nodes=1,chunk=8MiB q6", "nodes=1,chunk=8MiB geomean",
		"nodes=1,chunk=16MiB q1", "nodes=1,chunk=16MiB q6", "nodes=1,chunk=16MiB geomean", "nodes=4,chunk=8MiB q1"}
	if !slices.Equal(got, want) {
		t.Errorf("rows\n%v\nwant\n%v", got, want)
	}
	if s := rep.Rows[2].Speedup; math.Abs(s-4) > 0.1 {
		t.Errorf("chunk=8MiB geomean %v, want about 4", s)
	}
}
