package queries

import (
	"fmt"
	"math"

	"gostachio/plan"
	"gostachio/tpch/schema"
)

// avgLen is the average length in bytes of each TPC-H text column, per
// the specification's generation rules (clause 4.2.3): fixed formats at
// their length ("Customer#000000001": 18), value lists at the mean of their
// values, and v-strings / text strings of length uniform in [a, b] at
// (a+b)/2:
//
//	p_name 32.5 (5 words of the 92-word color list, ~5.7 chars each, 4 spaces)
//	p_mfgr 14, p_brand 8, p_type 20.6 (syllables 6 + 7.6 + 5, 2 spaces),
//	p_container 7.6 (3.2 + 3.4, a space), p_comment [5,22] 13.5
//	ps_comment [49,198] 123.5
//	s_name 18, s_address [10,40] 25, s_phone 15, s_comment [25,100] 62.5
//	c_name 18, c_address 25, c_phone 15, c_mktsegment 8.8, c_comment [29,116] 72.5
//	o_orderstatus 1, o_orderpriority 8.4, o_clerk 15, o_comment [19,78] 48.5
//	l_returnflag 1, l_linestatus 1, l_shipinstruct 12, l_shipmode 4.3,
//	l_comment [10,43] 26.5
//	n_name 7.1, n_comment [31,114] 72.5, r_name 6.8, r_comment [31,115] 73
var avgLen = map[string]float64{
	"p_name": 32.5, "p_mfgr": 14, "p_brand": 8, "p_type": 20.6, "p_container": 7.6, "p_comment": 13.5,
	"ps_comment": 123.5,
	"s_name":     18, "s_address": 25, "s_phone": 15, "s_comment": 62.5,
	"c_name": 18, "c_address": 25, "c_phone": 15, "c_mktsegment": 8.8, "c_comment": 72.5,
	"o_orderstatus": 1, "o_orderpriority": 8.4, "o_clerk": 15, "o_comment": 48.5,
	"l_returnflag": 1, "l_linestatus": 1, "l_shipinstruct": 12, "l_shipmode": 4.3, "l_comment": 26.5,
	"n_name": 7.1, "n_comment": 72.5, "r_name": 6.8, "r_comment": 73,
}

// StringOffsetBytes is the per-value overhead of a stored text value (an
// Arrow utf8 int32 offset).
const StringOffsetBytes = 4

// ColumnBytes is the average stored bytes per row of a TPC-H column: its
// fixed width (int64/decimal 8, int32/date 4), or for text the spec's
// average length plus StringOffsetBytes.
func ColumnBytes(c schema.Column) (float64, error) {
	if w := c.Type.Width(); w > 0 {
		return float64(w), nil
	}
	l, ok := avgLen[c.Name]
	if !ok {
		return 0, fmt.Errorf("tpch/queries: no average length for text column %s", c.Name)
	}
	return l + StringOffsetBytes, nil
}

// IsText reports whether column of TPC-H table is text as the plans price
// it (plan.Builder.TextColumns): a string column longer on average than
// plan.TextFlagBytes. One-byte flags (l_returnflag, l_linestatus,
// o_orderstatus) are not text here: they hash and compare in one byte, as
// an integer does (sorts on l_returnflag measured 41–53 ns a row where
// sorts on p_brand and p_type took 330–600). A table or column the TPC-H
// schema does not know is not text.
func IsText(table, column string) bool {
	t, err := schema.Lookup(table)
	if err != nil {
		return false
	}
	i := t.Column(column)
	return i >= 0 && t.Columns[i].Type == schema.String && avgLen[column] > plan.TextFlagBytes
}

// Stats returns the layout of the eight TPC-H tables at scale factor sf
// without data: rows = BaseRows x sf for scaled tables (nation and region
// fixed), cut into chunks of chunkRows rows (the last one shorter), each
// column's bytes = rows x ColumnBytes, columns back to back within a chunk
// and chunks back to back in one file per table. No per-chunk min/max
// statistics (nothing is pruned): in dbgen data the date columns of every
// chunk span nearly the whole range anyway. Each table's Schema holds the
// column types and the table-wide ranges, distinct counts and text lengths
// the specification implies at sf (spec in specstats.go). sf must lie in (0, MaxScaleFactor] and the
// tables must make at most plan.MaxChunks chunks: the error says which
// chunk size would fit.
func Stats(sf float64, chunkRows int) ([]plan.TableStats, error) {
	if !(sf > 0) || math.IsInf(sf, 0) {
		return nil, fmt.Errorf("tpch/queries: scale factor %v must be positive", sf)
	}
	if sf > MaxScaleFactor {
		return nil, fmt.Errorf("tpch/queries: scale factor %g above %g (%.3g lineitem rows)", sf, float64(MaxScaleFactor), 6e6*MaxScaleFactor)
	}
	if chunkRows <= 0 {
		return nil, fmt.Errorf("tpch/queries: chunk rows %d must be positive", chunkRows)
	}
	var chunks int64
	for _, st := range schema.Tables {
		rows := st.BaseRows
		if st.Scaled {
			rows = int64(math.Round(float64(st.BaseRows) * sf))
		}
		chunks += (rows + int64(chunkRows) - 1) / int64(chunkRows)
	}
	if chunks > plan.MaxChunks {
		need := int64(math.Ceil(float64(chunkRows) * float64(chunks) / plan.MaxChunks))
		return nil, fmt.Errorf("tpch/queries: SF %g in chunks of %d rows makes %d stored chunks, more than the %d a plan may hold: use chunks of at least %d rows, or a smaller scale factor",
			sf, chunkRows, chunks, int64(plan.MaxChunks), need)
	}
	out := make([]plan.TableStats, 0, len(schema.Tables))
	k := tpchRows{sf: sf, scale: max(1, int64(sf))}
	for _, st := range schema.Tables {
		rows := int64(math.Round(float64(st.BaseRows) * sf))
		switch st {
		case &schema.Part:
			k.p = rows
		case &schema.PartSupp:
			k.ps = rows
		case &schema.Supplier:
			k.s = rows
		case &schema.Customer:
			k.c = rows
		case &schema.Orders:
			k.o = rows
		case &schema.Lineitem:
			k.l = rows
		}
	}
	for _, st := range schema.Tables {
		rows := st.BaseRows
		if st.Scaled {
			rows = int64(math.Round(float64(st.BaseRows) * sf))
		}
		widths := make([]float64, len(st.Columns))
		t := plan.TableStats{Name: st.Name, Files: []string{st.Name + ".arrow"}}
		for i, c := range st.Columns {
			w, err := ColumnBytes(c)
			if err != nil {
				return nil, err
			}
			widths[i] = w
			t.Columns = append(t.Columns, c.Name)
		}
		n := (rows + int64(chunkRows) - 1) / int64(chunkRows)
		t.Chunks = make([]plan.ChunkStats, n)
		bytes := make([]int64, n*int64(len(widths)))
		var base int64
		for i := int64(0); i < n; i++ {
			r := min(int64(chunkRows), rows-i*int64(chunkRows))
			ch := &t.Chunks[i]
			ch.Rows, ch.Base = r, base
			ch.Bytes = bytes[i*int64(len(widths)) : (i+1)*int64(len(widths))]
			for c, w := range widths {
				ch.Bytes[c] = int64(math.Ceil(float64(r) * w))
				base += ch.Bytes[c]
			}
		}
		t.Schema = specSchema(st, rows, &k)
		out = append(out, t)
	}
	return out, nil
}

// MaxScaleFactor is the largest scale factor Stats sizes: six trillion
// lineitem rows, past which row counts approach int64's range in sums.
const MaxScaleFactor = 1e6

// sfTables are the tables ScaleFactor infers the scale factor from, best
// first: those whose row count is exactly BaseRows x SF come before
// lineitem, whose count only approximates it.
var sfTables = []*schema.Table{&schema.Orders, &schema.Customer, &schema.Part,
	&schema.Supplier, &schema.PartSupp, &schema.Lineitem}

// ScaleFactor infers the scale factor of TPC-H tables (e.g. from a dataset
// manifest that does not state it) as rows / BaseRows of the first scaled
// table present (orders, customer, part, supplier, partsupp, lineitem). It
// fails when none is present or the table is empty.
func ScaleFactor(tables []plan.TableStats) (float64, error) {
	for _, st := range sfTables {
		for i := range tables {
			if tables[i].Name != st.Name {
				continue
			}
			rows := tables[i].Rows()
			if rows <= 0 {
				return 0, fmt.Errorf("tpch/queries: table %s is empty: no scale factor", st.Name)
			}
			return float64(rows) / float64(st.BaseRows), nil
		}
	}
	return 0, fmt.Errorf("tpch/queries: no scaled TPC-H table among %d tables: no scale factor", len(tables))
}

// Sized builds query name over tables, or, where tables is nil, over the
// TPC-H tables sized at scale factor sf in chunks of chunkRows rows
// (Stats). Over tables, an sf that is not positive is inferred from their
// row counts (ScaleFactor), and chunkRows is ignored. It returns the plan
// and the scale factor it was built at.
func Sized(name string, sf float64, chunkRows int, tables []plan.TableStats) (*plan.Plan, float64, error) {
	var err error
	if tables != nil {
		if !(sf > 0) {
			if sf, err = ScaleFactor(tables); err != nil {
				return nil, 0, err
			}
		}
	} else if tables, err = Stats(sf, chunkRows); err != nil {
		return nil, 0, err
	}
	p, err := Build(name, sf, tables)
	if err != nil {
		return nil, 0, err
	}
	return p, sf, nil
}
