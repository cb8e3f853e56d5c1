package queries

import "gostachio/plan"

var q06Cols = []string{"revenue"}

// q06, forecasting revenue change (1994, discount 0.06 +- 0.01, quantity
// < 24): 1.90% of lineitem; one sum, gathered.
func q06(b *plan.Builder, sf float64) {
	lo, hi := plan.Date("1994-01-01"), plan.Date("1995-01-01")
	agg := plan.Sum("revenue", plan.Mul(col("l_extendedprice"), col("l_discount")))
	li := b.Scan("lineitem", "l_quantity", "l_extendedprice", "l_discount", "l_shipdate").Named("q6 scan lineitem").
		Prune("l_shipdate", day(lo), day(hi)-1).
		Where(plan.And(
			plan.Ge(col("l_shipdate"), lo), plan.Lt(col("l_shipdate"), hi),
			plan.Between(col("l_discount"), plan.Dec("0.05"), plan.Dec("0.07")),
			plan.Lt(col("l_quantity"), plan.Int(24))), 0.0190).
		Partial(1, 8, nil, agg).
		Gather()
	b.From(li).Named("q6 final").Final(1, 8, nil, agg).Output(q06Cols...)
}
