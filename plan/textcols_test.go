package plan

import "testing"

// textTables are tables of a few TPC-H columns, the text ones (as the
// caller declares them) marked.
func textTables() ([]TableStats, func(table, column string) bool) {
	cols := map[string][]string{
		"supplier": {"s_suppkey", "s_name"},
		"part":     {"p_partkey", "p_brand", "p_type", "p_size"},
		"lineitem": {"l_returnflag", "l_linestatus", "l_shipmode"},
	}
	text := map[string]bool{"s_name": true, "p_brand": true, "p_type": true, "l_shipmode": true}
	var tables []TableStats
	for _, name := range []string{"supplier", "part", "lineitem"} {
		t := TableStats{Name: name, Columns: cols[name]}
		t.Chunks = []ChunkStats{{Rows: 100, Bytes: make([]int64, len(cols[name]))}}
		tables = append(tables, t)
	}
	return tables, func(table, column string) bool { return text[column] }
}

// The Builder counts an operator's text keys (and a probe's carried text
// columns) from the declared text columns through renames, SUBSTRING and
// CASE, and StrTerms prices them; integers, dates, computed numbers and
// one-byte flags are not text.
func TestTextKeys(t *testing.T) {
	tables, isText := textTables()
	b := NewBuilder("text", tables).TextColumns(isText)
	sup := b.Scan("supplier", "s_suppkey", "s_name").HashBuild("s_suppkey")
	pp := b.Scan("part", "p_partkey", "p_brand", "p_type", "p_size").
		Join(JoinInner, sup, []string{"p_partkey"}, []string{"s_name"}, 1, 40).
		Select(40,
			As("brand", Col("p_brand")),
			As("t3", Substr(Col("p_type"), 1, 3)),
			As("label", Case(Eq(Col("p_size"), Int(1)), Str("one"), Str("many"))),
			As("big", Case(Eq(Col("p_size"), Int(1)), Int(1), Int(0))),
			As("p_partkey", Col("p_partkey")),
			As("s_name", Col("s_name"))).
		Partial(10, 40, []string{"brand", "t3", "label", "big", "p_partkey"}, Count("n"))
	flags := b.Scan("lineitem", "l_returnflag", "l_linestatus", "l_shipmode").
		Partial(10, 8, []string{"l_returnflag", "l_linestatus", "l_shipmode"}, Count("n"))
	flagAgg := flags.pl.Ops[1]
	probe := pp.pl.Ops[1]
	agg := pp.pl.Ops[3]
	pp.Gather()
	st := b.From(1).Final(10, 40, []string{"brand", "t3", "label", "big", "p_partkey"}, Count("n")).
		Sort("s_name desc", "n", "brand")
	sort := st.pl.Ops[1]
	for _, c := range []struct {
		name string
		op   Op
		want int
	}{
		{"probe carrying s_name", probe, 1},
		{"partial on brand, t3, label (text) and big, p_partkey", agg, 3},
		{"sort on s_name desc, n, brand", sort, 2},
		{"partial on one-byte flags and l_shipmode", flagAgg, 1},
	} {
		if c.op.StrKeys != c.want {
			t.Errorf("%s: StrKeys %d, want %d", c.name, c.op.StrKeys, c.want)
		}
		if got := c.op.StrTerms(); got != float64(c.want) {
			t.Errorf("%s: StrTerms %g, want %d (its text keys)", c.name, got, c.want)
		}
	}
}

// Without TextColumns no table column is text: only projections make text.
func TestTextKeysUndeclared(t *testing.T) {
	tables, _ := textTables()
	b := NewBuilder("text", tables)
	pp := b.Scan("part", "p_partkey", "p_brand").
		Select(40, As("brand", Col("p_brand")), As("label", Str("x"))).
		Partial(10, 40, []string{"brand", "label"}, Count("n"))
	if got := pp.pl.Ops[2].StrKeys; got != 1 {
		t.Errorf("partial on an undeclared column and a literal: StrKeys %d, want 1", got)
	}
}
