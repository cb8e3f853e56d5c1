package queries

import "gostachio/plan"

var q09Cols = []string{"nation", "o_year", "sum_profit"}

// q09, product type profit measure (green): parts named %green% (5.4%)
// broadcast; their partsupp rows are shuffled on (ps_partkey, ps_suppkey)
// and built; their lineitems, shuffled on (l_partkey, l_suppkey), pick up
// ps_supplycost there and the supplier's nation (suppliers with n_name,
// broadcast), then are shuffled again on l_orderkey to meet every order's
// o_year (all orders, shuffled on o_orderkey). 175 groups, gathered.
func q09(b *plan.Builder, sf float64) {
	part := b.Scan("part", "p_partkey", "p_name").Named("q9 scan part").
		Where(plan.Like(col("p_name"), "%green%"), 0.054).
		Select(8, plan.Keep("p_partkey")...)
	partHT := broadcastBuild(b, part, "q9 build part", "p_partkey")
	nation := b.Scan("nation", "n_nationkey", "n_name").Named("q9 scan nation")
	nationHT := broadcastBuild(b, nation, "q9 build nation", "n_nationkey")
	supp := b.Scan("supplier", "s_suppkey", "s_nationkey").Named("q9 scan supplier").
		Join(plan.JoinInner, nationHT, keys("s_nationkey"), keys("n_name"), 1, 27).
		Select(19, keep("s_suppkey"), plan.As("nation", col("n_name")))
	suppHT := broadcastBuild(b, supp, "q9 build supplier", "s_suppkey")

	ps := b.Scan("partsupp", "ps_partkey", "ps_suppkey", "ps_supplycost").Named("q9 scan partsupp").
		Join(plan.JoinSemi, partHT, keys("ps_partkey"), nil, 0.054, 24)
	psHT := shuffleBuild(b, ps, "q9 build partsupp", "ps_partkey", "ps_suppkey")
	ord := b.Scan("orders", "o_orderkey", "o_orderdate").Named("q9 scan orders").
		Select(16, keep("o_orderkey"), plan.As("o_year", plan.Year(col("o_orderdate"))))
	ordHT := shuffleBuild(b, ord, "q9 build orders", "o_orderkey")

	li := b.Scan("lineitem", "l_orderkey", "l_partkey", "l_suppkey", "l_quantity", "l_extendedprice", "l_discount").
		Named("q9 scan lineitem").
		Join(plan.JoinSemi, partHT, keys("l_partkey"), nil, 0.054, 48).
		Shuffle("l_partkey", "l_suppkey")
	amount := plan.Sub(discPrice(), plan.Mul(col("ps_supplycost"), col("l_quantity")))
	costed := b.From(li).Named("q9 probe partsupp").
		Join(plan.JoinInner, psHT, keys("l_partkey", "l_suppkey"), keys("ps_supplycost"), 1, 56).
		Join(plan.JoinInner, suppHT, keys("l_suppkey"), keys("nation"), 1, 67).
		Select(27, keep("l_orderkey"), keep("nation"), plan.As("amount", amount)).
		Shuffle("l_orderkey")
	group := keys("nation", "o_year")
	agg := plan.Sum("sum_profit", col("amount"))
	part2 := b.From(costed).Named("q9 probe orders").
		Join(plan.JoinInner, ordHT, keys("l_orderkey"), keys("o_year"), 1, 35).
		Partial(175, 27, group, agg).
		Gather()
	b.From(part2).Named("q9 final").
		Final(175, 27, group, agg).
		Sort("nation", "o_year desc").
		Output(q09Cols...)
}
