package queries

import "gostachio/plan"

var q01Cols = []string{"l_returnflag", "l_linestatus", "sum_qty", "sum_base_price", "sum_disc_price",
	"sum_charge", "avg_qty", "avg_price", "avg_disc", "count_order"}

// q01, pricing summary report (delta 90 days): l_shipdate <= 1998-09-02
// keeps 98.6% of lineitem; 4 groups of (returnflag, linestatus), gathered.
func q01(b *plan.Builder, sf float64) {
	cut := plan.DateAdd("1998-12-01", 0, 0, -90)
	group := keys("l_returnflag", "l_linestatus")
	aggs := []plan.Agg{
		plan.Sum("sum_qty", col("l_quantity")),
		plan.Sum("sum_base_price", col("l_extendedprice")),
		plan.Sum("sum_disc_price", discPrice()),
		plan.Sum("sum_charge", plan.Mul(discPrice(), plan.Add(plan.Int(1), col("l_tax")))),
		plan.Avg("avg_qty", col("l_quantity")),
		plan.Avg("avg_price", col("l_extendedprice")),
		plan.Avg("avg_disc", col("l_discount")),
		plan.Count("count_order"),
	}
	li := b.Scan("lineitem", "l_quantity", "l_extendedprice", "l_discount", "l_tax",
		"l_returnflag", "l_linestatus", "l_shipdate").Named("q1 scan lineitem").
		Prune("l_shipdate", minDay, day(cut)).
		Where(plan.Le(col("l_shipdate"), cut), 0.9859).
		Partial(4, 98, group, aggs...).
		Gather()
	b.From(li).Named("q1 final").Final(4, 90, group, aggs...).
		Sort(group...).
		Output(q01Cols...)
}
