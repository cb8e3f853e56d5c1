package queries

import "gostachio/plan"

var q17Cols = []string{"avg_yearly"}

// q17, small-quantity-order revenue (Brand#23, MED BOX): the parts (0.1%)
// broadcast; their lineitems shuffled on l_partkey. Decorrelation: the
// correlated 0.2 * avg(l_quantity) per part is a sum and a count per
// l_partkey over the same rows, finalized and built on each device, and
// joined back; l_quantity < 0.2 * sum/count is evaluated exactly as
// 5 * l_quantity * count < sum. ~10% of the lines qualify.
func q17(b *plan.Builder, sf float64) {
	part := b.Scan("part", "p_partkey", "p_brand", "p_container").Named("q17 scan part").
		Where(plan.And(plan.Eq(col("p_brand"), plan.Str("Brand#23")), plan.Eq(col("p_container"), plan.Str("MED BOX"))), 0.001).
		Select(8, plan.Keep("p_partkey")...)
	partHT := broadcastBuild(b, part, "q17 build part", "p_partkey")
	li := b.Scan("lineitem", "l_partkey", "l_quantity", "l_extendedprice").Named("q17 scan lineitem").
		Join(plan.JoinSemi, partHT, keys("l_partkey"), nil, 0.001, 24).
		Shuffle("l_partkey")

	groups := scaled(200, sf)
	group := keys("l_partkey")
	stats := []plan.Agg{plan.Sum("part_qty", col("l_quantity")), plan.Count("part_lines")}
	st := b.From(li).Named("q17 quantity per part").
		Partial(groups, 24, group, stats...).
		Shuffle("l_partkey")
	stHT := b.From(st).Named("q17 build quantity per part").
		Final(groups, 24, group, stats...).
		HashBuild("l_partkey")

	sum := plan.Sum("sum_price", col("l_extendedprice"))
	small := plan.Lt(plan.Mul(plan.Mul(col("l_quantity"), plan.Int(5)), col("part_lines")), col("part_qty"))
	part2 := b.From(li).Named("q17 small orders").
		Join(plan.JoinInner, stHT, keys("l_partkey"), keys("part_qty", "part_lines"), 1, 40).
		Where(small, 0.1).
		Partial(1, 8, nil, sum).
		Gather()
	b.From(part2).Named("q17 final").
		Final(1, 8, nil, sum).
		Select(8, plan.As("avg_yearly", plan.Div(col("sum_price"), plan.Dec("7.0")))).
		Output(q17Cols...)
}
