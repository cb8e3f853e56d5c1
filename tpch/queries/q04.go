package queries

import "gostachio/plan"

var q04Cols = []string{"o_orderpriority", "order_count"}

// q04, order priority checking (1993-07-01 + 3 months). Decorrelation:
// EXISTS (a late lineitem of the order) is a semi join of the quarter's
// orders (3.8%) on a hash table of the late lineitems' order keys (63% of
// lineitem; duplicates per order are harmless to a semi join), both sides
// shuffled on the order key; 92% of the orders have a late line.
func q04(b *plan.Builder, sf float64) {
	lo, hi := plan.Date("1993-07-01"), plan.DateAdd("1993-07-01", 0, 3, 0)
	late := b.Scan("lineitem", "l_orderkey", "l_commitdate", "l_receiptdate").Named("q4 scan lineitem").
		Where(plan.Lt(col("l_commitdate"), col("l_receiptdate")), 0.63).
		Select(8, plan.Keep("l_orderkey")...)
	// 2.52 late lines an order (4 lines, 63% late), 91.6% of the orders
	// with one (1 − E[0.37^n], n uniform in 1..7): 0.364 keys a row.
	lateHT := shuffleBuildRepeating(b, late, "q4 build late orders", 0.364, "l_orderkey")

	ord := b.Scan("orders", "o_orderkey", "o_orderdate", "o_orderpriority").Named("q4 scan orders").
		Prune("o_orderdate", day(lo), day(hi)-1).
		Where(plan.And(plan.Ge(col("o_orderdate"), lo), plan.Lt(col("o_orderdate"), hi)), 0.038).
		Select(20, plan.Keep("o_orderkey", "o_orderpriority")...).
		Shuffle("o_orderkey")
	group := keys("o_orderpriority")
	agg := plan.Count("order_count")
	part := b.From(ord).Named("q4 exists late line").
		Join(plan.JoinSemi, lateHT, keys("o_orderkey"), nil, 0.92, 20).
		Partial(5, 20, group, agg).
		Gather()
	b.From(part).Named("q4 final").
		Final(5, 20, group, agg).
		Sort("o_orderpriority").
		Output(q04Cols...)
}
