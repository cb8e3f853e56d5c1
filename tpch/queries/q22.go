package queries

import "gostachio/plan"

var q22Cols = []string{"cntrycode", "numcust", "totacctbal"}

// q22, global sales opportunity (codes 13, 31, 23, 29, 30, 18, 17).
// Decorrelation: the scalar avg(c_acctbal) over positive balances of those
// codes is a no-key Avg, gathered, finalized, broadcast and built with no
// keys, cross-joined by the candidate customers; NOT EXISTS (an order of
// the customer) is an anti join on all orders' o_custkey (shuffled on it;
// duplicates are harmless), the customers shuffled on c_custkey. 7 groups.
func q22(b *plan.Builder, sf float64) {
	codes := plan.Strs("13", "31", "23", "29", "30", "18", "17")
	code := plan.Substr(col("c_phone"), 1, 2)
	avgAgg := plan.Avg("avg_bal", col("c_acctbal"))
	av := b.Scan("customer", "c_phone", "c_acctbal").Named("q22 scan customer avg").
		Where(plan.And(plan.Gt(col("c_acctbal"), plan.Dec("0.00")), plan.In(code, codes...)), 0.255).
		Partial(1, 16, nil, avgAgg).
		Gather()
	avB := b.From(av).Named("q22 avg final").
		Final(1, 8, nil, avgAgg).
		Broadcast()
	avHT := b.From(avB).Named("q22 build avg").HashBuild()

	ord := b.Scan("orders", "o_custkey").Named("q22 scan orders")
	// 15 orders a customer who orders (two customers in three do).
	ordHT := shuffleBuildRepeating(b, ord, "q22 build orders", 1.0/15, "o_custkey")

	cust := b.Scan("customer", "c_custkey", "c_phone", "c_acctbal").Named("q22 scan customer").
		Select(26, append(plan.Keep("c_custkey", "c_acctbal"), plan.As("cntrycode", code))...).
		Where(plan.In(col("cntrycode"), codes...), 0.28).
		Join(plan.JoinInner, avHT, nil, keys("avg_bal"), 1, 34).
		Where(plan.Gt(col("c_acctbal"), col("avg_bal")), 0.45).
		Select(26, plan.Keep("c_custkey", "cntrycode", "c_acctbal")...).
		Shuffle("c_custkey")
	group := keys("cntrycode")
	aggs := []plan.Agg{plan.Count("numcust"), plan.Sum("totacctbal", col("c_acctbal"))}
	part := b.From(cust).Named("q22 no orders").
		Join(plan.JoinAnti, ordHT, keys("c_custkey"), nil, 0.33, 26).
		Partial(7, 24, group, aggs...).
		Gather()
	b.From(part).Named("q22 final").
		Final(7, 24, group, aggs...).
		Sort("cntrycode").
		Output(q22Cols...)
}
