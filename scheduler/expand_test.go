package scheduler

import (
	"testing"

	"gostachio/plan"
)

func TestEstimate(t *testing.T) {
	for _, tc := range []struct {
		name        string
		ops         []plan.Op
		rows, bytes int64
		wantR       int64
		wantB       int64
	}{
		{"filter keeps width", []plan.Op{{Kind: plan.OpScan, OutWidth: 16}, {Kind: plan.OpFilter, Selectivity: 0.25}}, 1000, 16000, 250, 4000},
		{"project changes width", []plan.Op{{Kind: plan.OpFilter, Selectivity: 0.5}, {Kind: plan.OpProject, OutWidth: 8}}, 1000, 16000, 500, 4000},
		{"agg capped by groups", []plan.Op{{Kind: plan.OpAggPartial, Groups: 4, OutWidth: 72}}, 1000, 8000, 4, 288},
		{"probe fan-out", []plan.Op{{Kind: plan.OpHashProbe, Selectivity: 2, OutWidth: 24}}, 10, 80, 20, 480},
		{"top-k", []plan.Op{{Kind: plan.OpSort}, {Kind: plan.OpTopK, Limit: 10}}, 1000, 8000, 10, 80},
		{"rounds up", []plan.Op{{Kind: plan.OpFilter, Selectivity: 0.019}}, 100, 2800, 2, 56},
		{"empty", []plan.Op{{Kind: plan.OpFilter, Selectivity: 0.5}}, 0, 0, 0, 0},
	} {
		r, b := Estimate(tc.ops, tc.rows, tc.bytes)
		if r != tc.wantR || b != tc.wantB {
			t.Errorf("%s: Estimate = %d rows %d bytes, want %d, %d", tc.name, r, b, tc.wantR, tc.wantB)
		}
	}
}

func TestForSpans(t *testing.T) {
	// Columns of 100, 50, 400, 80, 10 bytes back to back from 1000.
	ch := &plan.ChunkStats{Base: 1000, Bytes: []int64{100, 50, 400, 80, 10}}
	type span struct {
		first, n  int
		off, size int64
	}
	collect := func(cols []int, combine bool, gap int64) []span {
		var out []span
		forSpans(ch, cols, combine, gap, func(f, n int, off, size int64) { out = append(out, span{f, n, off, size}) })
		return out
	}
	eq := func(a, b []span) bool {
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if a[i] != b[i] {
				return false
			}
		}
		return true
	}
	for _, tc := range []struct {
		name    string
		cols    []int
		combine bool
		gap     int64
		want    []span
	}{
		{"per column", []int{0, 1, 3}, false, 0, []span{{0, 1, 1000, 100}, {1, 1, 1100, 50}, {3, 1, 1550, 80}}},
		{"adjacent merge", []int{0, 1, 3}, true, 0, []span{{0, 2, 1000, 150}, {3, 1, 1550, 80}}},
		{"gap read through", []int{0, 1, 3}, true, 400, []span{{0, 4, 1000, 630}}},
		{"gap too big", []int{0, 1, 3}, true, 399, []span{{0, 2, 1000, 150}, {3, 1, 1550, 80}}},
		{"tail run", []int{3, 4}, true, 0, []span{{3, 2, 1550, 90}}},
	} {
		if got := collect(tc.cols, tc.combine, tc.gap); !eq(got, tc.want) {
			t.Errorf("%s: spans %v, want %v", tc.name, got, tc.want)
		}
	}
}
