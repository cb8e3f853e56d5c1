package calibrate

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gostachio/experiments"
)

// writeSpreadRun appends one validation's engine rows to dir: each case's
// runs are {0.8m, m, 1.5m} (median m, mean not m), plus a sim row that
// EngineSpread must ignore.
func writeSpreadRun(t *testing.T, dir, started string, q1, q6 float64) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		query, policy string
		m             float64
	}{{"q1", "serial", q1}, {"q6", "overlap", q6}} {
		for rep, s := range []float64{0.8 * c.m, c.m, 1.5 * c.m} {
			r := experiments.Result{Key: fmt.Sprintf("%s|%s|%d|%s", c.query, c.policy, rep, started), Backend: "engine", Profile: "p",
				Machine: "vm", Nodes: 1, SF: 1, Query: c.query, Policy: c.policy, Set: "chunk=16MiB", Rep: rep, Seconds: s, Started: started}
			if err := experiments.AppendResult(dir, r); err != nil {
				t.Fatal(err)
			}
		}
		sim := experiments.Result{Key: "sim " + c.query + started, Backend: "sim", Profile: "p", Nodes: 1, SF: 1, Query: c.query, Policy: c.policy,
			Set: "chunk=16MiB", Seconds: 9 * c.m, Started: started}
		if err := experiments.AppendResult(dir, sim); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEngineSpread predicts four validations (one folder holding two) by
// the others, worked by hand. Medians (q1, q6): A (1.0, 2.0), B@2
// (1.1, 2.3), B@3 (0.9, 2.4), C (1.0, 1.6). The others' medians:
//
//	A:   q1 1.0 → 0,      q6 2.3 → +15%:   median 7.5%,  max 15%
//	B@2: q1 1.0 → −9.09%, q6 2.0 → −13.0%: median 11.1%, max 13.0%
//	B@3: q1 1.0 → +11.1%, q6 2.0 → −16.7%: median 13.9%, max 16.7%
//	C:   q1 1.0 → 0,      q6 2.3 → +43.8%: median 21.9%, max 43.8%
//
// (A's run among its own predictors would make its q6 2.1, +5%.) Against
// 10.5% and 16%, only A meets both. Of the 12 ordered pairs the smallest
// median is C predicting A (q6 −20%: 10%), the largest B@3 predicting C
// (q1 −10%, q6 +50%: 30%); only C→A is within 10.5% on the median, and
// only A↔B@2 within 16% at most (13.0% and 15%).
func TestEngineSpread(t *testing.T) {
	root := t.TempDir()
	a, b, c := filepath.Join(root, "a"), filepath.Join(root, "b"), filepath.Join(root, "c")
	writeSpreadRun(t, a, "2026-11-26T01:00:00Z", 1.0, 2.0)
	writeSpreadRun(t, b, "2026-11-26T02:00:00Z", 1.1, 2.3)
	writeSpreadRun(t, b, "2026-11-26T03:00:00Z", 0.9, 2.4)
	writeSpreadRun(t, c, "2026-11-26T04:00:00Z", 1.0, 1.6)
	rep, err := EngineSpread(SpreadOptions{Dirs: []string{a, b, c}, MedianTarget: 0.105, MaxTarget: 0.16})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 4 || rep.Cases != 2 {
		t.Fatalf("%d runs, %d cases: want 4 runs (b holds two validations), 2 cases", len(rep.Runs), rep.Cases)
	}
	want := []struct {
		run         string
		median, max float64
	}{
		{a, 0.3 / 2.0 / 2, 0.3 / 2.0},
		{b + "@2026-11-26T02:00:00Z", (0.1/1.1 + 0.3/2.3) / 2, 0.3 / 2.3},
		{b + "@2026-11-26T03:00:00Z", (0.1/0.9 + 0.4/2.4) / 2, 0.4 / 2.4},
		{c, 0.7 / 1.6 / 2, 0.7 / 1.6},
	}
	for i, w := range want {
		got := rep.Runs[i]
		if got.Run != w.run || math.Abs(got.MedianAbs-w.median) > 1e-9 || math.Abs(got.MaxAbs-w.max) > 1e-9 || !strings.HasPrefix(got.MaxCase, "q6 overlap") {
			t.Errorf("run %d: %+v, want %s median %.4f max %.4f (q6 overlap)", i, got, w.run, w.median, w.max)
		}
	}
	if rep.Pairs != 12 || math.Abs(rep.PairMedian[0]-0.1) > 1e-9 || math.Abs(rep.PairMedian[2]-0.3) > 1e-9 || rep.PairsMedianMet != 1 || rep.PairsMaxMet != 2 {
		t.Errorf("pairs %d, medians %v, met %d/%d: want 12, least 10%%, largest 30%%, 1 and 2", rep.Pairs, rep.PairMedian, rep.PairsMedianMet, rep.PairsMaxMet)
	}
	var out bytes.Buffer
	if err := rep.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "met by the other runs' medians in 1 of 4 runs") {
		t.Errorf("text lacks the runs meeting the targets:\n%s", out.String())
	}
}

// TestEngineSpreadRejects: too few runs, folders without engine rows,
// missing folders, no common case and bad targets are errors naming
// what is wrong.
func TestEngineSpreadRejects(t *testing.T) {
	root := t.TempDir()
	a, b, c, d := filepath.Join(root, "a"), filepath.Join(root, "b"), filepath.Join(root, "c"), filepath.Join(root, "d")
	writeSpreadRun(t, a, "2026-11-26T01:00:00Z", 1.0, 2.0)
	writeSpreadRun(t, b, "2026-11-26T02:00:00Z", 1.1, 2.0)
	writeSpreadRun(t, c, "2026-11-26T03:00:00Z", 0.9, 2.4)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	simOnly := experiments.Result{Key: "s", Backend: "sim", Nodes: 1, SF: 1, Query: "q1", Policy: "serial", Seconds: 1}
	if err := experiments.AppendResult(d, simOnly); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(root, "other")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	q9 := experiments.Result{Key: "e", Backend: "engine", Nodes: 1, SF: 1, Query: "q9", Policy: "serial", Seconds: 1, Started: "x"}
	if err := experiments.AppendResult(other, q9); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dirs        []string
		median, max float64
		want        string
	}{
		{[]string{a, b}, 0.05, 0.15, "2 validations"},
		{[]string{a, b, d}, 0.05, 0.15, d + ": no engine rows"},
		{[]string{a, b, filepath.Join(root, "missing")}, 0.05, 0.15, "missing"},
		{[]string{a, b, other}, 0.05, 0.15, "share no case"},
		{[]string{a, b, c}, 0, 0.15, "targets 0"},
	} {
		if _, err := EngineSpread(SpreadOptions{Dirs: tc.dirs, MedianTarget: tc.median, MaxTarget: tc.max}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error naming %q", tc.dirs, err, tc.want)
		}
	}
}

// TestSameRanking counts the queries of two or more cases whose cases a
// and b order alike: q1's two cases keep their order, q6's swap, q9 has
// one case (not counted); a tie in b is no longer the same order.
func TestSameRanking(t *testing.T) {
	keys := []string{"q1 serial chunk=16MiB", "q1 overlap chunk=16MiB", "q6 serial chunk=16MiB", "q6 overlap chunk=16MiB", "q9 serial chunk=16MiB"}
	a := []float64{1, 2, 3, 4, 5}
	if same, n := sameRanking(keys, a, []float64{1.5, 2.5, 4, 3, 9}); same != 1 || n != 2 {
		t.Errorf("same %d of %d, want 1 of 2", same, n)
	}
	if same, n := sameRanking(keys, a, []float64{2, 2, 3, 4, 9}); same != 1 || n != 2 {
		t.Errorf("tie in q1, q6 kept: same %d of %d, want 1 of 2", same, n)
	}
	if same, _ := sameRanking(keys, a, a); same != 2 {
		t.Errorf("a against itself: %d, want 2", same)
	}
}
