package queries

import "gostachio/plan"

var q02Cols = []string{"s_acctbal", "s_name", "n_name", "p_partkey", "p_mfgr", "s_address", "s_phone", "s_comment"}

// q02, minimum cost supplier (size 15, type '%BRASS', region EUROPE).
// Decorrelation: the subquery's min(ps_supplycost) over the part's European
// offers is a Min per ps_partkey over the very rows the outer query joins
// (partsupp of the qualifying parts x European suppliers), so those rows are
// shuffled on ps_partkey, aggregated, and semi-joined back on (ps_partkey,
// ps_supplycost) = (ps_partkey, min_cost). Estimates: parts 1/50 x 1/5 =
// 0.4%, European suppliers 1/5; ~650 parts at SF1 have a European offer,
// ~460 rows reach the top 100.
func q02(b *plan.Builder, sf float64) {
	region := b.Scan("region", "r_regionkey", "r_name").Named("q2 scan region").
		Where(plan.Eq(col("r_name"), plan.Str("EUROPE")), 0.2).
		Select(8, plan.Keep("r_regionkey")...)
	regionHT := broadcastBuild(b, region, "q2 build region", "r_regionkey")

	nation := b.Scan("nation", "n_nationkey", "n_name", "n_regionkey").Named("q2 scan nation").
		Join(plan.JoinSemi, regionHT, keys("n_regionkey"), nil, 0.2, 27).
		Select(19, plan.Keep("n_nationkey", "n_name")...)
	nationHT := broadcastBuild(b, nation, "q2 build nation", "n_nationkey")

	supp := b.Scan("supplier", "s_suppkey", "s_name", "s_address", "s_nationkey", "s_phone", "s_acctbal", "s_comment").
		Named("q2 scan supplier").
		Join(plan.JoinInner, nationHT, keys("s_nationkey"), keys("n_name"), 0.2, 180).
		Select(172, plan.Keep("s_suppkey", "s_name", "s_address", "s_phone", "s_acctbal", "s_comment", "n_name")...)
	suppHT := broadcastBuild(b, supp, "q2 build supplier", "s_suppkey")

	part := b.Scan("part", "p_partkey", "p_mfgr", "p_type", "p_size").Named("q2 scan part").
		Where(plan.And(plan.Eq(col("p_size"), plan.Int(15)), plan.Like(col("p_type"), "%BRASS")), 0.004).
		Select(26, plan.Keep("p_partkey", "p_mfgr")...)
	partHT := broadcastBuild(b, part, "q2 build part", "p_partkey")

	// European offers of the qualifying parts, partitioned by part.
	offers := b.Scan("partsupp", "ps_partkey", "ps_suppkey", "ps_supplycost").Named("q2 scan partsupp").
		Join(plan.JoinSemi, partHT, keys("ps_partkey"), nil, 0.004, 24).
		Join(plan.JoinInner, suppHT, keys("ps_suppkey"), keys("s_name", "s_address", "s_phone", "s_acctbal", "s_comment", "n_name"), 0.2, 188).
		Shuffle("ps_partkey")

	groups := scaled(650, sf)
	minCost := []plan.Agg{plan.Min("min_cost", col("ps_supplycost"))}
	mins := b.From(offers).Named("q2 min cost per part").
		Partial(groups, 16, keys("ps_partkey"), minCost...).
		Shuffle("ps_partkey")
	minHT := b.From(mins).Named("q2 build min cost").
		Final(groups, 16, keys("ps_partkey"), minCost...).
		HashBuild("ps_partkey", "min_cost")

	best := b.From(offers).Named("q2 cheapest offers").
		Join(plan.JoinSemi, minHT, keys("ps_partkey", "ps_supplycost"), nil, 0.7, 188).
		Join(plan.JoinInner, partHT, keys("ps_partkey"), keys("p_partkey", "p_mfgr"), 1, 214).
		TopK(100, "s_acctbal desc", "n_name", "s_name", "p_partkey").
		Gather()
	b.From(best).Named("q2 result").
		TopK(100, "s_acctbal desc", "n_name", "s_name", "p_partkey").
		Output(q02Cols...)
}
