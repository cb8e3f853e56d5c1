package plan

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// Day is a date as date32: days since 1970-01-01.
func Day(y int, m time.Month, d int) int64 {
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400
}

// tpchQueries are the TPC-H plan shapes available here, with the spec's
// validation parameters. Selectivities are the fractions those parameters
// select in dbgen data (checked against the SF1 answer row counts); group
// counts are the SF1 answer sizes scaled as the spec scales them.
var tpchQueries = map[string]func(sf float64, tables []TableStats) *Builder{
	"q1": tpchQ1,
	"q3": tpchQ3,
	"q6": tpchQ6,
}

// TPCHQueries lists the queries TPCHQuery can build.
func TPCHQueries() []string {
	names := make([]string, 0, len(tpchQueries))
	for n := range tpchQueries {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// TPCHQuery builds the plan of a TPC-H query ("q1", "q3", "q6") over the
// given tables (from TPCHStats or a dataset manifest) at scale factor sf
// (used for group-count estimates).
func TPCHQuery(name string, sf float64, tables []TableStats) (*Plan, error) {
	f, ok := tpchQueries[name]
	if !ok {
		return nil, fmt.Errorf("plan: no TPC-H plan %q (have %v)", name, TPCHQueries())
	}
	return f(sf, tables).Build()
}

func scaled(n float64, sf float64) int64 { return max(1, int64(math.Round(n*sf))) }

// Q1, pricing summary: l_shipdate <= 1998-12-01 - 90 days keeps 98.6% of
// lineitem (5,916,591 of 6,001,215 rows at SF1); 4 groups of
// (returnflag, linestatus) with 8 aggregates (2 + 8x8 bytes, padded to 72).
func tpchQ1(sf float64, tables []TableStats) *Builder {
	b := NewBuilder("q1", tables)
	cut := Day(1998, time.December, 1) - 90
	p0 := b.Scan("lineitem", "l_quantity", "l_extendedprice", "l_discount", "l_tax",
		"l_returnflag", "l_linestatus", "l_shipdate").
		Prune("l_shipdate", math.MinInt32, cut).
		Filter("l_shipdate <= date '1998-12-01' - interval '90' day", 0.9859).
		AggPartial("sum(qty), sum(price), sum(disc_price), sum(charge), avg(qty), avg(price), avg(disc), count(*)", 4, 72,
			"l_returnflag", "l_linestatus").
		Named("q1 scan lineitem").Gather()
	b.From(p0).Named("q1 final").AggFinal("merge partial aggregates", 4, 72, "l_returnflag", "l_linestatus").
		Sort("l_returnflag", "l_linestatus").Result()
	return b
}

// Q6, forecasting revenue change: shipdate in [1994-01-01, 1995-01-01),
// discount in [0.05, 0.07], quantity < 24 keep 1.90% of lineitem (114,160
// rows at SF1); one sum.
func tpchQ6(sf float64, tables []TableStats) *Builder {
	b := NewBuilder("q6", tables)
	lo, hi := Day(1994, time.January, 1), Day(1995, time.January, 1)-1
	p0 := b.Scan("lineitem", "l_shipdate", "l_discount", "l_quantity", "l_extendedprice").
		Prune("l_shipdate", lo, hi).
		Filter("l_shipdate >= date '1994-01-01' and l_shipdate < date '1995-01-01' and l_discount between 0.05 and 0.07 and l_quantity < 24", 0.0190).
		AggPartial("sum(l_extendedprice * l_discount)", 1, 8).
		Named("q6 scan lineitem").Gather()
	b.From(p0).Named("q6 final").AggFinal("sum", 1, 8).Result()
	return b
}

// Q3, shipping priority (segment BUILDING, date 1995-03-15):
//   - customer: c_mktsegment = 'BUILDING' keeps 1/5; the keys are broadcast
//     and built into a hash table on every worker;
//   - orders: o_orderdate < 1995-03-15 keeps 48.6% (dates uniform over 2,405
//     days, the cut at day 1,169); the probe keeps the 1/5 whose customer
//     matches; the result is shuffled on o_orderkey and built;
//   - lineitem: l_shipdate > 1995-03-15 keeps 54.0% (3,241,776 rows at
//     SF1), shuffled on l_orderkey; the probe keeps 0.94% (the ~30,500 SF1
//     lineitems of the ~147,000 qualifying orders: only orders placed in the
//     121 days before the cut still ship after it);
//   - 11,620 groups (orderkey, orderdate, shippriority) at SF1, top 10 by
//     revenue.
func tpchQ3(sf float64, tables []TableStats) *Builder {
	b := NewBuilder("q3", tables)
	cut := Day(1995, time.March, 15)
	cust := b.Scan("customer", "c_custkey", "c_mktsegment").Named("q3 scan customer").
		Filter("c_mktsegment = 'BUILDING'", 0.2).
		Project("c_custkey", 8, "c_custkey").Broadcast()
	custHT := b.From(cust).Named("q3 build customer").HashBuild("c_custkey")
	ord := b.Scan("orders", "o_orderkey", "o_custkey", "o_orderdate", "o_shippriority").Named("q3 scan orders").
		Prune("o_orderdate", math.MinInt32, cut-1).
		Filter("o_orderdate < date '1995-03-15'", 0.486).
		Probe(custHT, 0.2, 16, "o_custkey").
		Shuffle("o_orderkey")
	ordHT := b.From(ord).Named("q3 build orders").HashBuild("o_orderkey")
	li := b.Scan("lineitem", "l_orderkey", "l_extendedprice", "l_discount", "l_shipdate").Named("q3 scan lineitem").
		Prune("l_shipdate", cut+1, math.MaxInt32).
		Filter("l_shipdate > date '1995-03-15'", 0.540).
		Project("l_orderkey, l_extendedprice * (1 - l_discount) as revenue", 16, "l_orderkey", "revenue").
		Shuffle("l_orderkey")
	groups := scaled(11620, sf)
	joined := b.From(li).Named("q3 probe orders").
		Probe(ordHT, 0.0094, 24, "l_orderkey").
		AggPartial("sum(revenue)", groups, 24, "l_orderkey", "o_orderdate", "o_shippriority").
		Gather()
	b.From(joined).Named("q3 final").AggFinal("sum(revenue)", groups, 24, "l_orderkey", "o_orderdate", "o_shippriority").
		TopK(10, "revenue desc", "o_orderdate").Result()
	return b
}
