package queries

import "gostachio/plan"

var q19Cols = []string{"revenue"}

// q19, discounted revenue (Brand#12/#23/#34, quantities 1/10/20). The
// disjunction is split: its part-only terms select the parts (0.24%,
// broadcast with brand, size and container), its terms common to all three
// branches (ship mode AIR/AIR REG, DELIVER IN PERSON, quantity within
// 1..30) pre-filter lineitem (4.3%); after the join the full disjunction
// is evaluated. One sum, gathered.
func q19(b *plan.Builder, sf float64) {
	branch := func(brand string, containers []string, qty int64, size int64) (partTerm, qtyTerm plan.Expr) {
		partTerm = plan.And(plan.Eq(col("p_brand"), plan.Str(brand)),
			plan.In(col("p_container"), plan.Strs(containers...)...),
			plan.Between(col("p_size"), plan.Int(1), plan.Int(size)))
		qtyTerm = plan.Between(col("l_quantity"), plan.Int(qty), plan.Int(qty+10))
		return partTerm, qtyTerm
	}
	p1, q1 := branch("Brand#12", []string{"SM CASE", "SM BOX", "SM PACK", "SM PKG"}, 1, 5)
	p2, q2 := branch("Brand#23", []string{"MED BAG", "MED BOX", "MED PKG", "MED PACK"}, 10, 10)
	p3, q3 := branch("Brand#34", []string{"LG CASE", "LG BOX", "LG PACK", "LG PKG"}, 20, 15)

	part := b.Scan("part", "p_partkey", "p_brand", "p_size", "p_container").Named("q19 scan part").
		Where(plan.Or(p1, p2, p3), 0.0024)
	partHT := broadcastBuild(b, part, "q19 build part", "p_partkey")

	li := b.Scan("lineitem", "l_partkey", "l_quantity", "l_extendedprice", "l_discount", "l_shipinstruct", "l_shipmode").
		Named("q19 scan lineitem").
		Where(plan.And(
			plan.In(col("l_shipmode"), plan.Strs("AIR", "AIR REG")...),
			plan.Eq(col("l_shipinstruct"), plan.Str("DELIVER IN PERSON")),
			plan.Between(col("l_quantity"), plan.Int(1), plan.Int(30))), 0.043).
		Join(plan.JoinInner, partHT, keys("l_partkey"), keys("p_brand", "p_size", "p_container"), 0.0024, 80).
		Where(plan.Or(plan.And(p1, q1), plan.And(p2, q2), plan.And(p3, q3)), 0.3)
	agg := plan.Sum("revenue", discPrice())
	part2 := li.Partial(1, 8, nil, agg).Gather()
	b.From(part2).Named("q19 final").
		Final(1, 8, nil, agg).
		Output(q19Cols...)
}
