package dbgen

import (
	"bytes"
	"math"
	"slices"
	"testing"

	"gostachio/tpch/schema"
)

// specRows are the row counts of TPC-H clause 4.2.5 (lineitem: what dbgen
// generates; the spec gives it approximately).
var specRows = map[string]map[string]int{
	"sf0.01": {"part": 2000, "partsupp": 8000, "supplier": 100, "customer": 1500, "orders": 15000,
		"lineitem": 60175, "nation": 25, "region": 5},
	"sf1": {"part": 200000, "partsupp": 800000, "supplier": 10000, "customer": 150000, "orders": 1500000,
		"lineitem": 6001215, "nation": 25, "region": 5},
}

func checkRows(t *testing.T, tb *tables, name string) {
	for table, want := range specRows[name] {
		if got := tb.rows[table]; got != want {
			t.Errorf("%s at %s: %d rows, spec %d", table, name, got, want)
		}
	}
}

// TestSF001 checks the fractional scale factor 0.01 (bases scaled as dbgen's
// driver.c does) against the spec's row counts and the SF0.01 answers.
func TestSF001(t *testing.T) {
	g, err := New(0.01)
	if err != nil {
		t.Fatal(err)
	}
	tb := generateAll(t, g, 777)
	t.Run("rows", func(t *testing.T) { checkRows(t, tb, "sf0.01") })
	t.Run("q1", func(t *testing.T) { checkQ1(t, tb, "sf0.01") })
	t.Run("q4", func(t *testing.T) { checkQ4(t, tb, "sf0.01") })
	t.Run("q6", func(t *testing.T) { checkQ6(t, tb, "sf0.01") })
	t.Run("q16", func(t *testing.T) { checkQ16(t, tb, "sf0.01") })
	t.Run("q22", func(t *testing.T) { checkQ22(t, tb, "sf0.01") })
}

// TestSF1 generates all of SF1 once (in ranges, on every core) and checks
// it against the spec's row counts, the shared SF1 answers and TPC's own
// answers; and that ranges generated alone, deep inside the tables, equal
// the same rows of the whole.
func TestSF1(t *testing.T) {
	if testing.Short() {
		t.Skip("SF1 generation skipped in -short mode")
	}
	g, err := New(1)
	if err != nil {
		t.Fatal(err)
	}
	tb := generateAll(t, g, 1<<16)
	t.Run("rows", func(t *testing.T) { checkRows(t, tb, "sf1") })
	t.Run("q1", func(t *testing.T) { checkQ1(t, tb, "sf1") })
	t.Run("q4", func(t *testing.T) { checkQ4(t, tb, "sf1") })
	t.Run("q6", func(t *testing.T) { checkQ6(t, tb, "sf1") })
	t.Run("q16", func(t *testing.T) { checkQ16(t, tb, "sf1") })
	t.Run("q22", func(t *testing.T) { checkQ22(t, tb, "sf1") })
	t.Run("q2-official", func(t *testing.T) { checkQ2Head(t, tb) })
	t.Run("q10-official", func(t *testing.T) { checkQ10(t, tb) })
	t.Run("q13-official", func(t *testing.T) { checkQ13(t, tb) })
	t.Run("q15-official", func(t *testing.T) { checkQ15(t, tb) })
	t.Run("q20-official", func(t *testing.T) { checkQ20(t, tb) })
	t.Run("ranges", func(t *testing.T) {
		for _, c := range []struct {
			tab         *schema.Table
			first, n    int64
			firstRow    int // of the whole table
			rowsPerUnit int // 0: count them (lineitem)
		}{
			{&schema.PartSupp, 123_457, 1000, 123_457 * 4, 4},
			{&schema.Customer, 149_000, 1000, 149_000, 1},
			{&schema.Orders, 1_234_567, 999, 1_234_567, 1},
		} {
			b, err := g.Generate(c.tab, c.first, c.n)
			if err != nil {
				t.Fatal(err)
			}
			if b.Rows != int(c.n)*c.rowsPerUnit {
				t.Fatalf("%s: %d rows for %d units", c.tab.Name, b.Rows, c.n)
			}
			assertSameRows(t, b, tb.b[c.tab.Name], c.firstRow)
		}
		// The lines of orders [1_234_567, +999) start after the lines of all
		// earlier orders: count them from the whole table's order keys.
		b, err := g.Generate(&schema.Lineitem, 1_234_567, 999)
		if err != nil {
			t.Fatal(err)
		}
		whole := tb.b["lineitem"]
		firstKey := col(b, "l_orderkey").I64[0]
		at, _ := slices.BinarySearch(col(whole, "l_orderkey").I64, firstKey)
		assertSameRows(t, b, whole, at)
	})
}

// assertSameRows checks that part equals whole's rows [at, at+part.Rows),
// value for value.
func assertSameRows(t *testing.T, part, whole *schema.Batch, at int) {
	t.Helper()
	if at+part.Rows > whole.Rows {
		t.Fatalf("%s: rows [%d, %d) beyond %d", part.Table.Name, at, at+part.Rows, whole.Rows)
	}
	for c, cd := range part.Table.Columns {
		p, w := &part.Cols[c], &whole.Cols[c]
		same := true
		switch cd.Type {
		case schema.Int64, schema.Decimal:
			same = slices.Equal(p.I64, w.I64[at:at+part.Rows])
		case schema.Int32, schema.Date:
			same = slices.Equal(p.I32, w.I32[at:at+part.Rows])
		case schema.String:
			same = bytes.Equal(p.Bytes, w.Bytes[w.Offsets[at]:w.Offsets[at+part.Rows]])
			for i := 0; same && i <= part.Rows; i++ {
				same = p.Offsets[i] == w.Offsets[at+i]-w.Offsets[at]
			}
		}
		if !same {
			t.Errorf("%s.%s: rows generated alone from %d differ from the whole table's", part.Table.Name, cd.Name, at)
		}
	}
}

// TestRangesEqualOneRun: any split of a table into ranges gives exactly the
// rows of one serial run.
func TestRangesEqualOneRun(t *testing.T) {
	for _, sf := range []float64{0.01, 0.002} {
		g, err := New(sf)
		if err != nil {
			t.Fatal(err)
		}
		whole := generateAll(t, g, 1<<30)
		for _, chunk := range []int64{1, 7, 333} {
			split := generateAll(t, g, chunk)
			for name, a := range whole.b {
				b := split.b[name]
				if a.Rows != b.Rows {
					t.Fatalf("SF%v %s: %d rows in one run, %d in ranges of %d", sf, name, a.Rows, b.Rows, chunk)
				}
				assertSameRows(t, b, a, 0)
			}
		}
	}
}

// TestFractionalScale checks dbgen's fractional scaling (driver.c: bases
// become int(1000*SF)*base/1000, at least 1) on the unit counts.
func TestFractionalScale(t *testing.T) {
	for _, c := range []struct {
		sf                       float64
		part, supp, cust, orders int64
	}{
		{0.01, 2000, 100, 1500, 15000},
		{0.1, 20000, 1000, 15000, 150000},
		{0.5, 100000, 5000, 75000, 750000},
		{0.001, 200, 10, 150, 1500},
		{0.0015, 200, 10, 150, 1500}, // int(1.5) = 1
		{3, 600000, 30000, 450000, 4500000},
	} {
		g, err := New(c.sf)
		if err != nil {
			t.Fatal(err)
		}
		got := []int64{g.Units(&schema.Part), g.Units(&schema.PartSupp), g.Units(&schema.Supplier),
			g.Units(&schema.Customer), g.Units(&schema.Orders), g.Units(&schema.Lineitem),
			g.Units(&schema.Nation), g.Units(&schema.Region)}
		want := []int64{c.part, c.part, c.supp, c.cust, c.orders, c.orders, 25, 5}
		if !slices.Equal(got, want) {
			t.Errorf("SF%v units %v, want %v", c.sf, got, want)
		}
	}
}

func TestNewRejectsBadScaleFactors(t *testing.T) {
	for _, sf := range []float64{0, -1, 1.5, 0.0001, 30000, math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := New(sf); err == nil {
			t.Errorf("New(%v) succeeded; want an error", sf)
		}
	}
	g, err := New(0.01)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range [][2]int64{{14999, 2}, {-1, 1}, {0, -1}} {
		if _, err := g.Generate(&schema.Orders, r[0], r[1]); err == nil {
			t.Errorf("Generate(orders, %d, %d) succeeded; want an error", r[0], r[1])
		}
	}
	if _, err := g.Generate(&schema.Table{Name: "nope"}, 0, 1); err == nil {
		t.Error("Generate of an unknown table succeeded")
	}
}
