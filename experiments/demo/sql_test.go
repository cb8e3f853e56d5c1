package demo

import (
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"gostachio/dataset"
	"gostachio/plan"
)

// demoSQLAnswer computes the demo's SQL query straight from the stored
// columns, without the planner or the engine: lines and revenue per ship
// mode of the lines shipped since 1995 of the urgent orders, the three of
// most revenue.
func demoSQLAnswer(t *testing.T, ds *dataset.Dataset) [][]string {
	t.Helper()
	urgent := map[int64]bool{}
	ot, err := ds.Table("orders")
	if err != nil {
		t.Fatal(err)
	}
	for i := range ot.Chunks {
		b, err := ds.ReadChunk("orders", i, []string{"o_orderkey", "o_orderpriority"})
		if err != nil {
			t.Fatal(err)
		}
		for r := 0; r < b.Rows; r++ {
			if b.Cols[1].Str(r) == "1-URGENT" {
				urgent[b.Cols[0].I64[r]] = true
			}
		}
	}
	since := int32(plan.Day(1995, time.January, 1))
	lines, cents := map[string]int64{}, map[string]int64{}
	lt, err := ds.Table("lineitem")
	if err != nil {
		t.Fatal(err)
	}
	for i := range lt.Chunks {
		b, err := ds.ReadChunk("lineitem", i, []string{"l_orderkey", "l_extendedprice", "l_shipdate", "l_shipmode"})
		if err != nil {
			t.Fatal(err)
		}
		for r := 0; r < b.Rows; r++ {
			if urgent[b.Cols[0].I64[r]] && b.Cols[2].I32[r] >= since {
				mode := b.Cols[3].Str(r)
				lines[mode]++
				cents[mode] += b.Cols[1].I64[r]
			}
		}
	}
	var modes []string
	for m := range lines {
		modes = append(modes, m)
	}
	sort.Slice(modes, func(i, j int) bool { return cents[modes[i]] > cents[modes[j]] })
	var out [][]string
	for _, m := range modes[:min(3, len(modes))] {
		out = append(out, []string{m, fmt.Sprint(lines[m]), plan.FormatDecimal(cents[m], 2, 2)})
	}
	return out
}

// checkDemoSQL checks the demo's SQL step: the engine's result equals the
// answer computed from the stored columns, and the simulation ran.
func checkDemoSQL(t *testing.T, ds *dataset.Dataset, d *DemoSQL) {
	t.Helper()
	if d == nil {
		t.Fatal("no SQL step in the report")
	}
	if want := []string{"l_shipmode", "lines", "revenue"}; !slices.Equal(d.Columns, want) {
		t.Errorf("SQL step columns %v, want %v", d.Columns, want)
	}
	want := demoSQLAnswer(t, ds)
	if len(want) == 0 {
		t.Fatal("the demo's query selects nothing on this data: not a useful check")
	}
	if !slices.EqualFunc(d.Rows, want, slices.Equal[[]string]) {
		t.Errorf("SQL step rows %v, want %v", d.Rows, want)
	}
	if d.Pipelines < 3 || d.EngineMs <= 0 || d.SimMs <= 0 || d.SimNodes != 4 {
		t.Errorf("SQL step: %d pipelines, engine %.3f ms, simulated %.3f ms on %d nodes", d.Pipelines, d.EngineMs, d.SimMs, d.SimNodes)
	}
}
