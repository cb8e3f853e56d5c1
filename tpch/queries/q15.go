package queries

import "gostachio/plan"

var q15Cols = []string{"s_suppkey", "s_name", "s_address", "s_phone", "total_revenue"}

// q15, top supplier (1996-01-01 + 3 months). The view revenue0 is a sum
// per l_suppkey over the quarter's lineitems (3.8%), shuffled on it and
// kept on each device. Decorrelation: the scalar max(total_revenue) is a
// no-key Max over the view, gathered, finalized, broadcast and built with
// no keys; the view cross-joins it and keeps total_revenue = max (the top
// supplier(s)), broadcast and probed by the supplier scan.
func q15(b *plan.Builder, sf float64) {
	lo, hi := plan.Date("1996-01-01"), plan.DateAdd("1996-01-01", 0, 3, 0)
	groups := scaled(10000, sf)
	group := keys("l_suppkey")
	agg := plan.Sum("total_revenue", discPrice())
	li := b.Scan("lineitem", "l_suppkey", "l_extendedprice", "l_discount", "l_shipdate").Named("q15 scan lineitem").
		Prune("l_shipdate", day(lo), day(hi)-1).
		Where(plan.And(plan.Ge(col("l_shipdate"), lo), plan.Lt(col("l_shipdate"), hi)), 0.038).
		Partial(groups, 16, group, agg).
		Shuffle("l_suppkey")
	revenue0 := b.From(li).Named("q15 revenue0").
		Final(groups, 16, group, agg).
		Done()

	maxAgg := plan.Max("max_revenue", col("total_revenue"))
	mx := b.From(revenue0).Named("q15 max").
		Partial(1, 8, nil, maxAgg).
		Gather()
	mxB := b.From(mx).Named("q15 max final").
		Final(1, 8, nil, maxAgg).
		Broadcast()
	mxHT := b.From(mxB).Named("q15 build max").HashBuild()

	top := b.From(revenue0).Named("q15 top suppliers").
		Join(plan.JoinInner, mxHT, nil, keys("max_revenue"), 1, 24).
		Where(plan.Eq(col("total_revenue"), col("max_revenue")), frac(1, 10000, sf)).
		Select(16, plan.Keep("l_suppkey", "total_revenue")...).
		Broadcast()
	topHT := b.From(top).Named("q15 build top suppliers").HashBuild("l_suppkey")
	supp := b.Scan("supplier", "s_suppkey", "s_name", "s_address", "s_phone").Named("q15 scan supplier").
		Join(plan.JoinInner, topHT, keys("s_suppkey"), keys("total_revenue"), frac(1, 10000, sf), 83).
		Gather()
	b.From(supp).Named("q15 result").
		Sort("s_suppkey").
		Output(q15Cols...)
}
