package queries

import "gostachio/plan"

var q16Cols = []string{"p_brand", "p_type", "p_size", "supplier_cnt"}

// q16, parts/supplier relationship (Brand#45, MEDIUM POLISHED%, 8 sizes).
// NOT IN (suppliers with Customer...Complaints comments) is an anti join
// on those few suppliers (broadcast). The qualifying parts (14.9%) are
// shuffled on p_partkey and probed by partsupp shuffled on ps_partkey.
// count(distinct ps_suppkey) is two-level grouping: distinct (brand, type,
// size, suppkey) pairs, shuffled on (brand, type, size), finalized, then
// counted per (brand, type, size) and gathered (18,314 groups at SF1;
// bounded by the 30,000 combinations).
func q16(b *plan.Builder, sf float64) {
	complaints := b.Scan("supplier", "s_suppkey", "s_comment").Named("q16 scan supplier").
		Where(plan.Like(col("s_comment"), "%Customer%Complaints%"), 0.0005).
		Select(8, plan.Keep("s_suppkey")...)
	complaintsHT := broadcastBuild(b, complaints, "q16 build complaints", "s_suppkey")

	part := b.Scan("part", "p_partkey", "p_brand", "p_type", "p_size").Named("q16 scan part").
		Where(plan.And(
			plan.Ne(col("p_brand"), plan.Str("Brand#45")),
			plan.NotLike(col("p_type"), "MEDIUM POLISHED%"),
			plan.In(col("p_size"), plan.Ints(49, 14, 23, 45, 19, 3, 36, 9)...)), 0.149)
	partHT := shuffleBuild(b, part, "q16 build part", "p_partkey")

	ps := b.Scan("partsupp", "ps_partkey", "ps_suppkey").Named("q16 scan partsupp").
		Join(plan.JoinAnti, complaintsHT, keys("ps_suppkey"), nil, 0.9995, 16).
		Shuffle("ps_partkey")
	pairs := scaled(118000, sf)
	groups := min(scaled(18314, sf), 30000)
	k4 := keys("p_brand", "p_type", "p_size", "ps_suppkey")
	k3 := keys("p_brand", "p_type", "p_size")
	dedup := plan.Count("offers")
	cnt := plan.Count("supplier_cnt")
	distinct := b.From(ps).Named("q16 probe part").
		Join(plan.JoinInner, partHT, keys("ps_partkey"), keys("p_brand", "p_type", "p_size"), 0.149, 56).
		Partial(pairs, 48, k4, dedup).
		Shuffle(k3...)
	counted := b.From(distinct).Named("q16 distinct suppliers").
		Final(pairs, 48, k4, dedup).
		Partial(groups, 40, k3, cnt).
		Gather()
	b.From(counted).Named("q16 final").
		Final(groups, 40, k3, cnt).
		Sort("supplier_cnt desc", "p_brand", "p_type", "p_size").
		Output(q16Cols...)
}
