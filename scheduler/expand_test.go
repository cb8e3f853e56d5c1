package scheduler

import (
	"context"
	"strings"
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

func TestFoldEstimate(t *testing.T) {
	for _, tc := range []struct {
		name        string
		agg         plan.Op
		rows, bytes int64
		wantR       int64
		wantB       int64
	}{
		{"fewer rows than groups", plan.Op{Kind: plan.OpAggPartial, Groups: 11_620_000, OutWidth: 24}, 238_000, 238_000 * 24, 238_000, 238_000 * 24},
		{"capped by groups", plan.Op{Kind: plan.OpAggPartial, Groups: 4, OutWidth: 72}, 40, 2880, 4, 288},
		{"unknown groups", plan.Op{Kind: plan.OpAggPartial, OutWidth: 8}, 10, 80, 10, 80},
		{"unknown width scales bytes", plan.Op{Kind: plan.OpAggPartial, Groups: 5}, 10, 100, 5, 50},
		{"nothing aggregated", plan.Op{Kind: plan.OpAggPartial, Groups: 5, OutWidth: 8}, 0, 0, 0, 0},
	} {
		r, b := foldEstimate(&tc.agg, tc.rows, tc.bytes)
		if r != tc.wantR || b != tc.wantB {
			t.Errorf("%s: foldEstimate = %d rows %d bytes, want %d, %d", tc.name, r, b, tc.wantR, tc.wantB)
		}
	}
}

// TestPartialAggOutputCappedByRows: a partial aggregate with far more
// groups (1,000,000) than rows reaching it must ship only what each worker
// aggregated. Two nodes x one device; a table of 4 chunks x 1,000 rows of
// one 8-byte column, one chunk per unit, dealt round robin: each worker
// scans 2 chunks = 2,000 rows, the filter keeps half = 1,000 rows, so its
// partial state is 1,000 groups x 24 B = 24,000 B (not 1e6 x 24 = 24 MB),
// and worker 1 gathers 24,000 B / 1,000 rows to worker 0.
func TestPartialAggOutputCappedByRows(t *testing.T) {
	tbl := plan.TableStats{Name: "t", Columns: []string{"a"}}
	for i := 0; i < 4; i++ {
		tbl.Chunks = append(tbl.Chunks, plan.ChunkStats{Rows: 1000, Base: int64(i) * 8000, Bytes: []int64{8000}})
	}
	b := plan.NewBuilder("agg", []plan.TableStats{tbl})
	p0 := b.Scan("t", "a").Filter("a odd", 0.5).AggPartial("count(*)", 1_000_000, 24, "a").Gather()
	b.From(p0).AggFinal("count", 1_000_000, 24, "a").Result()
	p, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	pol, err := NewPolicy("overlap", "chunk=0")
	if err != nil {
		t.Fatal(err)
	}
	topo := Topology{Nodes: 2, Devices: 1, SSDs: 1, NICs: 1, DeviceMem: 1 << 30, PinnedMem: 1 << 30}
	tb := newTestBackend(topo, "fifo", 0)
	var sends []Task
	tb.onStart = func(x *Task) {
		if x.Kind == TaskSend {
			sends = append(sends, *x)
		}
	}
	res, err := Run(context.Background(), p, pol, tb, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(sends) != 1 {
		t.Fatalf("%d sends, want 1 (worker 1 gathers to worker 0)", len(sends))
	}
	if s := sends[0]; s.Node != 1 || s.Peer.Node != 0 || s.Bytes != 24_000 || s.Rows != 1_000 {
		t.Errorf("send node %d -> %d: %d bytes, %d rows; want 1 -> 0, 24000 bytes, 1000 rows", s.Node, s.Peer.Node, s.Bytes, s.Rows)
	}
	// Worker 0's final aggregate holds both partial states: 2,000 rows.
	if res.ResultRows != 2_000 || res.ResultBytes != 48_000 {
		t.Errorf("result %d rows %d bytes, want 2000 rows 48000 bytes", res.ResultRows, res.ResultBytes)
	}
	// No device ever reserves a 24 MB state: the largest footprint is the
	// final pipeline's input + output on device 0.
	if res.PeakDevice >= 1_000_000 {
		t.Errorf("peak device %d bytes: a state sized from the group count was reserved", res.PeakDevice)
	}
}

// TestRangeGroups: a partial aggregate over chunks stored in key order
// finds Groups times the share of the key range its chunks span; chunks
// that each span the whole range, a computed key or missing statistics
// leave the Groups cap (ok false or the full count).
func TestRangeGroups(t *testing.T) {
	ordered := &plan.TableStats{Columns: []string{"k", "v"}}
	unordered := &plan.TableStats{Columns: []string{"k", "v"}}
	for i := int64(0); i < 4; i++ {
		ordered.Chunks = append(ordered.Chunks, plan.ChunkStats{Rows: 1000, Stats: []plan.MinMax{{Valid: true, Min: 100 * i, Max: 100*i + 99}, {}}})
		unordered.Chunks = append(unordered.Chunks, plan.ChunkStats{Rows: 1000, Stats: []plan.MinMax{{Valid: true, Min: i, Max: 396 + i}, {}}})
	}
	agg := &plan.Op{Kind: plan.OpAggPartial, Keys: []string{"k"}, Groups: 400}
	for _, tc := range []struct {
		name     string
		t        *plan.TableStats
		op       *plan.Op
		first, n int
		want     int64
		wantOK   bool
	}{
		{"ordered, one chunk", ordered, agg, 1, 1, 100, true},
		{"ordered, two chunks", ordered, agg, 2, 2, 200, true},
		{"unordered (397 of 400 values)", unordered, agg, 0, 1, 397, true},
		{"computed key", ordered, &plan.Op{Kind: plan.OpAggPartial, Keys: []string{"x"}, Groups: 400}, 0, 1, 0, false},
		{"no stats", ordered, &plan.Op{Kind: plan.OpAggPartial, Keys: []string{"v"}, Groups: 400}, 0, 1, 0, false},
		{"no groups", ordered, &plan.Op{Kind: plan.OpAggPartial, Keys: []string{"k"}}, 0, 1, 0, false},
	} {
		g, ok := rangeGroups(tc.t, tc.op, tc.first, tc.n)
		if g != tc.want || ok != tc.wantOK {
			t.Errorf("%s: %d groups (ok %v), want %d (ok %v)", tc.name, g, ok, tc.want, tc.wantOK)
		}
	}
}

// TestResultWithoutKernelRefused: a pipeline reading a gather that holds
// only its result sink gives its units no operator to run; the scheduler
// must refuse the plan with an error naming the pipeline, not panic when
// it starts the first unit.
func TestResultWithoutKernelRefused(t *testing.T) {
	tbl := plan.TableStats{Name: "t", Columns: []string{"a"}, Chunks: []plan.ChunkStats{{Rows: 1000, Bytes: []int64{8000}}}}
	b := plan.NewBuilder("bare", []plan.TableStats{tbl})
	g := b.Scan("t", "a").Gather()
	b.From(g).Output("a")
	p, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	pol, err := NewPolicy("serial", "")
	if err != nil {
		t.Fatal(err)
	}
	topo := Topology{Nodes: 1, Devices: 2, SSDs: 1, NICs: 1, DeviceMem: 1 << 30, PinnedMem: 1 << 30}
	_, err = Run(context.Background(), p, pol, newTestBackend(topo, "fifo", 0), nil)
	if err == nil || !strings.Contains(err.Error(), "pipeline 1") || !strings.Contains(err.Error(), "no operator before its result sink") {
		t.Fatalf("Run = %v, want an error about pipeline 1's missing operator", err)
	}
}
