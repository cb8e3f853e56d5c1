package queries

import (
	"testing"
	"time"

	"gostachio/plan"
	"gostachio/tpch/schema"
)

// manifestTable builds the plan.TableStats a dataset manifest yields for st:
// chunks of the given (uneven) row counts, columns at explicit offsets with
// each buffer padded to 64 bytes (not back to back), chunks alternating
// between two files, min/max for integer-coded columns from dates(i) (nil:
// none) and none for text. Text columns store textLen bytes per row.
func manifestTable(st *schema.Table, rows []int64, textLen int64, dates func(i int) (lo, hi int64)) plan.TableStats {
	t := plan.TableStats{Name: st.Name, Files: []string{st.Name + ".0.arrow", st.Name + ".1.arrow"}}
	for _, c := range st.Columns {
		t.Columns = append(t.Columns, c.Name)
	}
	pad := func(n int64) int64 { return (n + 63) &^ 63 }
	off := [2]int64{4096, 4096}
	for i, r := range rows {
		f := i % 2
		ch := plan.ChunkStats{Rows: r, File: int32(f), Base: off[f]}
		for _, c := range st.Columns {
			b := r * textLen
			if w := c.Type.Width(); w > 0 {
				b = r * int64(w)
			}
			ch.Offset = append(ch.Offset, off[f])
			ch.Bytes = append(ch.Bytes, b)
			off[f] += pad(b) + 64 // padding, then a gap (next buffer's header)
			mm := plan.MinMax{}
			if c.Type == schema.Date && dates != nil {
				lo, hi := dates(i)
				mm = plan.MinMax{Valid: true, Min: lo, Max: hi}
			}
			ch.Stats = append(ch.Stats, mm)
		}
		t.Chunks = append(t.Chunks, ch)
	}
	return t
}

// TestBuildOnManifestTables: the TPC-H plans build over tables shaped
// like a real dataset's (uneven chunks, orders and lineitem with the same
// number of chunks but ~4x the rows per lineitem chunk, explicit column
// offsets, two files, statistics on dates only, only the tables a query
// needs, in any order), and derive their estimates from those figures.
func TestBuildOnManifestTables(t *testing.T) {
	d94, d95 := plan.Day(1994, time.January, 1), plan.Day(1995, time.January, 1)
	li := manifestTable(&schema.Lineitem, []int64{4012, 3987, 4101, 1900}, 20, func(i int) (int64, int64) {
		if i == 3 {
			return d95, d95 + 300 // entirely after 1994: q6 prunes it
		}
		return d94 - 400, d95 + 400
	})
	ord := manifestTable(&schema.Orders, []int64{1000, 1000, 1000, 475}, 10, nil)
	cust := manifestTable(&schema.Customer, []int64{150, 90}, 30, nil)
	tables := []plan.TableStats{li, cust, ord}
	for i := range tables {
		if err := tables[i].Validate(); err != nil {
			t.Fatalf("hand-built table: %v", err)
		}
	}
	if len(li.Chunks) != len(ord.Chunks) {
		t.Fatal("orders and lineitem must have the same number of chunks")
	}
	liRows := int64(4012 + 3987 + 4101 + 1900)

	p6, err := Build("q6", 0.002, tables)
	if err != nil {
		t.Fatal(err)
	}
	// l_shipdate (4) + l_discount (8) + l_quantity (8) + l_extendedprice
	// (8) = 28 bytes per row whatever the chunking.
	if w := p6.Pipelines[0].Ops[0].OutWidth; w != 28 {
		t.Errorf("q6 scan width %d, want 28", w)
	}
	pr := p6.Pipelines[0].Ops[0].Prune
	var kept []int
	for c := range li.Chunks {
		if li.Survives(c, pr) {
			kept = append(kept, c)
		}
	}
	if len(kept) != 3 || kept[2] != 2 {
		t.Errorf("q6 keeps chunks %v, want [0 1 2]", kept)
	}

	p1, err := Build("q1", 0.002, tables)
	if err != nil {
		t.Fatal(err)
	}
	// q1 projects l_quantity, l_extendedprice, l_discount, l_tax (8 each),
	// l_returnflag, l_linestatus (20 each, text) and l_shipdate (4): 76.
	if w := p1.Pipelines[0].Ops[0].OutWidth; w != 76 {
		t.Errorf("q1 scan width %d, want 76", w)
	}
	if got := p1.Tables[p1.Pipelines[0].Source.Table].Rows(); got != liRows {
		t.Errorf("q1 scans %d rows, want %d", got, liRows)
	}

	p3, err := Build("q3", 0.002, tables)
	if err != nil {
		t.Fatal(err)
	}
	// Each scan names its table by name, wherever it sits in the slice.
	aggs := 0
	want := map[string]string{"q3 scan customer": "customer", "q3 scan orders": "orders", "q3 scan lineitem": "lineitem"}
	for _, pl := range p3.Pipelines {
		if name, ok := want[pl.Name]; ok {
			if got := p3.Tables[pl.Source.Table].Name; got != name {
				t.Errorf("%s reads table %s", pl.Name, got)
			}
			delete(want, pl.Name)
		}
		for _, op := range pl.Ops {
			if op.Kind == plan.OpAggPartial || op.Kind == plan.OpAggFinal {
				aggs++
				// 11,620 groups at SF1 scaled to SF 0.002: 23.24 -> 23.
				if op.Groups != 23 {
					t.Errorf("q3 %s groups %d, want 23", op.Kind, op.Groups)
				}
			}
		}
	}
	if aggs != 2 {
		t.Errorf("q3 has %d aggregates, want 2 (partial, final)", aggs)
	}
	if len(want) != 0 {
		t.Errorf("q3 pipelines missing: %v", want)
	}
	// c_custkey (8) + c_mktsegment (30): 38 bytes per customer row.
	if w := p3.Pipelines[0].Ops[0].OutWidth; w != 38 {
		t.Errorf("q3 customer scan width %d, want 38", w)
	}

	// A dataset without the table a query scans is an error, not a panic.
	if _, err := Build("q3", 0.002, []plan.TableStats{li, ord}); err == nil {
		t.Error("q3 without customer built")
	}
}

func TestScaleFactor(t *testing.T) {
	for _, tc := range []struct {
		name string
		rows int64
		want float64
	}{
		{"orders", 1_500_000, 1},
		{"orders", 15_000, 0.01},
		{"lineitem", 6_001_215, 1},
		{"customer", 150_000_000, 1000},
	} {
		tbl := plan.TableStats{Name: tc.name, Chunks: []plan.ChunkStats{{Rows: tc.rows / 2}, {Rows: tc.rows - tc.rows/2}}}
		got, err := ScaleFactor([]plan.TableStats{{Name: "nation", Chunks: []plan.ChunkStats{{Rows: 25}}}, tbl})
		if err != nil || got != tc.want {
			t.Errorf("%s %d rows: scale factor %v, %v; want %v", tc.name, tc.rows, got, err, tc.want)
		}
	}
	if _, err := ScaleFactor([]plan.TableStats{{Name: "nation", Chunks: []plan.ChunkStats{{Rows: 25}}}}); err == nil {
		t.Error("scale factor from nation alone: no error")
	}
}
