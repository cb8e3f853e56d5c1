package cpu

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gostachio/plan"
)

// testSels returns input selections for a batch of n rows: all (nil),
// every other row, none, a random sparse subset and a random dense one.
func testSels(r *rand.Rand, n int) map[string][]int32 {
	every, sparse, dense := []int32{}, []int32{}, []int32{}
	for i := 0; i < n; i++ {
		if i%2 == 0 {
			every = append(every, int32(i))
		}
		if r.IntN(10) == 0 {
			sparse = append(sparse, int32(i))
		}
		if r.IntN(10) != 0 {
			dense = append(dense, int32(i))
		}
	}
	return map[string][]int32{"all": nil, "every other": every, "empty": {}, "sparse": sparse, "dense": dense}
}

// refCheckSelect compares Select with the reference for every selection.
func refCheckSelect(t *testing.T, b *Batch, pred plan.Expr, sels map[string][]int32) {
	t.Helper()
	tv, terr := refEval(b, pred, -1)
	if terr == nil && tv.t != TBool {
		terr = errors.New("not bool")
	}
	// The reference's verdict on every row (nil: it overflowed, skip).
	var verdict []bool
	if terr == nil {
		verdict = make([]bool, b.Rows)
		for i := range verdict {
			v, err := refEval(b, pred, i)
			if errors.Is(err, errRefOverflow) {
				verdict = nil
				break
			}
			if err != nil || v.t != TBool {
				t.Fatalf("reference on row %d of %s: %v (type %s)", i, pred, err, v.t)
			}
			verdict[i] = v.b
		}
	}
	for name, sel := range sels {
		orig := slices.Clone(sel)
		got, err := Select(b, pred, sel)
		if !slices.Equal(orig, sel) {
			t.Fatalf("Select(%s) modified its input selection", pred)
		}
		if terr != nil {
			if err == nil {
				t.Fatalf("Select(%s, %s) = ok, reference: %v", pred, name, terr)
			}
			continue
		}
		if verdict == nil {
			continue
		}
		if err != nil {
			t.Fatalf("Select(%s, %s): %v", pred, name, err)
		}
		want := []int32{}
		if sel == nil {
			for i := range b.Rows {
				if verdict[i] {
					want = append(want, int32(i))
				}
			}
		}
		for _, i := range orig {
			if verdict[i] {
				want = append(want, i)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("Select(%s, %s) over %d rows: got %d rows %v, want %d rows %v", pred, name, b.Rows,
				len(got), head(got), len(want), head(want))
		}
		if len(got) > 0 && sel != nil && &got[0] == &sel[0] {
			t.Fatalf("Select(%s) returned its input slice", pred)
		}
	}
}

func head(s []int32) []int32 {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// TestSelectRandom compares Select with the reference over random
// predicates and input selections.
func TestSelectRandom(t *testing.T) {
	g := &exprGen{r: rand.New(rand.NewPCG(31, 32))}
	for _, n := range testSizes {
		r := rand.New(rand.NewPCG(uint64(n), 33))
		b := testBatch(r, n)
		sels := testSels(r, n)
		count := 400
		if n >= 65536 {
			count = 8
		}
		for range count {
			refCheckSelect(t, b, g.expr(kBool, 1+g.r.IntN(3)), sels)
		}
	}
}

// TestSelectLeaves runs each fast path (column against literal, column
// against column, between, in, like) for every column type.
func TestSelectLeaves(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	lits := []plan.Lit{plan.Int(0), plan.Int(-3), plan.Dec("0.50"), plan.Dec("-12.345"), plan.Dec("7"),
		plan.Lit{Kind: plan.LitDate, I: 8030}, plan.Float(2.5), plan.Float(-0.0), plan.Str("ab"), plan.Str(""),
		plan.Int(1 << 40), plan.Int(-1 << 40), plan.Lit{Kind: plan.LitDecimal, I: 9_000_000_000_000_000_000, Scale: 0},
		plan.Lit{Kind: plan.LitDecimal, I: -9_000_000_000_000_000_000, Scale: 3}}
	cols := []string{"i64", "i32", "d2", "d4", "dt", "dt2", "f", "s", "s2", "bl"}
	for _, n := range []int{0, 7, 1000} {
		b := testBatch(r, n)
		sels := testSels(r, n)
		for _, c := range cols {
			for _, op := range genCmps {
				for _, l := range lits {
					refCheckSelect(t, b, plan.Call{Fn: op, Args: []plan.Expr{plan.Col(c), l}}, sels)
					refCheckSelect(t, b, plan.Call{Fn: op, Args: []plan.Expr{l, plan.Col(c)}}, sels)
				}
				for _, c2 := range cols {
					refCheckSelect(t, b, plan.Call{Fn: op, Args: []plan.Expr{plan.Col(c), plan.Col(c2)}}, sels)
				}
			}
			for _, lo := range lits {
				for _, hi := range lits[:10] {
					refCheckSelect(t, b, plan.Between(plan.Col(c), lo, hi), sels)
				}
			}
			refCheckSelect(t, b, plan.In(plan.Col(c), lits...), sels)
			refCheckSelect(t, b, plan.NotIn(plan.Col(c), lits[:3]...), sels)
			refCheckSelect(t, b, plan.Like(plan.Col(c), "%b_"), sels)
			refCheckSelect(t, b, plan.NotLike(plan.Col(c), "a%"), sels)
			refCheckSelect(t, b, plan.Col(c), sels)
		}
	}
}

// TestSelectConstants checks predicates without columns (all or none).
func TestSelectConstants(t *testing.T) {
	b := testBatch(rand.New(rand.NewPCG(43, 44)), 50)
	sels := testSels(rand.New(rand.NewPCG(45, 46)), 50)
	for _, p := range []plan.Expr{
		plan.Lt(plan.Int(1), plan.Int(2)),
		plan.Gt(plan.Dec("1.5"), plan.Int(2)),
		plan.And(plan.Eq(plan.Str("a"), plan.Str("a")), plan.Lt(plan.Col("i64"), plan.Int(0))),
		plan.Or(plan.Like(plan.Str("abc"), "a%"), plan.Col("bl")),
		plan.In(plan.Int(3), plan.Ints(1, 2, 3)...),
		plan.Between(plan.Int(3), plan.Col("i64"), plan.Col("i32")),
		plan.Between(plan.Col("i64"), plan.Col("i32"), plan.Int(10)),
		plan.Not(plan.Ne(plan.Float(1), plan.Dec("1.0"))),
		plan.Case(plan.Col("bl"), plan.Lt(plan.Int(1), plan.Int(2)), plan.Gt(plan.Col("f"), plan.Float(3))),
		plan.Eq(plan.Year(plan.Date("1995-06-01")), plan.Int(1995)),
	} {
		refCheckSelect(t, b, p, sels)
		refCheckEval(t, b, p)
	}
}

// TestSelectQ19 runs a TPC-H Q19-style predicate: an Or of three Ands with
// In over strings, Between over decimals and equalities.
func TestSelectQ19(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	n := 20000
	brands := []string{"Brand#12", "Brand#23", "Brand#34", "Brand#11"}
	conts := []string{"SM CASE", "SM BOX", "SM PACK", "SM PKG", "MED BAG", "MED BOX", "MED PKG", "MED PACK", "LG CASE", "LG BOX", "LG PACK", "LG PKG", "JUMBO JAR"}
	modes := []string{"AIR", "AIR REG", "SHIP", "TRUCK"}
	instr := []string{"DELIVER IN PERSON", "NONE", "COLLECT COD"}
	brand, cont, mode, ins := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	qty, size := make([]int64, n), make([]int32, n)
	for i := range n {
		brand[i], cont[i] = brands[r.IntN(len(brands))], conts[r.IntN(len(conts))]
		mode[i], ins[i] = modes[r.IntN(len(modes))], instr[r.IntN(len(instr))]
		qty[i], size[i] = (1+r.Int64N(50))*100, 1+r.Int32N(50)
	}
	b := &Batch{Names: []string{"p_brand", "p_container", "l_shipmode", "l_shipinstruct", "l_quantity", "p_size"},
		Cols: []Vec{testStrVec(brand), testStrVec(cont), testStrVec(mode), testStrVec(ins),
			{Type: TDecimal, Scale: 2, I64: qty}, {Type: TInt32, I32: size}}, Rows: n}
	arm := func(br string, cs []string, lo, hi int64, smax int64) plan.Expr {
		return plan.And(
			plan.Eq(plan.Col("p_brand"), plan.Str(br)),
			plan.In(plan.Col("p_container"), plan.Strs(cs...)...),
			plan.Ge(plan.Col("l_quantity"), plan.Int(lo)), plan.Le(plan.Col("l_quantity"), plan.Int(hi)),
			plan.Between(plan.Col("p_size"), plan.Int(1), plan.Int(smax)),
			plan.In(plan.Col("l_shipmode"), plan.Strs("AIR", "AIR REG")...),
			plan.Eq(plan.Col("l_shipinstruct"), plan.Str("DELIVER IN PERSON")))
	}
	q19 := plan.Or(
		arm("Brand#12", []string{"SM CASE", "SM BOX", "SM PACK", "SM PKG"}, 1, 11, 5),
		arm("Brand#23", []string{"MED BAG", "MED BOX", "MED PKG", "MED PACK"}, 10, 20, 10),
		arm("Brand#34", []string{"LG CASE", "LG BOX", "LG PACK", "LG PKG"}, 20, 30, 15))
	sels := testSels(r, n)
	refCheckSelect(t, b, q19, sels)
	got, err := Select(b, q19, nil)
	if err != nil || len(got) == 0 {
		t.Fatalf("Q19 selected %d rows: %v", len(got), err)
	}
	// A hand-written loop, independent of the reference evaluator (each
	// arm's container list is every container of its size class).
	want := []int32{}
	for i := range n {
		q := qty[i] / 100
		ok := mode[i] == "AIR" || mode[i] == "AIR REG"
		ok = ok && ins[i] == "DELIVER IN PERSON"
		c3 := cont[i][:strings.IndexByte(cont[i], ' ')]
		switch {
		case brand[i] == "Brand#12" && c3 == "SM" && q >= 1 && q <= 11 && size[i] <= 5,
			brand[i] == "Brand#23" && c3 == "MED" && q >= 10 && q <= 20 && size[i] <= 10,
			brand[i] == "Brand#34" && c3 == "LG" && q >= 20 && q <= 30 && size[i] <= 15:
		default:
			ok = false
		}
		if ok {
			want = append(want, int32(i))
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Q19: %d rows, hand-written loop %d", len(got), len(want))
	}
	// Filter gathers the same rows.
	f, err := Filter(b, q19)
	if err != nil || f.Rows != len(want) || f.Validate() != nil {
		t.Fatalf("Filter(Q19): %v rows, err %v", f.Rows, err)
	}
	for j, i := range want {
		if string(f.Cols[0].StrAt(j)) != brand[i] || f.Cols[4].I64[j] != qty[i] || f.Cols[5].I32[j] != size[i] {
			t.Fatalf("Filter row %d differs from input row %d", j, i)
		}
	}
}

// TestFilter checks Filter's batch shape, sharing when every row passes,
// and errors.
func TestFilter(t *testing.T) {
	b := testBatch(rand.New(rand.NewPCG(61, 62)), 500)
	all, err := Filter(b, plan.Le(plan.Col("dt"), plan.Lit{Kind: plan.LitDate, I: 9000}))
	if err != nil || all.Rows != 500 || &all.Cols[0].I64[0] != &b.Cols[0].I64[0] {
		t.Fatalf("all rows: %v", err)
	}
	none, err := Filter(b, plan.Lt(plan.Col("dt"), plan.Lit{Kind: plan.LitDate, I: 0}))
	if err != nil || none.Rows != 0 || none.Validate() != nil || len(none.Names) != len(b.Names) {
		t.Fatalf("no rows: %v", err)
	}
	some, err := Filter(b, plan.Col("bl"))
	if err != nil || some.Validate() != nil {
		t.Fatal(err)
	}
	k := 0
	for i := 0; i < b.Rows; i++ {
		if b.Cols[9].B[i] {
			if some.Cols[7].Format(k) != b.Cols[7].Format(i) || some.Cols[3].I64[k] != b.Cols[3].I64[i] {
				t.Fatalf("row %d", i)
			}
			k++
		}
	}
	if k != some.Rows {
		t.Fatalf("%d rows, want %d", some.Rows, k)
	}
	if _, err := Filter(b, plan.Col("i64")); err == nil {
		t.Error("int predicate: no error")
	}
	for _, sel := range [][]int32{{3, 600}, {-1, 3}, {5, 4}, {2, 2}} {
		if _, err := Select(b, plan.Col("bl"), sel); err == nil {
			t.Errorf("selection %v: no error", sel)
		}
	}
}

// TestSelectInPlace checks the internal aliasing contract: filtering a
// selection into itself gives the same result as into a fresh buffer.
func TestSelectInPlace(t *testing.T) {
	r := rand.New(rand.NewPCG(71, 72))
	b := testBatch(r, 3000)
	g := &exprGen{r: r}
	for range 200 {
		p := g.boolean(3)
		if _, err := refEval(b, p, -1); err != nil {
			continue
		}
		for _, sel := range testSels(r, b.Rows) {
			if sel == nil {
				continue
			}
			fresh, err1 := fltSel(b, p, sel, make([]int32, len(sel)))
			buf := slices.Clone(sel)
			inplace, err2 := fltSel(b, p, buf, buf)
			if (err1 == nil) != (err2 == nil) || !slices.Equal(fresh, inplace) {
				t.Fatalf("%s: in place %v (%v), fresh %v (%v)", p, head(inplace), err2, head(fresh), err1)
			}
		}
	}
}

// BenchmarkSelectQ6 selects the TPC-H Q6 conjunction over 1M rows, as one
// batch and as 64K-row batches.
func BenchmarkSelectQ6(bm *testing.B) {
	q6 := plan.And(
		plan.Ge(plan.Col("l_shipdate"), plan.Date("1994-01-01")),
		plan.Lt(plan.Col("l_shipdate"), plan.DateAdd("1994-01-01", 1, 0, 0)),
		plan.Between(plan.Col("l_discount"), plan.Dec("0.05"), plan.Dec("0.07")),
		plan.Lt(plan.Col("l_quantity"), plan.Int(24)))
	for _, size := range benchBatchSizes {
		bs := benchLineitem(size)
		bm.Run(fmt.Sprintf("batch=%d", size), func(bm *testing.B) {
			bm.SetBytes(benchRows * 20)
			var n int
			for bm.Loop() {
				n = 0
				for _, b := range bs {
					sel, err := Select(b, q6, nil)
					if err != nil {
						bm.Fatal(err)
					}
					n += len(sel)
				}
			}
			bm.ReportMetric(float64(n)/benchRows, "selectivity")
		})
	}
}

// TestSelectConcurrent runs Select and Eval from several goroutines over one
// shared batch (pooled buffers, the LIKE cache, no writes to inputs).
func TestSelectConcurrent(t *testing.T) {
	b := testBatch(rand.New(rand.NewPCG(91, 92)), 5000)
	g := &exprGen{r: rand.New(rand.NewPCG(93, 94))}
	var preds []plan.Expr
	var want [][]int32
	for len(preds) < 40 {
		p := g.boolean(3)
		if got, err := Select(b, p, nil); err == nil {
			preds, want = append(preds, p), append(want, got)
		}
	}
	errs := make(chan error, 4)
	for w := range 4 {
		go func() {
			for k := range 3 * len(preds) {
				i := (k + w*7) % len(preds)
				got, err := Select(b, preds[i], nil)
				if err == nil {
					_, err = Eval(b, preds[i])
				}
				if err == nil && !slices.Equal(got, want[i]) {
					err = errors.New("result differs under concurrency: " + preds[i].String())
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
