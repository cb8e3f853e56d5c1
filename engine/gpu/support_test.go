package gpu

import (
	"strings"
	"testing"

	"gostachio/kernels/cpu"
	"gostachio/plan"
	"gostachio/tpch/queries"
)

// TestSupportedTPCH pins which TPC-H queries' scan pipelines the GPU path
// runs (all of Q1's and Q6's), and that a refusal names the operator.
func TestSupportedTPCH(t *testing.T) {
	tables, err := queries.Stats(1, 131072)
	if err != nil {
		t.Fatal(err)
	}
	var runs []string
	for _, q := range queries.Names() {
		p, err := queries.Build(q, 1, tables)
		if err != nil {
			t.Fatal(err)
		}
		all := true
		for _, pl := range p.Pipelines {
			if pl.Source.Kind != plan.SourceScan {
				continue
			}
			if err := Supported(pl.Ops); err != nil {
				all = false
				if q == "q3" && pl.Name == "q3 scan lineitem" && !strings.Contains(err.Error(), "operator shuffle") {
					t.Errorf("q3's lineitem refusal does not name its shuffle: %v", err)
				}
			}
		}
		if all {
			runs = append(runs, q)
		}
	}
	if got := strings.Join(runs, ","); got != "q1,q6" {
		t.Errorf("GPU-runnable queries: %s, want q1,q6", got)
	}
}

func TestSupportedRefusals(t *testing.T) {
	scan := plan.Op{Kind: plan.OpScan}
	agg := plan.Op{Kind: plan.OpAggPartial, Expr: plan.Aggs{plan.Count("n")}}
	for _, c := range []struct {
		name string
		ops  []plan.Op
		want string
	}{
		{"like", []plan.Op{scan, {Kind: plan.OpFilter, Label: "f", Expr: plan.Like(plan.Col("s"), "a%")}, agg}, "like"},
		{"divide", []plan.Op{scan, {Kind: plan.OpProject, Label: "p", Expr: plan.Projection{plan.As("x", plan.Div(plan.Col("a"), plan.Col("b")))}}, agg}, "/"},
		{"no aggregate", []plan.Op{scan, {Kind: plan.OpFilter, Expr: plan.Lt(plan.Col("a"), plan.Int(3))}}, "partial aggregate"},
		{"string literal", []plan.Op{scan, {Kind: plan.OpFilter, Expr: plan.Eq(plan.Col("s"), plan.Str("x"))}, agg}, "literal"},
		{"sort", []plan.Op{scan, {Kind: plan.OpSort, Label: "s"}}, "sort"},
	} {
		err := Supported(c.ops)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %q", c.name, err, c.want)
		}
	}
	ok := []plan.Op{scan, {Kind: plan.OpFilter, Expr: plan.Or(plan.Not(plan.Lt(plan.Col("a"), plan.Int(3))),
		plan.In(plan.Col("d"), plan.Ints(1, 2)...))}, {Kind: plan.OpProject, Expr: plan.Projection{plan.As("x", plan.Mul(plan.Col("a"), plan.Sub(plan.Int(1), plan.Col("b"))))}},
		{Kind: plan.OpAggPartial, Keys: []string{"k"}, Expr: plan.Aggs{plan.Sum("s", plan.Col("x")), plan.Min("m", plan.Col("x"))}}, {Kind: plan.OpGather}}
	if err := Supported(ok); err != nil {
		t.Errorf("supported pipeline refused: %v", err)
	}
}

func TestSizeClass(t *testing.T) {
	for _, c := range []struct{ n, class int }{{0, 8}, {1, 8}, {256, 8}, {257, 9}, {512, 9}, {513, 10}, {1 << 20, 20}, {1<<20 + 1, 21}} {
		if got := sizeClass(c.n); got != c.class {
			t.Errorf("sizeClass(%d) = %d, want %d", c.n, got, c.class)
		}
		if c.n > 0 && 1<<sizeClass(c.n) < c.n {
			t.Errorf("class of %d holds fewer bytes", c.n)
		}
	}
}

// TestKeyDecode: packed codes (as str_code and key_pack lay them out)
// decode to the strings and integers they came from.
func TestKeyDecode(t *testing.T) {
	strCode := func(s string, maxLen int) int64 {
		var c uint64
		for j := 0; j < maxLen; j++ {
			c <<= 8
			if j < len(s) {
				c |= uint64(s[j]) + 1
			}
		}
		return int64(c)
	}
	strs := []string{"A", "N", "R", "", "NO"}
	ints := []int32{-5, 0, 7, 3, -5}
	sk := keyCode{name: "s", src: Col{Type: cpu.TString, MaxLen: 2}}
	ik := keyCode{name: "i", src: Col{Type: cpu.TDate}}
	sk.lo, sk.hi = strCode("", 2), strCode("R", 2)
	ik.lo, ik.hi = -5, 7
	sk.bits, ik.bits = 15, 4
	sk.shift, ik.shift = 4, 0
	packed := make([]int64, len(strs))
	for i := range strs {
		packed[i] = (strCode(strs[i], 2)-sk.lo)<<sk.bits>>sk.bits<<sk.shift | (int64(ints[i]) - ik.lo)
	}
	keep := []int{4, 0, 3, 2}
	sv, err := sk.decode(packed, keep)
	if err != nil {
		t.Fatal(err)
	}
	iv, err := ik.decode(packed, keep)
	if err != nil {
		t.Fatal(err)
	}
	for j, g := range keep {
		if got := string(sv.StrAt(j)); got != strs[g] {
			t.Errorf("group %d string %q, want %q", g, got, strs[g])
		}
		if iv.I32[j] != ints[g] {
			t.Errorf("group %d int %d, want %d", g, iv.I32[j], ints[g])
		}
	}
}

func TestRescale(t *testing.T) {
	if v, err := rescale(24, 2); err != nil || v != 2400 {
		t.Errorf("rescale(24, 2) = %d, %v", v, err)
	}
	if _, err := rescale(1<<62, 2); err == nil {
		t.Error("rescale overflow not reported")
	}
}
