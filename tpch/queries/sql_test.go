package queries

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"gostachio/plan"
	"gostachio/sqlplan"
	"gostachio/tpch/schema"
)

// specDistinct is each TPC-H column's distinct values at SF1 per the
// specification's generation rules (clause 4.2.3), and whether the count
// grows with the scale factor; a column not listed has one value per row.
var specDistinct = map[string]struct {
	n      float64
	scaled bool
}{
	"p_mfgr": {5, false}, "p_brand": {25, false}, "p_type": {150, false}, "p_size": {50, false},
	"p_container": {40, false}, "p_retailprice": {20899, false},
	"ps_partkey": {200000, true}, "ps_suppkey": {10000, true}, "ps_availqty": {9999, false}, "ps_supplycost": {99901, false},
	"s_nationkey": {25, false}, "s_acctbal": {9955, true},
	"c_nationkey": {25, false}, "c_mktsegment": {5, false}, "c_acctbal": {140187, true},
	"o_custkey": {99996, true}, "o_orderstatus": {3, false}, "o_orderdate": {2406, false},
	"o_orderpriority": {5, false}, "o_clerk": {1000, true}, "o_shippriority": {1, false},
	"l_orderkey": {1500000, true}, "l_partkey": {200000, true}, "l_suppkey": {10000, true}, "l_linenumber": {7, false},
	"l_quantity": {50, false}, "l_extendedprice": {933900, false}, "l_discount": {11, false}, "l_tax": {9, false},
	"l_returnflag": {3, false}, "l_linestatus": {2, false}, "l_shipdate": {2526, false}, "l_commitdate": {2466, false},
	"l_receiptdate": {2555, false}, "l_shipinstruct": {4, false}, "l_shipmode": {7, false},
	"n_regionkey": {5, false},
}

// specRange is the integer-coded range of TPC-H columns (clause 4.2.3:
// dates as date32, decimals in cents); keys range over 1..rows.
var specRange = map[string][2]int64{
	"o_orderdate":   {plan.Day(1992, time.January, 1), plan.Day(1998, time.August, 2)},
	"l_shipdate":    {plan.Day(1992, time.January, 2), plan.Day(1998, time.December, 1)},
	"l_commitdate":  {plan.Day(1992, time.January, 31), plan.Day(1998, time.October, 31)},
	"l_receiptdate": {plan.Day(1992, time.January, 3), plan.Day(1998, time.December, 31)},
	"l_quantity":    {100, 5000}, "l_discount": {0, 10}, "l_tax": {0, 8},
	"p_size": {1, 50}, "ps_availqty": {1, 9999}, "ps_supplycost": {100, 100000},
	"c_acctbal": {-99999, 999999}, "s_acctbal": {-99999, 999999}, "p_retailprice": {90000, 210000},
	"n_nationkey": {0, 24}, "n_regionkey": {0, 4}, "r_regionkey": {0, 4}, "s_nationkey": {0, 24}, "c_nationkey": {0, 24},
	"l_linenumber": {1, 7}, "o_shippriority": {0, 0},
}

// sqlTables is Stats(sf) with each table's Schema filled from the TPC-H
// schema and the specification's statistics (what a dataset manifest
// records).
func sqlTables(t testing.TB, sf float64) []plan.TableStats {
	t.Helper()
	tables, err := Stats(sf, 1<<17)
	if err != nil {
		t.Fatal(err)
	}
	for i := range tables {
		ts := &tables[i]
		st, err := schema.Lookup(ts.Name)
		if err != nil {
			t.Fatal(err)
		}
		rows := float64(ts.Rows())
		for _, c := range st.Columns {
			cs := plan.ColumnStats{}
			switch c.Type {
			case schema.Int64:
				cs.Type = plan.TypeInt64
			case schema.Int32:
				cs.Type = plan.TypeInt32
			case schema.Decimal:
				cs.Type, cs.Scale = plan.TypeDecimal, int(math.Round(math.Log10(schema.DecimalScale)))
			case schema.Date:
				cs.Type = plan.TypeDate
			case schema.String:
				cs.Type = plan.TypeString
				cs.AvgLen = avgLen[c.Name]
			}
			d := rows
			if s, ok := specDistinct[c.Name]; ok {
				d = s.n
				if s.scaled {
					d *= sf
				}
			}
			cs.Distinct = int64(math.Max(1, math.Min(d, rows)))
			if r, ok := specRange[c.Name]; ok {
				cs.Range = plan.MinMax{Valid: true, Min: r[0], Max: r[1]}
			} else if c.Type == schema.Int64 && ts.Columns[0] == c.Name {
				cs.Range = plan.MinMax{Valid: true, Min: 1, Max: int64(rows)}
			}
			ts.Schema = append(ts.Schema, cs)
		}
	}
	return tables
}

// TestSQLAnswers plans every query from its SQL over SF0.01 statistics,
// runs the plan through the static checker and the reference interpreter
// on 1 and 3 devices, and compares with the official answers.
func TestSQLAnswers(t *testing.T) {
	const sf = 0.01
	ds := loadData(t, sf)
	tables := sqlTables(t, sf)
	for _, q := range Names() {
		t.Run(q, func(t *testing.T) {
			// The shared SF0.01 answer to Q11 applies 0.0001 (see TestAnswers).
			buildSF := sf
			if q == "q11" {
				buildSF = 1
			}
			text, err := SQLText(q, buildSF)
			if err != nil {
				t.Fatal(err)
			}
			p, err := sqlplan.Plan(q, text, tables, sqlplan.Options{Workers: 3})
			if err != nil {
				t.Fatal(err)
			}
			c, err := checkPlan(p)
			if err != nil {
				t.Fatal(err)
			}
			header, want := answerFile(t, "sf0.01", q)
			out := p.Pipelines[len(p.Pipelines)-1].Sink()
			if !slices.Equal(out.Out, header) {
				t.Errorf("outputs %v, answer header %v", out.Out, header)
			}
			skip := map[int]bool{}
			for _, name := range textDiffers[q] {
				skip[slices.Index(header, name)] = true
			}
			if q == "q13" {
				want = q13Brute(t, ds)
			}
			for _, w := range []int{1, 3} {
				res, err := run(c, ds, w)
				if err != nil {
					t.Fatalf("%d devices: %v", w, err)
				}
				compareRows(t, fmt.Sprintf("%d devices", w), header, res.rows, want, skip)
			}
		})
	}
}

// BenchmarkPlanTPCH plans each query from its SQL over SF1 statistics
// and reports the planning time per query.
func BenchmarkPlanTPCH(b *testing.B) {
	tables := sqlTables(b, 1)
	for _, q := range Names() {
		text, err := SQLText(q, 1)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(q, func(b *testing.B) {
			for b.Loop() {
				if _, err := sqlplan.Plan(q, text, tables, sqlplan.Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
