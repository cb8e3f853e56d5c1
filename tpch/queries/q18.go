package queries

import "gostachio/plan"

var q18Cols = []string{"c_name", "c_custkey", "o_orderkey", "o_orderdate", "o_totalprice", "sum"}

// q18, large volume customer (quantity 300). Decorrelation: IN (orders
// whose lines sum above 300) is a sum of l_quantity per l_orderkey
// (shuffled on it), kept where > 300 (57 orders at SF1), broadcast and
// built; the orders scan joins it (carrying the sum, which is the
// query's sum(l_quantity): the group holds exactly the order's lines), the
// few matches are broadcast and probed by the customer scan for c_name.
func q18(b *plan.Builder, sf float64) {
	groups := scaled(1500000, sf)
	group := keys("l_orderkey")
	agg := plan.Sum("sum", col("l_quantity"))
	li := b.Scan("lineitem", "l_orderkey", "l_quantity").Named("q18 scan lineitem").
		Partial(groups, 16, group, agg).
		Shuffle("l_orderkey")
	big := b.From(li).Named("q18 large orders").
		Final(groups, 16, group, agg).
		Where(plan.Gt(col("sum"), plan.Int(300)), 3.8e-5).
		Broadcast()
	bigHT := b.From(big).Named("q18 build large orders").HashBuild("l_orderkey")

	ord := b.Scan("orders", "o_orderkey", "o_custkey", "o_orderdate", "o_totalprice").Named("q18 scan orders").
		Join(plan.JoinInner, bigHT, keys("o_orderkey"), keys("sum"), 3.8e-5, 36)
	ordHT := broadcastBuild(b, ord, "q18 build orders", "o_custkey")
	cust := b.Scan("customer", "c_custkey", "c_name").Named("q18 scan customer").
		Join(plan.JoinInner, ordHT, keys("c_custkey"), keys("o_orderkey", "o_orderdate", "o_totalprice", "sum"), 3.8e-4, 58).
		Gather()
	b.From(cust).Named("q18 result").
		TopK(100, "o_totalprice desc", "o_orderdate").
		Output(q18Cols...)
}
