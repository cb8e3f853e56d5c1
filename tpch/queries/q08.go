package queries

import "gostachio/plan"

var q08Cols = []string{"o_year", "mkt_share"}

// q08, national market share (BRAZIL, AMERICA, ECONOMY ANODIZED STEEL):
// AMERICA's nations (n1) select customers (1/5), whose 1995-1996 orders
// (30.4%) carry o_year and are shuffled on o_orderkey; lineitems of the
// part type (1/150) carry the supplier's nation (n2, renamed nation, all 25
// broadcast with the suppliers), are shuffled on l_orderkey and probe the
// orders (6.1% match). The share is a ratio of two sums per year.
func q08(b *plan.Builder, sf float64) {
	lo, hi := plan.Date("1995-01-01"), plan.Date("1996-12-31")
	region := b.Scan("region", "r_regionkey", "r_name").Named("q8 scan region").
		Where(plan.Eq(col("r_name"), plan.Str("AMERICA")), 0.2).
		Select(8, plan.Keep("r_regionkey")...)
	regionHT := broadcastBuild(b, region, "q8 build region", "r_regionkey")
	n1 := b.Scan("nation", "n_nationkey", "n_regionkey").Named("q8 scan nation n1").
		Join(plan.JoinSemi, regionHT, keys("n_regionkey"), nil, 0.2, 16).
		Select(8, plan.Keep("n_nationkey")...)
	n1HT := broadcastBuild(b, n1, "q8 build nation n1", "n_nationkey")
	cust := b.Scan("customer", "c_custkey", "c_nationkey").Named("q8 scan customer").
		Join(plan.JoinSemi, n1HT, keys("c_nationkey"), nil, 0.2, 16).
		Select(8, plan.Keep("c_custkey")...)
	custHT := broadcastBuild(b, cust, "q8 build customer", "c_custkey")

	ord := b.Scan("orders", "o_orderkey", "o_custkey", "o_orderdate").Named("q8 scan orders").
		Prune("o_orderdate", day(lo), day(hi)).
		Where(plan.Between(col("o_orderdate"), lo, hi), 0.304).
		Join(plan.JoinSemi, custHT, keys("o_custkey"), nil, 0.2, 20).
		Select(16, keep("o_orderkey"), plan.As("o_year", plan.Year(col("o_orderdate"))))
	ordHT := shuffleBuild(b, ord, "q8 build orders", "o_orderkey")

	part := b.Scan("part", "p_partkey", "p_type").Named("q8 scan part").
		Where(plan.Eq(col("p_type"), plan.Str("ECONOMY ANODIZED STEEL")), 1.0/150).
		Select(8, plan.Keep("p_partkey")...)
	partHT := broadcastBuild(b, part, "q8 build part", "p_partkey")
	n2 := b.Scan("nation", "n_nationkey", "n_name").Named("q8 scan nation n2")
	n2HT := broadcastBuild(b, n2, "q8 build nation n2", "n_nationkey")
	supp := b.Scan("supplier", "s_suppkey", "s_nationkey").Named("q8 scan supplier").
		Join(plan.JoinInner, n2HT, keys("s_nationkey"), keys("n_name"), 1, 27).
		Select(19, keep("s_suppkey"), plan.As("nation", col("n_name")))
	suppHT := broadcastBuild(b, supp, "q8 build supplier", "s_suppkey")

	li := b.Scan("lineitem", "l_orderkey", "l_partkey", "l_suppkey", "l_extendedprice", "l_discount").Named("q8 scan lineitem").
		Join(plan.JoinSemi, partHT, keys("l_partkey"), nil, 1.0/150, 40).
		Join(plan.JoinInner, suppHT, keys("l_suppkey"), keys("nation"), 1, 51).
		Shuffle("l_orderkey")
	group := keys("o_year")
	aggs := []plan.Agg{
		plan.Sum("brazil_volume", plan.Case(plan.Eq(col("nation"), plan.Str("BRAZIL")), discPrice(), plan.Dec("0.0000"))),
		plan.Sum("total_volume", discPrice()),
	}
	part2 := b.From(li).Named("q8 probe orders").
		Join(plan.JoinInner, ordHT, keys("l_orderkey"), keys("o_year"), 0.061, 59).
		Partial(2, 24, group, aggs...).
		Gather()
	b.From(part2).Named("q8 final").
		Final(2, 24, group, aggs...).
		Select(16, keep("o_year"), plan.As("mkt_share", plan.Div(col("brazil_volume"), col("total_volume")))).
		Sort("o_year").
		Output(q08Cols...)
}
