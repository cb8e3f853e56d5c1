package queries

import "gostachio/plan"

var q05Cols = []string{"n_name", "revenue"}

// q05, local supplier volume (ASIA, 1994): ASIA's 5 nations, their
// suppliers and customers (1/5 each) broadcast; 1994 orders (15.2%) of
// those customers carry c_nationkey and are shuffled on o_orderkey;
// lineitems of ASIA suppliers carry s_nationkey, are shuffled on
// l_orderkey, probe the orders, and keep c_nationkey = s_nationkey (1/5).
func q05(b *plan.Builder, sf float64) {
	lo, hi := plan.Date("1994-01-01"), plan.Date("1995-01-01")
	region := b.Scan("region", "r_regionkey", "r_name").Named("q5 scan region").
		Where(plan.Eq(col("r_name"), plan.Str("ASIA")), 0.2).
		Select(8, plan.Keep("r_regionkey")...)
	regionHT := broadcastBuild(b, region, "q5 build region", "r_regionkey")
	nation := b.Scan("nation", "n_nationkey", "n_name", "n_regionkey").Named("q5 scan nation").
		Join(plan.JoinSemi, regionHT, keys("n_regionkey"), nil, 0.2, 27).
		Select(19, plan.Keep("n_nationkey", "n_name")...)
	nationHT := broadcastBuild(b, nation, "q5 build nation", "n_nationkey")

	supp := b.Scan("supplier", "s_suppkey", "s_nationkey").Named("q5 scan supplier").
		Join(plan.JoinSemi, nationHT, keys("s_nationkey"), nil, 0.2, 16)
	suppHT := broadcastBuild(b, supp, "q5 build supplier", "s_suppkey")
	cust := b.Scan("customer", "c_custkey", "c_nationkey").Named("q5 scan customer").
		Join(plan.JoinSemi, nationHT, keys("c_nationkey"), nil, 0.2, 16)
	custHT := broadcastBuild(b, cust, "q5 build customer", "c_custkey")

	ord := b.Scan("orders", "o_orderkey", "o_custkey", "o_orderdate").Named("q5 scan orders").
		Prune("o_orderdate", day(lo), day(hi)-1).
		Where(plan.And(plan.Ge(col("o_orderdate"), lo), plan.Lt(col("o_orderdate"), hi)), 0.152).
		Join(plan.JoinInner, custHT, keys("o_custkey"), keys("c_nationkey"), 0.2, 28).
		Select(16, plan.Keep("o_orderkey", "c_nationkey")...)
	ordHT := shuffleBuild(b, ord, "q5 build orders", "o_orderkey")

	li := b.Scan("lineitem", "l_orderkey", "l_suppkey", "l_extendedprice", "l_discount").Named("q5 scan lineitem").
		Join(plan.JoinInner, suppHT, keys("l_suppkey"), keys("s_nationkey"), 0.2, 40).
		Select(24, append(plan.Keep("l_orderkey", "s_nationkey"), plan.As("volume", discPrice()))...).
		Shuffle("l_orderkey")
	group := keys("n_name")
	agg := plan.Sum("revenue", col("volume"))
	part := b.From(li).Named("q5 probe orders").
		Join(plan.JoinInner, ordHT, keys("l_orderkey"), keys("c_nationkey"), 0.0304, 32).
		Where(plan.Eq(col("s_nationkey"), col("c_nationkey")), 0.2).
		Join(plan.JoinInner, nationHT, keys("s_nationkey"), keys("n_name"), 1, 43).
		Partial(5, 19, group, agg).
		Gather()
	b.From(part).Named("q5 final").
		Final(5, 19, group, agg).
		Sort("revenue desc").
		Output(q05Cols...)
}
