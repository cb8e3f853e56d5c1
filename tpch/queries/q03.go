package queries

import "gostachio/plan"

var q03Cols = []string{"l_orderkey", "revenue", "o_orderdate", "o_shippriority"}

// q03, shipping priority (segment BUILDING, date 1995-03-15): BUILDING
// customers (1/5) broadcast; orders before the date (48.6%) of those
// customers shuffled on o_orderkey and built; lineitems shipped after the
// date (54.0%) shuffled on l_orderkey probe them (0.94% match: only orders
// of the 121 days before the date still ship after it). 11,620 groups at
// SF1, aggregated per device (partitioned on l_orderkey), top 10 per device
// then gathered for the final top 10.
func q03(b *plan.Builder, sf float64) {
	cut := plan.Date("1995-03-15")
	cust := b.Scan("customer", "c_custkey", "c_mktsegment").Named("q3 scan customer").
		Where(plan.Eq(col("c_mktsegment"), plan.Str("BUILDING")), 0.2).
		Select(8, plan.Keep("c_custkey")...)
	custHT := broadcastBuild(b, cust, "q3 build customer", "c_custkey")

	ord := b.Scan("orders", "o_orderkey", "o_custkey", "o_orderdate", "o_shippriority").Named("q3 scan orders").
		Prune("o_orderdate", minDay, day(cut)-1).
		Where(plan.Lt(col("o_orderdate"), cut), 0.486).
		Join(plan.JoinSemi, custHT, keys("o_custkey"), nil, 0.2, 24).
		Select(16, plan.Keep("o_orderkey", "o_orderdate", "o_shippriority")...)
	ordHT := shuffleBuild(b, ord, "q3 build orders", "o_orderkey")

	li := b.Scan("lineitem", "l_orderkey", "l_extendedprice", "l_discount", "l_shipdate").Named("q3 scan lineitem").
		Prune("l_shipdate", day(cut)+1, maxDay).
		Where(plan.Gt(col("l_shipdate"), cut), 0.540).
		Select(16, append(plan.Keep("l_orderkey"), plan.As("volume", discPrice()))...).
		Shuffle("l_orderkey")

	groups := scaled(11620, sf)
	group := keys("l_orderkey", "o_orderdate", "o_shippriority")
	agg := plan.Sum("revenue", col("volume"))
	part := b.From(li).Named("q3 probe orders").
		Join(plan.JoinInner, ordHT, keys("l_orderkey"), keys("o_orderdate", "o_shippriority"), 0.0094, 24).
		Partial(groups, 24, group, agg).
		Shuffle("l_orderkey")
	top := b.From(part).Named("q3 final").
		Final(groups, 24, group, agg).
		TopK(10, "revenue desc", "o_orderdate").
		Gather()
	b.From(top).Named("q3 result").
		TopK(10, "revenue desc", "o_orderdate").
		Output(q03Cols...)
}
