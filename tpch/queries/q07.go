package queries

import "gostachio/plan"

var q07Cols = []string{"supp_nation", "cust_nation", "l_year", "revenue"}

// q07, volume shipping (FRANCE, GERMANY): the two nations (2/25) broadcast;
// their suppliers carry supp_nation and their customers cust_nation
// (n_name renamed, nation being used twice); orders of those customers
// (8%) shuffled on o_orderkey; lineitems shipped in 1995-1996 (30.4%) of
// those suppliers (8%) shuffled on l_orderkey probe them; the nation pair
// must differ (half of the matches).
func q07(b *plan.Builder, sf float64) {
	lo, hi := plan.Date("1995-01-01"), plan.Date("1996-12-31")
	nation := b.Scan("nation", "n_nationkey", "n_name").Named("q7 scan nation").
		Where(plan.In(col("n_name"), plan.Strs("FRANCE", "GERMANY")...), 0.08)
	nationHT := broadcastBuild(b, nation, "q7 build nation", "n_nationkey")

	supp := b.Scan("supplier", "s_suppkey", "s_nationkey").Named("q7 scan supplier").
		Join(plan.JoinInner, nationHT, keys("s_nationkey"), keys("n_name"), 0.08, 27).
		Select(19, keep("s_suppkey"), plan.As("supp_nation", col("n_name")))
	suppHT := broadcastBuild(b, supp, "q7 build supplier", "s_suppkey")
	cust := b.Scan("customer", "c_custkey", "c_nationkey").Named("q7 scan customer").
		Join(plan.JoinInner, nationHT, keys("c_nationkey"), keys("n_name"), 0.08, 27).
		Select(19, keep("c_custkey"), plan.As("cust_nation", col("n_name")))
	custHT := broadcastBuild(b, cust, "q7 build customer", "c_custkey")

	ord := b.Scan("orders", "o_orderkey", "o_custkey").Named("q7 scan orders").
		Join(plan.JoinInner, custHT, keys("o_custkey"), keys("cust_nation"), 0.08, 27).
		Select(19, plan.Keep("o_orderkey", "cust_nation")...)
	ordHT := shuffleBuild(b, ord, "q7 build orders", "o_orderkey")

	li := b.Scan("lineitem", "l_orderkey", "l_suppkey", "l_extendedprice", "l_discount", "l_shipdate").Named("q7 scan lineitem").
		Prune("l_shipdate", day(lo), day(hi)).
		Where(plan.Between(col("l_shipdate"), lo, hi), 0.304).
		Join(plan.JoinInner, suppHT, keys("l_suppkey"), keys("supp_nation"), 0.08, 47).
		Shuffle("l_orderkey")
	group := keys("supp_nation", "cust_nation", "l_year")
	agg := plan.Sum("revenue", col("volume"))
	pair := func(s, c string) plan.Expr {
		return plan.And(plan.Eq(col("supp_nation"), plan.Str(s)), plan.Eq(col("cust_nation"), plan.Str(c)))
	}
	part := b.From(li).Named("q7 probe orders").
		Join(plan.JoinInner, ordHT, keys("l_orderkey"), keys("cust_nation"), 0.08, 58).
		Where(plan.Or(pair("FRANCE", "GERMANY"), pair("GERMANY", "FRANCE")), 0.5).
		Select(38, keep("supp_nation"), keep("cust_nation"),
			plan.As("l_year", plan.Year(col("l_shipdate"))), plan.As("volume", discPrice())).
		Partial(4, 38, group, agg).
		Gather()
	b.From(part).Named("q7 final").
		Final(4, 38, group, agg).
		Sort(group...).
		Output(q07Cols...)
}
