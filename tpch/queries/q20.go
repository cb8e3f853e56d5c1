package queries

import "gostachio/plan"

var q20Cols = []string{"s_name", "s_address"}

// q20, potential part promotion (forest, 1994, CANADA). Decorrelation:
// the nested IN subqueries become semi joins. forest% parts (1.09%) are
// broadcast; the correlated 0.5 * sum(l_quantity) is a sum per (l_partkey,
// l_suppkey) over those parts' 1994 lineitems, shuffled on the pair and
// built; their partsupp rows, shuffled on (ps_partkey, ps_suppkey), join it
// (a pair without 1994 lines has a NULL sum and fails the comparison, as
// the inner join drops it) and keep ps_availqty > 0.5 * sum; the surviving
// ps_suppkey values are broadcast and semi-join the CANADA suppliers.
func q20(b *plan.Builder, sf float64) {
	lo, hi := plan.Date("1994-01-01"), plan.Date("1995-01-01")
	part := b.Scan("part", "p_partkey", "p_name").Named("q20 scan part").
		Where(plan.Like(col("p_name"), "forest%"), 0.0109).
		Select(8, plan.Keep("p_partkey")...)
	partHT := broadcastBuild(b, part, "q20 build part", "p_partkey")

	groups := scaled(8700, sf)
	group := keys("l_partkey", "l_suppkey")
	agg := plan.Sum("sum_qty", col("l_quantity"))
	li := b.Scan("lineitem", "l_partkey", "l_suppkey", "l_quantity", "l_shipdate").Named("q20 scan lineitem").
		Prune("l_shipdate", day(lo), day(hi)-1).
		Where(plan.And(plan.Ge(col("l_shipdate"), lo), plan.Lt(col("l_shipdate"), hi)), 0.152).
		Join(plan.JoinSemi, partHT, keys("l_partkey"), nil, 0.0109, 28).
		Partial(groups, 24, group, agg).
		Shuffle(group...)
	sumHT := b.From(li).Named("q20 build quantity per offer").
		Final(groups, 24, group, agg).
		HashBuild(group...)

	ps := b.Scan("partsupp", "ps_partkey", "ps_suppkey", "ps_availqty").Named("q20 scan partsupp").
		Join(plan.JoinSemi, partHT, keys("ps_partkey"), nil, 0.0109, 20).
		Shuffle("ps_partkey", "ps_suppkey")
	avail := b.From(ps).Named("q20 probe quantity").
		Join(plan.JoinInner, sumHT, keys("ps_partkey", "ps_suppkey"), keys("sum_qty"), 0.95, 28).
		Where(plan.Gt(col("ps_availqty"), plan.Mul(plan.Dec("0.5"), col("sum_qty"))), 0.5).
		Select(8, plan.Keep("ps_suppkey")...)
	availHT := broadcastBuild(b, avail, "q20 build suppliers", "ps_suppkey")

	nation := b.Scan("nation", "n_nationkey", "n_name").Named("q20 scan nation").
		Where(plan.Eq(col("n_name"), plan.Str("CANADA")), 0.04).
		Select(8, plan.Keep("n_nationkey")...)
	nationHT := broadcastBuild(b, nation, "q20 build nation", "n_nationkey")
	supp := b.Scan("supplier", "s_suppkey", "s_name", "s_address", "s_nationkey").Named("q20 scan supplier").
		Join(plan.JoinSemi, nationHT, keys("s_nationkey"), nil, 0.04, 67).
		Join(plan.JoinSemi, availHT, keys("s_suppkey"), nil, 0.45, 67).
		Select(51, plan.Keep("s_name", "s_address")...).
		Gather()
	b.From(supp).Named("q20 result").
		Sort("s_name").
		Output(q20Cols...)
}
