package queries

import "gostachio/plan"

var q10Cols = []string{"c_custkey", "c_name", "revenue", "c_acctbal", "n_name", "c_address", "c_phone", "c_comment"}

// q10, returned item reporting (1993-10-01 + 3 months): the quarter's
// orders (3.8%) shuffled on o_orderkey; returned lineitems (24.7%)
// shuffled on l_orderkey probe them and sum revenue per o_custkey
// (shuffled on it: 37,967 customers at SF1). The grouping's other columns
// are functions of c_custkey, so the top 20 by revenue is taken before
// reading customer: per device, then gathered; those 20 rows are broadcast
// and the customer scan probes them (then nation for n_name). Ties on
// revenue are broken by c_custkey.
func q10(b *plan.Builder, sf float64) {
	lo, hi := plan.Date("1993-10-01"), plan.DateAdd("1993-10-01", 0, 3, 0)
	ord := b.Scan("orders", "o_orderkey", "o_custkey", "o_orderdate").Named("q10 scan orders").
		Prune("o_orderdate", day(lo), day(hi)-1).
		Where(plan.And(plan.Ge(col("o_orderdate"), lo), plan.Lt(col("o_orderdate"), hi)), 0.038).
		Select(16, plan.Keep("o_orderkey", "o_custkey")...)
	ordHT := shuffleBuild(b, ord, "q10 build orders", "o_orderkey")
	li := b.Scan("lineitem", "l_orderkey", "l_extendedprice", "l_discount", "l_returnflag").Named("q10 scan lineitem").
		Where(plan.Eq(col("l_returnflag"), plan.Str("R")), 0.247).
		Select(16, append(plan.Keep("l_orderkey"), plan.As("volume", discPrice()))...).
		Shuffle("l_orderkey")

	groups := scaled(37967, sf)
	group := keys("o_custkey")
	agg := plan.Sum("revenue", col("volume"))
	perCust := b.From(li).Named("q10 probe orders").
		Join(plan.JoinInner, ordHT, keys("l_orderkey"), keys("o_custkey"), 0.038, 24).
		Partial(groups, 16, group, agg).
		Shuffle("o_custkey")
	top := b.From(perCust).Named("q10 final").
		Final(groups, 16, group, agg).
		TopK(20, "revenue desc", "o_custkey").
		Gather()
	top20 := b.From(top).Named("q10 top 20").
		TopK(20, "revenue desc", "o_custkey").
		Broadcast()
	topHT := b.From(top20).Named("q10 build top 20").HashBuild("o_custkey")

	nation := b.Scan("nation", "n_nationkey", "n_name").Named("q10 scan nation")
	nationHT := broadcastBuild(b, nation, "q10 build nation", "n_nationkey")
	cust := b.Scan("customer", "c_custkey", "c_name", "c_address", "c_nationkey", "c_phone", "c_acctbal", "c_comment").
		Named("q10 scan customer").
		Join(plan.JoinInner, topHT, keys("c_custkey"), keys("revenue"), frac(20, 150000, sf), 175).
		Join(plan.JoinInner, nationHT, keys("c_nationkey"), keys("n_name"), 1, 186).
		Gather()
	b.From(cust).Named("q10 result").
		Sort("revenue desc", "c_custkey").
		Output(q10Cols...)
}
