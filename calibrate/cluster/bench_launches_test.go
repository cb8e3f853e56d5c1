package cluster

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSummarizeLaunches pools two launches by hand: the median |error|
// over all cases, the cases and launches within the bound, and each
// query's median signed error.
func TestSummarizeLaunches(t *testing.T) {
	rows := []SimBenchRow{
		{Query: "q3", Error: 0.05, Launch: 1}, {Query: "q18", Error: -0.08, Launch: 1},
		{Query: "q3", Error: 0.25, Launch: 2}, {Query: "q18", Error: 0.02, Launch: 2},
		{Query: "q3", Error: -0.01, Launch: 3}, {Query: "q18", Error: 0.12, Launch: 3},
	}
	s := SummarizeLaunches(rows, 0.10)
	// |errors| 0.05 0.08 0.25 0.02 0.01 0.12: sorted 0.01 0.02 0.05 0.08
	// 0.12 0.25, median 0.065. Within 10%: four cases; only launch 1
	// has both. q3: 0.05 0.25 −0.01 → 0.05; q18: −0.08 0.02 0.12 → 0.02.
	if s.Launches != 3 || s.Cases != 6 || s.Within != 4 || s.AllWithin != 1 || math.Abs(s.MedianAbs-0.065) > 1e-12 {
		t.Errorf("summary %+v: want 3 launches, 6 cases, 4 within, 1 launch all within, median 0.065", s)
	}
	if strings.Join(s.Queries, ",") != "q3,q18" || len(s.PerQuery) != 2 || math.Abs(s.PerQuery[0]-0.05) > 1e-12 || math.Abs(s.PerQuery[1]-0.02) > 1e-12 {
		t.Errorf("per query %v %v, want q3 +0.05, q18 +0.02", s.Queries, s.PerQuery)
	}
	var out bytes.Buffer
	printLaunchSummary(&out, s)
	for _, want := range []string{"over 3 launches", "median |error| 6.5%", "4 of 6 cases within 10%", "in 1 of 3 launches", "q3 +5.0%", "q18 +2.0%"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary line %q lacks %q", out.String(), want)
		}
	}
	// One launch (Launch 0) counts as one.
	if one := SummarizeLaunches(rows[:2], 0.10); one.Launches != 1 || one.AllWithin != 1 {
		t.Errorf("one launch: %+v", one)
	}
	if empty := SummarizeLaunches(nil, 0.10); empty.Cases != 0 || empty.Launches != 0 {
		t.Errorf("no rows: %+v", empty)
	}
}

// TestSummarizeFullLink: rows priced also at the link's full rate get a
// second summary of those prices against the same engine medians, worked
// by hand; rows without such prices get none.
func TestSummarizeFullLink(t *testing.T) {
	runs := []float64{0.9, 1, 1.2} // median 1
	rows := []SimBenchRow{
		simBenchRow("q3", runs, 1.05, 1), simBenchRow("q5", runs, 0.95, 1),
		simBenchRow("q3", runs, 1.02, 1), simBenchRow("q5", runs, 0.99, 1),
	}
	for i, full := range []float64{0.80, 0.70, 0.85, 0.95} {
		rows[i].SimFullLink, rows[i].Launch = full, 1+i/2
	}
	s := SummarizeLaunches(rows, 0.10)
	f := s.FullLink
	// Full-rate errors −0.20 −0.30 −0.15 −0.05: |sorted| 0.05 0.15 0.20
	// 0.30, median 0.175; one within 10%; no launch all within; q3
	// median(−0.20, −0.15) = −0.175, q5 median(−0.30, −0.05) = −0.175.
	if f == nil || f.Within != 1 || f.AllWithin != 0 || math.Abs(f.MedianAbs-0.175) > 1e-12 || math.Abs(f.PerQuery[0]+0.175) > 1e-12 || math.Abs(f.PerQuery[1]+0.175) > 1e-12 {
		t.Fatalf("full-link summary %+v", f)
	}
	if s.Within != 4 || s.AllWithin != 2 {
		t.Errorf("the fabric-priced summary changed: %+v", s)
	}
	var out bytes.Buffer
	printLaunchSummary(&out, s)
	if !strings.Contains(out.String(), "full payload rate instead (no fabric efficiency): median |error| 17.5%, 1 of 4 cases") {
		t.Errorf("summary lacks the full-link line:\n%s", out.String())
	}
	for i := range rows {
		rows[i].SimFullLink = 0
	}
	if s := SummarizeLaunches(rows, 0.10); s.FullLink != nil {
		t.Errorf("rows without full-link prices: %+v", s.FullLink)
	}
}

// TestSummarizeOwnColocation: rows priced also at their launch's own
// co-location (pooled launches) get that summary too, and its line.
func TestSummarizeOwnColocation(t *testing.T) {
	runs := []float64{0.9, 1, 1.2} // median 1
	rows := []SimBenchRow{simBenchRow("q3", runs, 1.05, 1), simBenchRow("q5", runs, 0.95, 1)}
	rows[0].SimOwnColocation, rows[1].SimOwnColocation = 1.30, 1.08 // +30%, +8%
	s := SummarizeLaunches(rows, 0.10)
	o := s.OwnColocation
	if o == nil || o.Within != 1 || math.Abs(o.MedianAbs-0.19) > 1e-12 || s.FullLink != nil || s.Within != 2 {
		t.Fatalf("own co-location summary %+v (pooled %+v)", o, s)
	}
	var out bytes.Buffer
	printLaunchSummary(&out, s)
	if !strings.Contains(out.String(), "own co-location instead (not pooled): median |error| 19.0%, 1 of 2 cases") {
		t.Errorf("summary lacks the own co-location line:\n%s", out.String())
	}
}

// TestSummarizeRescales: rows of launches run with --rescale-cpu and
// --rescale-disk carry the prices without either and with each alone,
// and each gets its summary and line against the same engine medians.
func TestSummarizeRescales(t *testing.T) {
	runs := []float64{0.9, 1, 1.2} // median 1
	rows := []SimBenchRow{simBenchRow("q3", runs, 1.05, 1), simBenchRow("q5", runs, 0.95, 1)}
	rows[0].SimUnscaled, rows[1].SimUnscaled = 0.80, 0.82 // −20%, −18%
	rows[0].SimCPUOnly, rows[1].SimCPUOnly = 1.12, 1.04   // +12%, +4%
	rows[0].SimDiskOnly, rows[1].SimDiskOnly = 0.91, 0.97 // −9%, −3%
	s := SummarizeLaunches(rows, 0.10)
	for _, c := range []struct {
		what   string
		got    *LaunchSummary
		median float64
		within int
		line   string
	}{
		{"unscaled", s.Unscaled, 0.19, 0, "without the launches' rescales: median |error| 19.0%, 0 of 2 cases"},
		{"CPU alone", s.CPUOnly, 0.08, 1, "with the CPU rescale alone: median |error| 8.0%, 1 of 2 cases"},
		{"disk alone", s.DiskOnly, 0.06, 2, "with the disk rescale alone: median |error| 6.0%, 2 of 2 cases"},
	} {
		if c.got == nil || c.got.Within != c.within || math.Abs(c.got.MedianAbs-c.median) > 1e-12 {
			t.Errorf("%s: summary %+v, want median %v and %d within", c.what, c.got, c.median, c.within)
		}
		var out bytes.Buffer
		printLaunchSummary(&out, s)
		if !strings.Contains(out.String(), c.line) {
			t.Errorf("%s: summary lacks %q:\n%s", c.what, c.line, out.String())
		}
	}
	if s.Within != 2 || s.FullLink != nil || s.OwnColocation != nil {
		t.Errorf("the rescaled summary changed: %+v", s)
	}
}

// TestLaunchSpread predicts four launches' engine medians by the other
// launches', worked by hand. Each case's runs are {0.9m, m, 1.2m}, so
// the median of the runs is m (their mean would not be).
//
//	q3  medians 1.00 1.02 0.98 1.50: others' medians 1.02 1.00 1.02 1.00
//	    → +2.0%, −1.96%, +4.08%, −33.3%
//	q18 medians 2.00 2.60 2.10 2.05: others' medians 2.10 2.05 2.05 2.10
//	    → +5.0%, −21.2%, −2.38%, +2.44%
//
// Within 10%: 6 of 8; launches 1 and 3 have both; the median |error| is
// (2.439% + 4.082%)/2.
func TestLaunchSpread(t *testing.T) {
	runs := func(m float64) []float64 { return []float64{0.9 * m, m, 1.2 * m} }
	var rows []SimBenchRow
	q3 := []float64{1.00, 1.02, 0.98, 1.50}
	q18 := []float64{2.00, 2.60, 2.10, 2.05}
	for k := range 4 {
		rows = append(rows, SimBenchRow{Query: "q3", Engine: runs(q3[k]), Launch: k + 1}, SimBenchRow{Query: "q18", Engine: runs(q18[k]), Launch: k + 1})
	}
	sp := SummarizeLaunches(rows, 0.10).Spread
	want := (0.05/2.05 + 0.04/0.98) / 2
	if sp.Cases != 8 || sp.Within != 6 || sp.AllWithin != 2 || math.Abs(sp.MedianAbs-want) > 1e-9 {
		t.Errorf("spread %+v: want 8 cases, 6 within, 2 launches all within, median %.6f", sp, want)
	}
	var out bytes.Buffer
	printLaunchSummary(&out, SummarizeLaunches(rows, 0.10))
	if !strings.Contains(out.String(), "within 10% in 6 of 8 cases, every query in 2 of 4 launches (median |error| 3.3%)") {
		t.Errorf("summary %q lacks the spread line", out.String())
	}
	// Two launches leave one other launch per case: no spread.
	if two := SummarizeLaunches(rows[:4], 0.10); two.Spread.Cases != 0 {
		t.Errorf("two launches: spread %+v, want none", two.Spread)
	}
}

// TestBenchSimLaunchesRejects: bad counts and bounds fail before anything
// runs.
func TestBenchSimLaunchesRejects(t *testing.T) {
	for _, c := range []struct {
		n      int
		within float64
		want   string
	}{{0, 0.1, "--launches 0"}, {-2, 0.1, "--launches -2"}, {2, 0, "--within 0"}, {2, math.NaN(), "--within NaN"}} {
		_, _, err := BenchSimLaunches(context.Background(), SimBenchOptions{}, c.n, c.within, &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("launches %d within %v: %v, want an error naming %s", c.n, c.within, err, c.want)
		}
	}
}

// TestPoolLaunches pools two files of --json rows: one single launch
// (Launch 0) and one of two launches, renumbered 1, 2 and 3 in file
// order; malformed files fail naming themselves.
func TestPoolLaunches(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	one := write("one.json", `[{"query":"q3","engine_s":[1.0],"error":0.05},{"query":"q9","engine_s":[2.0],"error":-0.02}]`)
	two := write("two.json", `[{"query":"q3","engine_s":[1.1],"error":0.30,"launch":1},{"query":"q9","engine_s":[2.2],"error":0.01,"launch":1},
		{"query":"q3","engine_s":[0.9],"error":-0.04,"launch":2},{"query":"q9","engine_s":[1.8],"error":0.12,"launch":2}]`)
	rows, err := LoadLaunches([]string{one, two})
	if err != nil {
		t.Fatal(err)
	}
	var launches []int
	for _, r := range rows {
		launches = append(launches, r.Launch)
	}
	if fmt.Sprint(launches) != "[1 1 2 2 3 3]" {
		t.Errorf("launches %v, want [1 1 2 2 3 3]", launches)
	}
	var out bytes.Buffer
	s, err := PoolLaunches([]string{one, two}, 0.10, &out)
	if err != nil {
		t.Fatal(err)
	}
	// |errors| 0.05 0.02 0.30 0.01 0.04 0.12 → median (0.04+0.05)/2;
	// launch 1 alone has both within. Spread: q3 1.0 1.1 0.9 → others'
	// medians 1.0, 0.95, 1.05 → 0, −13.6%, +16.7%; q9 likewise (×2).
	if s.Launches != 3 || s.Within != 4 || s.AllWithin != 1 || math.Abs(s.MedianAbs-0.045) > 1e-12 {
		t.Errorf("pooled %+v: want 3 launches, 4 within, 1 all within, median 0.045", s)
	}
	if s.Spread.Cases != 6 || s.Spread.Within != 2 || s.Spread.AllWithin != 1 {
		t.Errorf("spread %+v: want 6 cases, 2 within, launch 1 all within", s.Spread)
	}
	if !strings.Contains(out.String(), "over 3 launches") || !strings.Contains(out.String(), "launch-to-launch spread") {
		t.Errorf("output %q", out.String())
	}
	for _, c := range []struct {
		files []string
		want  string
	}{
		{nil, "no files"},
		{[]string{filepath.Join(dir, "missing.json")}, "missing.json"},
		{[]string{write("bad.json", `{"query":"q3"}`)}, "bad.json: not bench-sim --json rows"},
		{[]string{write("empty.json", `[]`)}, "empty.json: no rows"},
		{[]string{one, write("noruns.json", `[{"query":"q3","error":0.1}]`)}, "noruns.json: row 1 has no query or no timed runs"},
		{[]string{write("g1.json", `[{"query":"q3","engine_s":[1],"link":"1Gbit","nodes":4,"devices":1}]`), one,
			write("m100.json", `[{"query":"q3","engine_s":[1],"link":"100Mbit","nodes":4,"devices":1}]`)}, "g1.json (--link 1Gbit, 4 nodes x 1 devices) and " + filepath.Join(dir, "m100.json") + " (--link 100Mbit"},
	} {
		if _, err := PoolLaunches(c.files, 0.10, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("files %v: %v, want an error naming %q", c.files, err, c.want)
		}
	}
	// The same configuration in two files (and a file from before it was
	// recorded) pools.
	same := []string{write("a1.json", `[{"query":"q3","engine_s":[1],"link":"1Gbit","nodes":4,"devices":1}]`), one,
		write("a2.json", `[{"query":"q3","engine_s":[1.1],"link":"1Gbit","nodes":4,"devices":1}]`)}
	if rows, err := LoadLaunches(same); err != nil || len(rows) != 4 {
		t.Errorf("one configuration: %d rows, %v; want 4 rows", len(rows), err)
	}
	if _, err := PoolLaunches([]string{one}, 0, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "--within 0") {
		t.Errorf("--within 0: %v", err)
	}
}
