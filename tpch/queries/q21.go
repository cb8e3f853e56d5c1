package queries

import (
	"math"

	"gostachio/plan"
)

var q21Cols = []string{"s_name", "numwait"}

// q21, suppliers who kept orders waiting (SAUDI ARABIA). Decorrelation:
// for a late line l1 of an order, EXISTS (a line of another supplier) holds
// iff the order has more than one distinct supplier, and NOT EXISTS (a late
// line of another supplier) iff l1's supplier is the order's only late
// supplier. Both are per-order aggregates over all of lineitem (shuffled
// on l_orderkey): min and max l_suppkey (> 1 supplier iff they differ) and
// min and max l_suppkey over late lines only (exactly one late supplier
// iff they are equal; an order without late lines gets MaxInt64 and 0,
// never equal), kept where both hold and built. The Saudi suppliers' late
// lines (63% x 4%), shuffled on l_orderkey, semi-join that and the 'F'
// orders (48.7%, shuffled on o_orderkey), then count per s_name.
func q21(b *plan.Builder, sf float64) {
	nation := b.Scan("nation", "n_nationkey", "n_name").Named("q21 scan nation").
		Where(plan.Eq(col("n_name"), plan.Str("SAUDI ARABIA")), 0.04).
		Select(8, plan.Keep("n_nationkey")...)
	nationHT := broadcastBuild(b, nation, "q21 build nation", "n_nationkey")
	supp := b.Scan("supplier", "s_suppkey", "s_name", "s_nationkey").Named("q21 scan supplier").
		Join(plan.JoinSemi, nationHT, keys("s_nationkey"), nil, 0.04, 38).
		Select(30, plan.Keep("s_suppkey", "s_name")...)
	suppHT := broadcastBuild(b, supp, "q21 build supplier", "s_suppkey")

	ord := b.Scan("orders", "o_orderkey", "o_orderstatus").Named("q21 scan orders").
		Where(plan.Eq(col("o_orderstatus"), plan.Str("F")), 0.487).
		Select(8, plan.Keep("o_orderkey")...)
	ordHT := shuffleBuild(b, ord, "q21 build orders", "o_orderkey")

	late := plan.Gt(col("l_receiptdate"), col("l_commitdate"))
	orders := scaled(1500000, sf)
	group := keys("l_orderkey")
	stats := []plan.Agg{
		plan.Min("supp_min", col("l_suppkey")),
		plan.Max("supp_max", col("l_suppkey")),
		plan.Min("late_min", plan.Case(late, col("l_suppkey"), plan.Int(math.MaxInt64))),
		plan.Max("late_max", plan.Case(late, col("l_suppkey"), plan.Int(0))),
	}
	st := b.Scan("lineitem", "l_orderkey", "l_suppkey", "l_commitdate", "l_receiptdate").Named("q21 scan lineitem suppliers").
		Partial(orders, 40, group, stats...).
		Shuffle("l_orderkey")
	stHT := b.From(st).Named("q21 build waiting orders").
		Final(orders, 40, group, stats...).
		Where(plan.And(plan.Ne(col("supp_min"), col("supp_max")), plan.Eq(col("late_min"), col("late_max"))), 0.2).
		HashBuild("l_orderkey")

	l1 := b.Scan("lineitem", "l_orderkey", "l_suppkey", "l_commitdate", "l_receiptdate").Named("q21 scan lineitem l1").
		Where(late, 0.63).
		Join(plan.JoinInner, suppHT, keys("l_suppkey"), keys("s_name"), 0.04, 54).
		Select(34, plan.Keep("l_orderkey", "s_name")...).
		Shuffle("l_orderkey")
	groups := scaled(411, sf)
	agg := plan.Count("numwait")
	part := b.From(l1).Named("q21 probe orders").
		Join(plan.JoinSemi, ordHT, keys("l_orderkey"), nil, 0.487, 34).
		Join(plan.JoinSemi, stHT, keys("l_orderkey"), nil, 0.1, 34).
		Partial(groups, 34, keys("s_name"), agg).
		Gather()
	b.From(part).Named("q21 final").
		Final(groups, 34, keys("s_name"), agg).
		TopK(100, "numwait desc", "s_name").
		Output(q21Cols...)
}
