package queries

import "gostachio/plan"

var q14Cols = []string{"promo_revenue"}

// q14, promotion effect (1995-09-01 + 1 month): the month's lineitems
// (1.25%) shuffled on l_partkey meet all of part shuffled on p_partkey;
// two sums (PROMO% and all), gathered, divided.
func q14(b *plan.Builder, sf float64) {
	lo, hi := plan.Date("1995-09-01"), plan.DateAdd("1995-09-01", 0, 1, 0)
	li := b.Scan("lineitem", "l_partkey", "l_extendedprice", "l_discount", "l_shipdate").Named("q14 scan lineitem").
		Prune("l_shipdate", day(lo), day(hi)-1).
		Where(plan.And(plan.Ge(col("l_shipdate"), lo), plan.Lt(col("l_shipdate"), hi)), 0.0125).
		Select(16, append(plan.Keep("l_partkey"), plan.As("volume", discPrice()))...).
		Shuffle("l_partkey")
	part := b.Scan("part", "p_partkey", "p_type").Named("q14 scan part")
	partHT := shuffleBuild(b, part, "q14 build part", "p_partkey")

	aggs := []plan.Agg{
		plan.Sum("promo_volume", plan.Case(plan.Like(col("p_type"), "PROMO%"), col("volume"), plan.Dec("0.0000"))),
		plan.Sum("total_volume", col("volume")),
	}
	part2 := b.From(li).Named("q14 probe part").
		Join(plan.JoinInner, partHT, keys("l_partkey"), keys("p_type"), 1, 41).
		Partial(1, 16, nil, aggs...).
		Gather()
	b.From(part2).Named("q14 final").
		Final(1, 16, nil, aggs...).
		Select(8, plan.As("promo_revenue",
			plan.Div(plan.Mul(plan.Dec("100.00"), col("promo_volume")), col("total_volume")))).
		Output(q14Cols...)
}
