package queries

import "gostachio/plan"

var q13Cols = []string{"c_count", "custdist"}

// q13, customer distribution (special, requests). Decorrelation: the left
// outer join customer -> orders grouped by c_custkey becomes a count of
// qualifying orders per o_custkey (shuffled on it, built), probed by every
// customer (shuffled on c_custkey) with a left outer join: a customer
// without orders carries c_count 0, as count(o_orderkey) over the NULL row
// gives. Then customers are counted per c_count (~42 groups), gathered.
func q13(b *plan.Builder, sf float64) {
	groups := scaled(99996, sf)
	cnt := plan.Count("c_count")
	ord := b.Scan("orders", "o_custkey", "o_comment").Named("q13 scan orders").
		Where(plan.NotLike(col("o_comment"), "%special%requests%"), 0.989).
		Partial(groups, 16, keys("o_custkey"), cnt).
		Shuffle("o_custkey")
	cntHT := b.From(ord).Named("q13 build orders per customer").
		Final(groups, 16, keys("o_custkey"), cnt).
		HashBuild("o_custkey")

	cust := b.Scan("customer", "c_custkey").Named("q13 scan customer").
		Shuffle("c_custkey")
	group := keys("c_count")
	dist := plan.Count("custdist")
	part := b.From(cust).Named("q13 probe counts").
		Join(plan.JoinLeftOuter, cntHT, keys("c_custkey"), keys("c_count"), 1, 16).
		Partial(50, 16, group, dist).
		Gather()
	b.From(part).Named("q13 final").
		Final(50, 16, group, dist).
		Sort("custdist desc", "c_count desc").
		Output(q13Cols...)
}
