package queries

import "gostachio/plan"

var q12Cols = []string{"l_shipmode", "high_line_count", "low_line_count"}

// q12, shipping modes and order priority (MAIL, SHIP, 1994): the
// qualifying lineitems (0.52% of lineitem) are the small side: shuffled on
// l_orderkey and built (with l_shipmode); all orders shuffled on
// o_orderkey probe them (2.1% fan-out), then two conditional counts per
// ship mode.
func q12(b *plan.Builder, sf float64) {
	lo, hi := plan.Date("1994-01-01"), plan.Date("1995-01-01")
	li := b.Scan("lineitem", "l_orderkey", "l_shipdate", "l_commitdate", "l_receiptdate", "l_shipmode").Named("q12 scan lineitem").
		Prune("l_receiptdate", day(lo), day(hi)-1).
		Where(plan.And(
			plan.In(col("l_shipmode"), plan.Strs("MAIL", "SHIP")...),
			plan.Lt(col("l_commitdate"), col("l_receiptdate")),
			plan.Lt(col("l_shipdate"), col("l_commitdate")),
			plan.Ge(col("l_receiptdate"), lo), plan.Lt(col("l_receiptdate"), hi)), 0.0052).
		Select(16, plan.Keep("l_orderkey", "l_shipmode")...)
	liHT := shuffleBuild(b, li, "q12 build lineitem", "l_orderkey")

	ord := b.Scan("orders", "o_orderkey", "o_orderpriority").Named("q12 scan orders").
		Shuffle("o_orderkey")
	prio := col("o_orderpriority")
	high := plan.Or(plan.Eq(prio, plan.Str("1-URGENT")), plan.Eq(prio, plan.Str("2-HIGH")))
	low := plan.And(plan.Ne(prio, plan.Str("1-URGENT")), plan.Ne(prio, plan.Str("2-HIGH")))
	group := keys("l_shipmode")
	aggs := []plan.Agg{
		plan.Sum("high_line_count", plan.Case(high, plan.Int(1), plan.Int(0))),
		plan.Sum("low_line_count", plan.Case(low, plan.Int(1), plan.Int(0))),
	}
	part := b.From(ord).Named("q12 probe lineitem").
		Join(plan.JoinInner, liHT, keys("o_orderkey"), keys("l_shipmode"), 0.0207, 29).
		Partial(2, 24, group, aggs...).
		Gather()
	b.From(part).Named("q12 final").
		Final(2, 24, group, aggs...).
		Sort("l_shipmode").
		Output(q12Cols...)
}
