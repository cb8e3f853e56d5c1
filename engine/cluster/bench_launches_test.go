package cluster

import (
	"bytes"
	"context"
	"math"
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
