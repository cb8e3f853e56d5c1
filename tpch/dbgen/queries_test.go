package dbgen

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TPC-H queries computed with plain loops over generated columns, compared
// with official answers. Money is summed exactly in integer cents (or 10^-4
// and 10^-6 units for products), so the comparison is to the last printed
// digit.

// checkQ1 computes TPC-H Q1 and compares every printed figure exactly.
func checkQ1(t *testing.T, tb *tables, sf string) {
	l := tb.b["lineitem"]
	flag, status := col(l, "l_returnflag"), col(l, "l_linestatus")
	qty, price, disc, tax := col(l, "l_quantity").I64, col(l, "l_extendedprice").I64, col(l, "l_discount").I64, col(l, "l_tax").I64
	ship := col(l, "l_shipdate").I32
	type agg struct{ qty, base, discPrice, charge, count int64 }
	groups := map[string]*agg{}
	cutoff := day(1998, 9, 2)
	for i := 0; i < l.Rows; i++ {
		if ship[i] > cutoff {
			continue
		}
		k := flag.Str(i) + "|" + status.Str(i)
		a := groups[k]
		if a == nil {
			a = &agg{}
			groups[k] = a
		}
		a.qty += qty[i]
		a.base += price[i]
		a.discPrice += price[i] * (100 - disc[i])
		a.charge += price[i] * (100 - disc[i]) * (100 + tax[i])
		a.count++
	}
	want := answer(t, sf, "q01")
	if len(groups) != len(want) {
		t.Fatalf("Q1: %d groups, want %d", len(groups), len(want))
	}
	for _, w := range want {
		a := groups[w[0]+"|"+w[1]]
		if a == nil {
			t.Fatalf("Q1: group %s|%s missing", w[0], w[1])
		}
		got := []string{fixed(a.qty, 2), fixed(a.base, 2), fixed(a.discPrice, 4), fixed(a.charge, 6), fmt.Sprint(a.count)}
		exp := []string{w[2] + ".00", w[3], w[4], w[5], w[9]}
		for i := range got {
			if got[i] != exp[i] {
				t.Errorf("Q1 %s|%s column %d: got %s, official %s", w[0], w[1], i, got[i], exp[i])
			}
		}
	}
}

// checkQ6 computes TPC-H Q6 (revenue forecast) exactly, in 10^-4 units.
func checkQ6(t *testing.T, tb *tables, sf string) {
	l := tb.b["lineitem"]
	qty, price, disc := col(l, "l_quantity").I64, col(l, "l_extendedprice").I64, col(l, "l_discount").I64
	ship := col(l, "l_shipdate").I32
	lo, hi := day(1994, 1, 1), day(1995, 1, 1)
	var rev int64
	for i := 0; i < l.Rows; i++ {
		if ship[i] >= lo && ship[i] < hi && disc[i] >= 5 && disc[i] <= 7 && qty[i] < 2400 {
			rev += price[i] * disc[i]
		}
	}
	if got, want := fixed(rev, 4), answer(t, sf, "q06")[0][0]; got != want {
		t.Errorf("Q6 at %s: revenue %s, official %s", sf, got, want)
	}
}

// checkQ4 (order priority checking) exercises orders' dates and priorities
// and lineitem's commit/receipt dates.
func checkQ4(t *testing.T, tb *tables, sf string) {
	o, l := tb.b["orders"], tb.b["lineitem"]
	late := map[int64]bool{}
	lk, commit, receipt := col(l, "l_orderkey").I64, col(l, "l_commitdate").I32, col(l, "l_receiptdate").I32
	for i := 0; i < l.Rows; i++ {
		if commit[i] < receipt[i] {
			late[lk[i]] = true
		}
	}
	ok, od, prio := col(o, "o_orderkey").I64, col(o, "o_orderdate").I32, col(o, "o_orderpriority")
	lo, hi := day(1993, 7, 1), day(1993, 10, 1)
	counts := map[string]int{}
	for i := 0; i < o.Rows; i++ {
		if od[i] >= lo && od[i] < hi && late[ok[i]] {
			counts[prio.Str(i)]++
		}
	}
	for _, w := range answer(t, sf, "q04") {
		if got := fmt.Sprint(counts[w[0]]); got != w[1] {
			t.Errorf("Q4 %s: %s orders, official %s", w[0], got, w[1])
		}
	}
}

// checkQ13 (customer distribution) exercises o_custkey (the customer key
// range and the skipped third of customers) and o_comment (dbgen's text
// pool), against TPC's SF1 answer.
func checkQ13(t *testing.T, tb *tables) {
	o, c := tb.b["orders"], tb.b["customer"]
	perCust := map[int64]int{}
	ck, cm := col(o, "o_custkey").I64, col(o, "o_comment")
	for i := 0; i < o.Rows; i++ {
		s := cm.Bytes[cm.Offsets[i]:cm.Offsets[i+1]]
		if j := bytes.Index(s, []byte("special")); j >= 0 && bytes.Contains(s[j+len("special"):], []byte("requests")) {
			continue
		}
		perCust[ck[i]]++
	}
	dist := map[int]int{}
	for _, k := range col(c, "c_custkey").I64 {
		dist[perCust[k]]++
	}
	want := official(t, "q13")
	if len(dist) != len(want) {
		t.Errorf("Q13: %d distinct order counts, official %d", len(dist), len(want))
	}
	for _, w := range want {
		n, _ := strconv.Atoi(strings.TrimSpace(w[0]))
		if got := strconv.Itoa(dist[n]); got != strings.TrimSpace(w[1]) {
			t.Errorf("Q13 c_count %d: %s customers, official %s", n, got, strings.TrimSpace(w[1]))
		}
	}
}

// checkQ10 (returned item reporting) computes the top 20 customers by
// revenue lost to returns in 1993Q4 and compares every printed column with
// TPC's SF1 answer: c_name, c_acctbal, the nation, c_address (V_STR),
// c_phone and c_comment (text pool) are row-level checks of customer.
func checkQ10(t *testing.T, tb *tables) {
	o, l, c, n := tb.b["orders"], tb.b["lineitem"], tb.b["customer"], tb.b["nation"]
	inQ := map[int64]int64{} // order key -> customer key
	lo, hi := day(1993, 10, 1), day(1994, 1, 1)
	ok, ock, od := col(o, "o_orderkey").I64, col(o, "o_custkey").I64, col(o, "o_orderdate").I32
	for i := 0; i < o.Rows; i++ {
		if od[i] >= lo && od[i] < hi {
			inQ[ok[i]] = ock[i]
		}
	}
	rev := map[int64]int64{} // customer key -> revenue in 10^-4
	lk, price, disc, flag := col(l, "l_orderkey").I64, col(l, "l_extendedprice").I64, col(l, "l_discount").I64, col(l, "l_returnflag")
	for i := 0; i < l.Rows; i++ {
		if cust, ok := inQ[lk[i]]; ok && flag.Str(i) == "R" {
			rev[cust] += price[i] * (100 - disc[i])
		}
	}
	keys := make([]int64, 0, len(rev))
	for k := range rev {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if rev[keys[i]] != rev[keys[j]] {
			return rev[keys[i]] > rev[keys[j]]
		}
		return keys[i] < keys[j]
	})
	want := official(t, "q10")
	if len(keys) < len(want) {
		t.Fatalf("Q10: %d customers with returns, official top %d", len(keys), len(want))
	}
	ckey := col(c, "c_custkey").I64
	for i, w := range want {
		k := keys[i]
		r := int(k - 1) // customer keys are dense from 1
		if ckey[r] != k {
			t.Fatalf("customer row %d has key %d", r, ckey[r])
		}
		nat := col(c, "c_nationkey").I64[r]
		got := []string{
			strconv.FormatInt(k, 10), col(c, "c_name").Str(r), fixed((rev[k]+50)/100, 2),
			fixed(col(c, "c_acctbal").I64[r], 2), col(n, "n_name").Str(int(nat)),
			strings.TrimRight(col(c, "c_address").Str(r), " "), col(c, "c_phone").Str(r),
			strings.TrimRight(col(c, "c_comment").Str(r), " "),
		}
		w[0] = strings.TrimSpace(w[0])
		if strings.Join(got, "|") != strings.Join(w, "|") {
			t.Errorf("Q10 row %d:\n got      %q\n official %q", i+1, got, w)
		}
	}
}

// checkQ2Head checks the suppliers and parts named in the first rows of
// TPC's SF1 Q2 answer: s_acctbal, nation, s_address (V_STR), s_phone,
// s_comment (text pool), p_mfgr, that partsupp links them (the supplier
// bridge) and that this supplier's ps_supplycost is the minimum among the
// part's European suppliers (the query's correlated subquery).
func checkQ2Head(t *testing.T, tb *tables) {
	s, p, ps, n, r := tb.b["supplier"], tb.b["part"], tb.b["partsupp"], tb.b["nation"], tb.b["region"]
	europe := map[int64]bool{} // supplier keys in EUROPE
	snat := col(s, "s_nationkey").I64
	for i := 0; i < s.Rows; i++ {
		reg := col(n, "n_regionkey").I64[snat[i]]
		if col(r, "r_name").Str(int(reg)) == "EUROPE" {
			europe[int64(i+1)] = true
		}
	}
	ppk, psk, cost := col(ps, "ps_partkey").I64, col(ps, "ps_suppkey").I64, col(ps, "ps_supplycost").I64
	for _, w := range official(t, "q2_head") {
		var sk int64
		fmt.Sscanf(w[1], "Supplier#%d", &sk)
		pk, _ := strconv.ParseInt(strings.TrimSpace(w[3]), 10, 64)
		si, pi := int(sk-1), int(pk-1)
		got := []string{
			fixed(col(s, "s_acctbal").I64[si], 2), col(s, "s_name").Str(si),
			col(n, "n_name").Str(int(snat[si])), strings.TrimSpace(w[3]), col(p, "p_mfgr").Str(pi),
			strings.TrimRight(col(s, "s_address").Str(si), " "), col(s, "s_phone").Str(si),
			strings.TrimRight(col(s, "s_comment").Str(si), " "),
		}
		w[3] = strings.TrimSpace(w[3])
		if strings.Join(got, "|") != strings.Join(w, "|") {
			t.Errorf("Q2 supplier %d / part %d:\n got      %q\n official %q", sk, pk, got, w)
		}
		minCost, linked := int64(-1), false
		for j := pi * suppPerPart; j < (pi+1)*suppPerPart; j++ {
			if ppk[j] != pk {
				t.Fatalf("partsupp row %d has part %d, want %d", j, ppk[j], pk)
			}
			if europe[psk[j]] && (minCost < 0 || cost[j] < minCost) {
				minCost = cost[j]
			}
			if psk[j] == sk {
				linked = true
				if !europe[sk] {
					t.Errorf("Q2: supplier %d is not in EUROPE", sk)
				}
			}
		}
		for j := pi * suppPerPart; j < (pi+1)*suppPerPart; j++ {
			if psk[j] == sk && cost[j] != minCost {
				t.Errorf("Q2: part %d supplier %d costs %d, not the European minimum %d", pk, sk, cost[j], minCost)
			}
		}
		if !linked {
			t.Errorf("Q2: part %d has no partsupp row for supplier %d", pk, sk)
		}
	}
}

// checkQ22 (global sales opportunity) exercises c_phone's country code,
// c_acctbal and customers without orders.
func checkQ22(t *testing.T, tb *tables, sf string) {
	c, o := tb.b["customer"], tb.b["orders"]
	codes := map[string]bool{"13": true, "31": true, "23": true, "29": true, "30": true, "18": true, "17": true}
	phone, bal, ck := col(c, "c_phone"), col(c, "c_acctbal").I64, col(c, "c_custkey").I64
	var sum, cnt int64
	for i := 0; i < c.Rows; i++ {
		if bal[i] > 0 && codes[phone.Str(i)[:2]] {
			sum += bal[i]
			cnt++
		}
	}
	hasOrder := map[int64]bool{}
	for _, k := range col(o, "o_custkey").I64 {
		hasOrder[k] = true
	}
	type agg struct{ n, bal int64 }
	groups := map[string]*agg{}
	for i := 0; i < c.Rows; i++ {
		code := phone.Str(i)[:2]
		// c_acctbal > avg, exactly: bal*cnt > sum.
		if codes[code] && bal[i]*cnt > sum && !hasOrder[ck[i]] {
			if groups[code] == nil {
				groups[code] = &agg{}
			}
			groups[code].n++
			groups[code].bal += bal[i]
		}
	}
	want := answer(t, sf, "q22")
	if len(groups) != len(want) {
		t.Errorf("Q22: %d country codes, want %d", len(groups), len(want))
	}
	for _, w := range want {
		a := groups[w[0]]
		if a == nil {
			t.Errorf("Q22: country code %s missing", w[0])
			continue
		}
		if got := fmt.Sprintf("%d|%s", a.n, fixed(a.bal, 2)); got != w[1]+"|"+w[2] {
			t.Errorf("Q22 %s: %s, official %s|%s", w[0], got, w[1], w[2])
		}
	}
}

// checkQ16 exercises part brand/type/size, partsupp's supplier bridge and
// the supplier comments with "Customer ... Complaints".
func checkQ16(t *testing.T, tb *tables, sf string) {
	p, ps, s := tb.b["part"], tb.b["partsupp"], tb.b["supplier"]
	bad := map[int64]bool{}
	sk, sc := col(s, "s_suppkey").I64, col(s, "s_comment")
	for i := 0; i < s.Rows; i++ {
		c := sc.Bytes[sc.Offsets[i]:sc.Offsets[i+1]]
		if j := bytes.Index(c, []byte("Customer")); j >= 0 && bytes.Contains(c[j:], []byte("Complaints")) {
			bad[sk[i]] = true
		}
	}
	sizes := map[int32]bool{49: true, 14: true, 23: true, 45: true, 19: true, 3: true, 36: true, 9: true}
	type key struct {
		brand, typ string
		size       int32
	}
	keep := map[int64]key{}
	pk, brand, typ, size := col(p, "p_partkey").I64, col(p, "p_brand"), col(p, "p_type"), col(p, "p_size").I32
	for i := 0; i < p.Rows; i++ {
		if brand.Str(i) != "Brand#45" && !strings.HasPrefix(typ.Str(i), "MEDIUM POLISHED") && sizes[size[i]] {
			keep[pk[i]] = key{brand.Str(i), typ.Str(i), size[i]}
		}
	}
	supp := map[key]map[int64]bool{}
	ppk, psk := col(ps, "ps_partkey").I64, col(ps, "ps_suppkey").I64
	for i := 0; i < ps.Rows; i++ {
		k, ok := keep[ppk[i]]
		if !ok || bad[psk[i]] {
			continue
		}
		if supp[k] == nil {
			supp[k] = map[int64]bool{}
		}
		supp[k][psk[i]] = true
	}
	want := answer(t, sf, "q16")
	if len(supp) != len(want) {
		t.Errorf("Q16: %d groups, official %d", len(supp), len(want))
	}
	var mismatches []string
	for _, w := range want {
		var sz int32
		fmt.Sscan(w[2], &sz)
		if got := fmt.Sprint(len(supp[key{w[0], w[1], sz}])); got != w[3] {
			mismatches = append(mismatches, fmt.Sprintf("%v: %s, official %s", w[:3], got, w[3]))
		}
	}
	sort.Strings(mismatches)
	if len(mismatches) > 0 {
		t.Errorf("Q16: %d groups differ, e.g. %s", len(mismatches), mismatches[0])
	}
}

// checkQ15 (top supplier) sums revenue per l_suppkey for 1996Q1 and
// compares the top supplier's key, name, s_address (V_STR), s_phone and
// revenue with TPC's SF1 answer.
func checkQ15(t *testing.T, tb *tables) {
	l, s := tb.b["lineitem"], tb.b["supplier"]
	rev := map[int64]int64{} // 10^-4
	sk, price, disc, ship := col(l, "l_suppkey").I64, col(l, "l_extendedprice").I64, col(l, "l_discount").I64, col(l, "l_shipdate").I32
	lo, hi := day(1996, 1, 1), day(1996, 4, 1)
	for i := 0; i < l.Rows; i++ {
		if ship[i] >= lo && ship[i] < hi {
			rev[sk[i]] += price[i] * (100 - disc[i])
		}
	}
	var top []int64
	var best int64 = -1
	for k, r := range rev {
		switch {
		case r > best:
			top, best = []int64{k}, r
		case r == best:
			top = append(top, k)
		}
	}
	want := official(t, "q15")
	if len(top) != len(want) {
		t.Fatalf("Q15: %d top suppliers, official %d", len(top), len(want))
	}
	k := top[0]
	si := int(k - 1)
	got := []string{strconv.FormatInt(k, 10), col(s, "s_name").Str(si),
		strings.TrimRight(col(s, "s_address").Str(si), " "), col(s, "s_phone").Str(si), fixed((best+50)/100, 2)}
	w := want[0]
	w[0] = strings.TrimSpace(w[0])
	if strings.Join(got, "|") != strings.Join(w, "|") {
		t.Errorf("Q15:\n got      %q\n official %q", got, w)
	}
}

// checkQ20 (potential part promotion) exercises p_name, ps_availqty, the
// partsupp/lineitem supplier keys and s_address, against TPC's SF1 answer
// (186 Canadian suppliers).
func checkQ20(t *testing.T, tb *tables) {
	p, ps, l, s, n := tb.b["part"], tb.b["partsupp"], tb.b["lineitem"], tb.b["supplier"], tb.b["nation"]
	forest := map[int64]bool{}
	pname, pk := col(p, "p_name"), col(p, "p_partkey").I64
	for i := 0; i < p.Rows; i++ {
		if strings.HasPrefix(pname.Str(i), "forest") {
			forest[pk[i]] = true
		}
	}
	type pair struct{ part, supp int64 }
	qty := map[pair]int64{} // sum of l_quantity in cents, 1994
	lpk, lsk, lq, ship := col(l, "l_partkey").I64, col(l, "l_suppkey").I64, col(l, "l_quantity").I64, col(l, "l_shipdate").I32
	lo, hi := day(1994, 1, 1), day(1995, 1, 1)
	for i := 0; i < l.Rows; i++ {
		if forest[lpk[i]] && ship[i] >= lo && ship[i] < hi {
			qty[pair{lpk[i], lsk[i]}] += lq[i]
		}
	}
	supps := map[int64]bool{}
	ppk, psk, avail := col(ps, "ps_partkey").I64, col(ps, "ps_suppkey").I64, col(ps, "ps_availqty").I32
	for i := 0; i < ps.Rows; i++ {
		// ps_availqty > 0.5 * sum(l_quantity); no lines: NULL, false.
		if q, ok := qty[pair{ppk[i], psk[i]}]; ok && forest[ppk[i]] && int64(avail[i])*200 > q {
			supps[psk[i]] = true
		}
	}
	var got []string
	snat := col(s, "s_nationkey").I64
	for i := 0; i < s.Rows; i++ {
		if supps[int64(i+1)] && col(n, "n_name").Str(int(snat[i])) == "CANADA" {
			got = append(got, col(s, "s_name").Str(i)+"|"+strings.TrimRight(col(s, "s_address").Str(i), " "))
		}
	}
	sort.Strings(got)
	var want []string
	for _, w := range official(t, "q20") {
		want = append(want, strings.Join(w, "|"))
	}
	if len(got) != len(want) {
		t.Errorf("Q20: %d suppliers, official %d", len(got), len(want))
	}
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Errorf("Q20 row %d: got %q, official %q", i+1, got[i], want[i])
			break
		}
	}
}
