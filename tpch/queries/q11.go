package queries

import "gostachio/plan"

var q11Cols = []string{"ps_partkey", "value"}

// q11, important stock identification (GERMANY, fraction 0.0001/SF).
// German suppliers (1/25) broadcast; their partsupp rows sum value per
// ps_partkey (shuffled on it; ~29,800 parts at SF1), kept on each device.
// Decorrelation: the scalar subquery (the total over the same rows) is the
// no-key sum of those per-part sums, gathered, finalized, broadcast and
// built with no keys; every part row cross-joins it. The HAVING test
// value > total * 0.0001/SF is evaluated as value / total > 0.0001/SF
// (float64; exact when the two sides are equal, the only delicate case).
func q11(b *plan.Builder, sf float64) {
	nation := b.Scan("nation", "n_nationkey", "n_name").Named("q11 scan nation").
		Where(plan.Eq(col("n_name"), plan.Str("GERMANY")), 0.04).
		Select(8, plan.Keep("n_nationkey")...)
	nationHT := broadcastBuild(b, nation, "q11 build nation", "n_nationkey")
	supp := b.Scan("supplier", "s_suppkey", "s_nationkey").Named("q11 scan supplier").
		Join(plan.JoinSemi, nationHT, keys("s_nationkey"), nil, 0.04, 16).
		Select(8, plan.Keep("s_suppkey")...)
	suppHT := broadcastBuild(b, supp, "q11 build supplier", "s_suppkey")

	groups := scaled(29818, sf)
	group := keys("ps_partkey")
	agg := plan.Sum("value", plan.Mul(col("ps_supplycost"), col("ps_availqty")))
	ps := b.Scan("partsupp", "ps_partkey", "ps_suppkey", "ps_availqty", "ps_supplycost").Named("q11 scan partsupp").
		Join(plan.JoinSemi, suppHT, keys("ps_suppkey"), nil, 0.04, 28).
		Partial(groups, 16, group, agg).
		Shuffle("ps_partkey")
	perPart := b.From(ps).Named("q11 value per part").
		Final(groups, 16, group, agg).
		Done()

	totalAgg := plan.Sum("total_value", col("value"))
	total := b.From(perPart).Named("q11 total").
		Partial(1, 8, nil, totalAgg).
		Gather()
	totalB := b.From(total).Named("q11 total final").
		Final(1, 8, nil, totalAgg).
		Broadcast()
	totalHT := b.From(totalB).Named("q11 build total").HashBuild()

	res := b.From(perPart).Named("q11 having").
		Join(plan.JoinInner, totalHT, nil, keys("total_value"), 1, 24).
		Where(plan.Gt(plan.Div(col("value"), col("total_value")), plan.Float(0.0001/sf)), 0.035).
		Select(16, plan.Keep("ps_partkey", "value")...).
		Gather()
	b.From(res).Named("q11 result").
		Sort("value desc").
		Output(q11Cols...)
}
