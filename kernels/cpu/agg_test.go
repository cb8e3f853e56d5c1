package cpu

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"gostachio/plan"
)

// ktCompare orders values i and j of v (the reference's min/max and sort).
func ktCompare(v *Vec, i, j int) int {
	switch v.Type {
	case TInt64, TDecimal, TInt32, TDate:
		return cmp.Compare(v.Int(i), v.Int(j))
	case TFloat64:
		return cmp.Compare(v.F64[i], v.F64[j])
	case TString:
		return bytes.Compare(v.StrAt(i), v.StrAt(j))
	case TBool:
		x, y := 0, 0
		if v.B[i] {
			x = 1
		}
		if v.B[j] {
			y = 1
		}
		return x - y
	}
	panic("ktCompare")
}

// ktAggRef is a map-based group-by: the expected Result(final) of an
// aggregator fed all rows of b.
func ktAggRef(b *Batch, keys []string, aggs plan.Aggs, final bool) *Batch {
	kc := make([]int, len(keys))
	for i, k := range keys {
		kc[i] = b.Col(k)
	}
	group := map[string]int{}
	var firstRow []int32
	gid := make([]int, b.Rows)
	for i := range b.Rows {
		k := ktKey(b, kc, i)
		g, ok := group[k]
		if !ok {
			g = len(firstRow)
			group[k] = g
			firstRow = append(firstRow, int32(i))
		}
		gid[i] = g
	}
	ng := len(firstRow)
	empty := len(keys) == 0 && b.Rows == 0
	if len(keys) == 0 && b.Rows > 0 {
		ng = 1
	}
	out := &Batch{Rows: ng}
	add := func(name string, v Vec) {
		out.Names = append(out.Names, name)
		out.Cols = append(out.Cols, v)
	}
	for k, name := range keys {
		add(name, GatherVec(&b.Cols[kc[k]], firstRow))
	}
	if empty && final {
		out.Rows = 1
	}
	for _, a := range aggs {
		var arg *Vec
		if a.Arg != nil {
			arg = &b.Cols[b.Col(string(a.Arg.(plan.Col)))]
		}
		isum := make([]int64, ng)
		fsum := make([]float64, ng)
		cnt := make([]int64, ng)
		best := make([]int32, ng)
		for i := range best {
			best[i] = -1
		}
		for i := range b.Rows {
			g := gid[i]
			cnt[g]++
			if arg == nil {
				continue
			}
			switch arg.Type {
			case TFloat64:
				fsum[g] += arg.F64[i]
			case TInt64, TInt32, TDecimal:
				isum[g] += arg.Int(i)
			}
			if best[g] < 0 || a.Fn == plan.AggMin && ktCompare(arg, i, int(best[g])) < 0 ||
				a.Fn == plan.AggMax && ktCompare(arg, i, int(best[g])) > 0 {
				best[g] = int32(i)
			}
		}
		sumVec := func() Vec {
			if arg.Type == TFloat64 {
				return Vec{Type: TFloat64, F64: fsum}
			}
			if arg.Type == TDecimal {
				return Vec{Type: TDecimal, Scale: arg.Scale, I64: isum}
			}
			return Vec{Type: TInt64, I64: isum}
		}
		if empty && final { // one row of zero values
			isum, fsum, cnt = []int64{0}, []float64{0}, []int64{0}
		}
		switch a.Fn {
		case plan.AggSum:
			add(a.As, sumVec())
		case plan.AggCount:
			add(a.As, Vec{Type: TInt64, I64: cnt})
		case plan.AggAvg:
			if !final {
				add(a.As+"$sum", sumVec())
				add(a.As+"$count", Vec{Type: TInt64, I64: cnt})
				break
			}
			f := make([]float64, len(cnt))
			for g := range f {
				if cnt[g] == 0 {
					continue
				}
				s := fsum[g]
				if arg.Type != TFloat64 {
					s = float64(isum[g])
				}
				f[g] = s / float64(cnt[g])
				if arg.Type == TDecimal {
					f[g] /= math.Pow10(int(arg.Scale))
				}
			}
			add(a.As, Vec{Type: TFloat64, F64: f})
		case plan.AggMin, plan.AggMax:
			if empty && final {
				z := GatherVec(arg, nil)
				z = hjGatherOrZero(&z, []int32{-1})
				add(a.As, z)
				break
			}
			add(a.As, GatherVec(arg, best))
		}
	}
	return out
}

func ktAggList() plan.Aggs {
	c := func(s string) plan.Expr { return plan.Col(s) }
	return plan.Aggs{
		plan.Sum("s_i64", c("v_i64")), plan.Sum("s_i32", c("v_i32")), plan.Sum("s_dec", c("v_dec")),
		plan.Sum("s_f", c("v_f")), plan.Count("c_all"), {Fn: plan.AggCount, Arg: c("v_s"), As: "c_s"},
		plan.Avg("a_dec", c("v_dec")), plan.Avg("a_i32", c("v_i32")), plan.Avg("a_f", c("v_f")),
		plan.Min("mn_i32", c("v_i32")), plan.Max("mx_date", c("v_date")), plan.Min("mn_date", c("v_date")),
		plan.Min("mn_s", c("v_s")), plan.Max("mx_s", c("v_s")), plan.Min("mn_dec", c("v_dec")),
		plan.Max("mx_dec", c("v_dec")), plan.Max("mx_f", c("v_f")), plan.Min("mn_f", c("v_f")),
		plan.Max("mx_i64", c("v_i64")), plan.Min("mn_i64", c("v_i64")),
	}
}

func ktAggValues() []ktCol {
	return []ktCol{{name: "v_i64", typ: TInt64}, {name: "v_i32", typ: TInt32}, {name: "v_dec", typ: TDecimal},
		{name: "v_f", typ: TFloat64}, {name: "v_s", typ: TString}, {name: "v_date", typ: TDate}}
}

// ktAggArgs evaluates the (column) arguments of aggs over b.
func ktAggArgs(b *Batch, aggs plan.Aggs) []*Vec {
	args := make([]*Vec, len(aggs))
	for i, a := range aggs {
		if a.Arg != nil {
			args[i] = &b.Cols[b.Col(string(a.Arg.(plan.Col)))]
		}
	}
	return args
}

// ktFeed updates a with rows [lo, hi) of b in a few random slices (at
// least one call, possibly of zero rows).
func ktFeed(t *testing.T, r interface{ IntN(int) int }, a *Aggregator, b *Batch, aggs plan.Aggs, lo, hi int) {
	t.Helper()
	for first := true; first || lo < hi; first = false {
		end := lo + r.IntN(hi-lo+1)
		s := Slice(b, lo, end)
		if err := a.Update(s, ktAggArgs(s, aggs)); err != nil {
			t.Fatal(err)
		}
		lo = end
	}
}

type ktAggSpec struct {
	name string
	keys []ktCol
}

func ktAggSpecs(card int) []ktAggSpec {
	one := func(t Type) ktAggSpec {
		return ktAggSpec{name: t.String(), keys: []ktCol{{name: "k", typ: t, card: card}}}
	}
	return []ktAggSpec{
		{name: "no keys"}, one(TInt64), one(TInt32), one(TDate), one(TDecimal), one(TString), one(TFloat64), one(TBool),
		{name: "string+int32", keys: []ktCol{{name: "k", typ: TString, card: 4}, {name: "k2", typ: TInt32, card: card/4 + 1}}},
		{name: "date+decimal", keys: []ktCol{{name: "k", typ: TDate, card: 3}, {name: "k2", typ: TDecimal, card: card/3 + 1}}},
	}
}

// Partial aggregation over contiguous chunks, merged in a final
// aggregator, equals the map-based group-by; so do a single aggregator and
// merging the concatenated partial states.
func TestAgg(t *testing.T) {
	r := ktRng(30)
	aggs := ktAggList()
	for _, n := range ktSizes {
		for si, spec := range ktAggSpecs(n/10 + 1) {
			if si%2 == 1 && n == 100000 {
				spec = ktAggSpecs(3)[si] // few groups
			}
			what := fmt.Sprintf("%s n=%d", spec.name, n)
			b := ktBatch(r, n, append(spec.keys, ktAggValues()...)...)
			keys := ktNames(spec.keys)
			wantFinal := ktAggRef(b, keys, aggs, true)
			wantPartial := ktAggRef(b, keys, aggs, false)

			one := NewAggregator(keys, aggs, false)
			ktFeed(t, r, one, b, aggs, 0, n)
			if one.Groups() != max(wantPartial.Rows, min(1, 1-len(keys))) {
				t.Errorf("%s: Groups() = %d, want %d", what, one.Groups(), wantPartial.Rows)
			}
			got, err := one.Result(false)
			if err != nil {
				t.Fatal(err)
			}
			ktSameBatch(t, what+" partial", got, wantPartial, 0)
			got, err = one.Result(true)
			if err != nil {
				t.Fatal(err)
			}
			ktSameBatch(t, what+" single", got, wantFinal, 1e-12)

			// Split into chunks, one partial aggregator each.
			var partials []*Batch
			for lo := 0; lo < n || len(partials) == 0; {
				hi := lo + r.IntN(n-lo+1)
				if r.IntN(4) == 0 {
					hi = lo // an empty unit
				}
				p := NewAggregator(keys, aggs, false)
				ktFeed(t, r, p, b, aggs, lo, hi)
				emit := p.Result
				if len(partials)%2 == 0 {
					emit = p.Emit // the state's own memory
				}
				res, err := emit(false)
				if err != nil {
					t.Fatal(err)
				}
				partials = append(partials, res)
				lo = hi
			}
			fin := NewAggregator(keys, aggs, true)
			for _, p := range partials {
				if err := fin.Merge(p); err != nil {
					t.Fatal(err)
				}
			}
			got, err = fin.Emit(true)
			if err != nil {
				t.Fatal(err)
			}
			ktSameBatch(t, fmt.Sprintf("%s merged from %d partials", what, len(partials)), got, wantFinal, 1e-12)
			if _, err := fin.Result(true); !errors.Is(err, errAggEmitted) {
				t.Errorf("%s: Result after Emit: %v, want errAggEmitted", what, err)
			}
			if err := fin.Merge(partials[0]); !errors.Is(err, errAggEmitted) {
				t.Errorf("%s: Merge after Emit: %v, want errAggEmitted", what, err)
			}

			all, err := Concat(partials)
			if err != nil {
				t.Fatal(err)
			}
			re := NewAggregator(keys, aggs, false)
			if err := re.Merge(all); err != nil {
				t.Fatal(err)
			}
			got, err = re.Result(false)
			if err != nil {
				t.Fatal(err)
			}
			ktSameBatch(t, what+" partial of concatenated partials", got, wantPartial, 0)
		}
	}
}

// With all hashes forced into four values, groups are told apart by key
// compares and the collision path; group order may then differ from
// first-seen order, so rows are compared as sets.
func TestAggHashCollisions(t *testing.T) {
	htTestCollide = true
	defer func() { htTestCollide = false }()
	r := ktRng(31)
	aggs := ktAggList()
	for _, n := range []int{7, 1000} {
		for _, spec := range ktAggSpecs(n/10 + 1) {
			b := ktBatch(r, n, append(spec.keys, ktAggValues()...)...)
			keys := ktNames(spec.keys)
			want := ktRows(ktAggRef(b, keys, aggs, false))
			var partials []*Batch
			for lo := 0; lo < n; {
				hi := lo + r.IntN(n-lo+1)
				p := NewAggregator(keys, aggs, false)
				ktFeed(t, r, p, b, aggs, lo, hi)
				res, err := p.Result(false)
				if err != nil {
					t.Fatal(err)
				}
				partials = append(partials, res)
				lo = hi
			}
			fin := NewAggregator(keys, aggs, false)
			for _, p := range partials {
				if err := fin.Merge(p); err != nil {
					t.Fatal(err)
				}
			}
			res, err := fin.Result(false)
			if err != nil {
				t.Fatal(err)
			}
			got := ktRows(res)
			slices.Sort(got)
			slices.Sort(want)
			ktSameRows(t, fmt.Sprintf("collide %s n=%d", spec.name, n), got, want)
		}
	}
}

func TestAggNoRows(t *testing.T) {
	aggs := plan.Aggs{plan.Sum("s", plan.Col("v")), plan.Count("c"), plan.Avg("a", plan.Col("v")),
		plan.Min("mn", plan.Col("v")), plan.Max("mx", plan.Col("s"))}
	empty := &Batch{Names: []string{"v", "s"}, Cols: []Vec{{Type: TDecimal, Scale: 2}, {Type: TString, Off: []int32{0}}}}

	// Never fed: int64 zeros.
	a := NewAggregator(nil, aggs, true)
	got, err := a.Result(true)
	if err != nil {
		t.Fatal(err)
	}
	ktSameRows(t, "never fed", ktRows(got), []string{"0|0|0|0|0"})
	if a.Groups() != 1 {
		t.Errorf("no-key Groups() = %d, want 1", a.Groups())
	}

	// Fed zero rows: typed zeros; the partial state has no row.
	p := NewAggregator(nil, aggs, false)
	if err := p.Update(empty, ktAggArgs(empty, aggs)); err != nil {
		t.Fatal(err)
	}
	part, err := p.Result(false)
	if err != nil {
		t.Fatal(err)
	}
	if part.Rows != 0 || len(part.Cols) != 6 {
		t.Errorf("partial of no rows: %d rows, columns %v", part.Rows, part.Names)
	}
	fin := NewAggregator(nil, aggs, true)
	if err := fin.Merge(part); err != nil {
		t.Fatal(err)
	}
	got, err = fin.Result(true)
	if err != nil {
		t.Fatal(err)
	}
	want := &Batch{Rows: 1, Names: []string{"s", "c", "a", "mn", "mx"}, Cols: []Vec{
		{Type: TDecimal, Scale: 2, I64: []int64{0}}, {Type: TInt64, I64: []int64{0}}, {Type: TFloat64, F64: []float64{0}},
		{Type: TDecimal, Scale: 2, I64: []int64{0}}, {Type: TString, Off: []int32{0, 0}}}}
	ktSameBatch(t, "merged no rows", got, want, 0)

	// With keys, no rows: no groups.
	kaggs := plan.Aggs{plan.Sum("tot", plan.Col("v")), plan.Count("c")}
	k := NewAggregator([]string{"s"}, kaggs, true)
	if err := k.Update(empty, ktAggArgs(empty, kaggs)); err != nil {
		t.Fatal(err)
	}
	got, err = k.Result(true)
	if err != nil {
		t.Fatal(err)
	}
	if got.Rows != 0 || got.Cols[0].Type != TString || got.Cols[1].Type != TDecimal {
		t.Errorf("keyed no rows: %d rows, %v", got.Rows, got.Cols)
	}
}

func TestAggOverflow(t *testing.T) {
	big := &Batch{Rows: 2, Names: []string{"k", "v"}, Cols: []Vec{{Type: TInt32, I32: []int32{1, 1}},
		{Type: TInt64, I64: []int64{math.MaxInt64 - 5, 10}}}}
	neg := &Batch{Rows: 2, Names: []string{"k", "v"}, Cols: []Vec{{Type: TInt32, I32: []int32{1, 1}},
		{Type: TDecimal, Scale: 2, I64: []int64{math.MinInt64 + 5, -10}}}}
	for _, keys := range [][]string{nil, {"k"}} {
		for _, b := range []*Batch{big, neg} {
			aggs := plan.Aggs{plan.Sum("total", plan.Col("v"))}
			a := NewAggregator(keys, aggs, false)
			ktWantErr(t, fmt.Sprintf("overflow keys %v", keys), a.Update(b, ktAggArgs(b, aggs)), "overflows int64")

			// Each half fits; their merge does not.
			var parts []*Batch
			for i := range 2 {
				p := NewAggregator(keys, aggs, false)
				s := Slice(b, i, i+1)
				if err := p.Update(s, ktAggArgs(s, aggs)); err != nil {
					t.Fatal(err)
				}
				res, err := p.Result(false)
				if err != nil {
					t.Fatal(err)
				}
				parts = append(parts, res)
			}
			f := NewAggregator(keys, aggs, true)
			if err := f.Merge(parts[0]); err != nil {
				t.Fatal(err)
			}
			ktWantErr(t, "merge overflow", f.Merge(parts[1]), "overflows int64")
		}
	}
}

func TestAggErrors(t *testing.T) {
	r := ktRng(32)
	b := ktBatch(r, 10, ktCol{name: "k", typ: TInt32, card: 3}, ktCol{name: "s", typ: TString}, ktCol{name: "v", typ: TInt64})
	aggs := plan.Aggs{plan.Sum("sv", plan.Col("v")), plan.Count("n")}
	a := NewAggregator([]string{"nope"}, aggs, false)
	ktWantErr(t, "missing key", a.Update(b, ktAggArgs(b, aggs)), "nope")
	a = NewAggregator([]string{"k"}, aggs, false)
	ktWantErr(t, "arg count", a.Update(b, nil), "argument vectors")
	ktWantErr(t, "missing arg", a.Update(b, []*Vec{nil, nil}), "no argument")
	short := Vec{Type: TInt64, I64: []int64{1}}
	ktWantErr(t, "short arg", a.Update(b, []*Vec{&short, nil}), "values for 10 rows")
	sumStr := plan.Aggs{plan.Sum("ss", plan.Col("s"))}
	ktWantErr(t, "sum of strings", NewAggregator(nil, sumStr, false).Update(b, ktAggArgs(b, sumStr)), "cannot take")
	if err := a.Update(b, ktAggArgs(b, aggs)); err != nil {
		t.Fatal(err)
	}
	f := Vec{Type: TFloat64, F64: make([]float64, 10)}
	ktWantErr(t, "arg type change", a.Update(b, []*Vec{&f, nil}), "values were int64")
	rekey := &Batch{Rows: b.Rows, Names: []string{"k", "v"}, Cols: []Vec{b.Cols[2], b.Cols[2]}}
	ktWantErr(t, "key type change", a.Update(rekey, ktAggArgs(rekey, aggs)), "earlier input")
	ktWantErr(t, "merge without partial columns", NewAggregator([]string{"k"}, aggs, true).Merge(b), "sv")

	dup := NewAggregator([]string{"k"}, plan.Aggs{plan.Sum("k", plan.Col("v"))}, false)
	_, err := dup.Result(true)
	ktWantErr(t, "output name = key", err, "twice")
	dup = NewAggregator(nil, plan.Aggs{plan.Avg("a", plan.Col("v")), plan.Count("a$count")}, false)
	ktWantErr(t, "partial name clash", dup.Update(b, ktAggArgs(b, dup.aggs)), "twice")
	bad := NewAggregator(nil, plan.Aggs{{Fn: 42, As: "x"}}, false)
	ktWantErr(t, "unknown function", bad.Update(b, []*Vec{nil}), "unknown function")
}

func BenchmarkAgg(b *testing.B) {
	const n = 1 << 20
	r := ktRng(33)
	src := ktBatch(r, n, ktCol{name: "flag", typ: TString, card: 3}, ktCol{name: "status", typ: TString, card: 2},
		ktCol{name: "ok", typ: TInt64, card: n / 4}, ktCol{name: "qty", typ: TDecimal, card: 50},
		ktCol{name: "price", typ: TDecimal, card: 1 << 22}, ktCol{name: "ship", typ: TDate, card: 2000})
	aggs := plan.Aggs{plan.Sum("sq", plan.Col("qty")), plan.Sum("sp", plan.Col("price")), plan.Avg("aq", plan.Col("qty")),
		plan.Count("n"), plan.Max("ms", plan.Col("ship"))}
	args := ktAggArgs(src, aggs)
	for _, keys := range [][]string{nil, {"flag", "status"}, {"ok"}} {
		b.Run(fmt.Sprint(keys), func(b *testing.B) {
			for b.Loop() {
				a := NewAggregator(keys, aggs, false)
				if err := a.Update(src, args); err != nil {
					b.Fatal(err)
				}
				if _, err := a.Result(true); err != nil {
					b.Fatal(err)
				}
			}
			ktRowsPerSec(b, n)
		})
	}
}

// Packed keys change layout as longer strings arrive: batches of keys of
// at most 7 bytes, then up to 15 (two words), then longer (general path),
// each with rows of earlier groups mixed in. Group order stays first-seen
// throughout, so the result must equal the reference's row for row.
func TestAggPackedWidening(t *testing.T) {
	r := ktRng(35)
	words := [][]string{
		{"", "a", "R", "N", "abcdefg", "A\x00", "\x00"},
		{"abcdefgh", "ABCDEFGHIJKLMNO", "a", "abcdefg\x00", "R"},
		{"a much longer key than fifteen", "N", "ABCDEFGHIJKLMNO", "abcdefgh"},
	}
	aggs := plan.Aggs{plan.Sum("s", plan.Col("v")), plan.Count("c"), plan.Min("mn", plan.Col("v"))}
	for _, collide := range []bool{false, true} {
		htTestCollide = collide
		var parts []*Batch
		var pool []string
		for _, ws := range words {
			pool = append(pool, ws...)
			n := 200
			b := &Batch{Names: []string{"k", "i", "v"}, Rows: n,
				Cols: []Vec{{Type: TString, Off: []int32{0}}, {Type: TInt32}, {Type: TInt64}}}
			for range n {
				w := pool[r.IntN(len(pool))]
				b.Cols[0].Str = append(b.Cols[0].Str, w...)
				b.Cols[0].Off = append(b.Cols[0].Off, int32(len(b.Cols[0].Str)))
				b.Cols[1].I32 = append(b.Cols[1].I32, int32(r.IntN(3)-1))
				b.Cols[2].I64 = append(b.Cols[2].I64, r.Int64N(100))
			}
			parts = append(parts, b)
		}
		all, err := Concat(parts)
		if err != nil {
			t.Fatal(err)
		}
		for _, keys := range [][]string{{"k"}, {"k", "i"}, {"i", "k"}} {
			a := NewAggregator(keys, aggs, false)
			for _, p := range parts {
				if err := a.Update(p, ktAggArgs(p, aggs)); err != nil {
					t.Fatal(err)
				}
			}
			got, err := a.Result(true)
			if err != nil {
				t.Fatal(err)
			}
			what := fmt.Sprintf("keys %v collide %v", keys, collide)
			if collide {
				g, w := ktRows(got), ktRows(ktAggRef(all, keys, aggs, true))
				slices.Sort(g)
				slices.Sort(w)
				ktSameRows(t, what, g, w)
			} else {
				ktSameBatch(t, what, got, ktAggRef(all, keys, aggs, true), 0)
			}
		}
	}
	htTestCollide = false
}

// Keys in runs (sorted input) take the run-aware lookup; batches split
// inside runs and keys of value 0 at the start check its edges.
func TestAggSortedRuns(t *testing.T) {
	r := ktRng(36)
	const n = 3000
	b := &Batch{Names: []string{"k", "v"}, Rows: n, Cols: []Vec{{Type: TInt64}, {Type: TInt64}}}
	k := int64(0)
	for range n {
		if r.IntN(4) == 0 {
			k += int64(r.IntN(3))
		}
		b.Cols[0].I64 = append(b.Cols[0].I64, k)
		b.Cols[1].I64 = append(b.Cols[1].I64, r.Int64N(1000))
	}
	aggs := plan.Aggs{plan.Sum("s", plan.Col("v")), plan.Count("c"), plan.Avg("a", plan.Col("v"))}
	want := ktAggRef(b, []string{"k"}, aggs, true)
	for _, collide := range []bool{false, true} {
		htTestCollide = collide
		a := NewAggregator([]string{"k"}, aggs, false)
		ktFeed(t, r, a, b, aggs, 0, n)
		got, err := a.Result(true)
		htTestCollide = false
		if err != nil {
			t.Fatal(err)
		}
		ktSameBatch(t, fmt.Sprintf("sorted runs, collide %v", collide), got, want, 1e-12)
	}
}

// Past aggPackedGroups groups, packed mode hands over to the general path,
// in the middle of a batch or between batches.
func TestAggPackedToGeneral(t *testing.T) {
	r := ktRng(37)
	const n = 5 * aggPackedGroups
	b := ktBatch(r, n, ktCol{name: "k", typ: TInt64, card: 3 * aggPackedGroups}, ktCol{name: "s", typ: TString, card: 3},
		ktCol{name: "v", typ: TInt64, card: 100})
	aggs := plan.Aggs{plan.Sum("sum", plan.Col("v")), plan.Count("c")}
	for _, keys := range [][]string{{"k"}, {"s", "k"}} {
		for _, cuts := range [][]int{{n}, {aggPackedGroups / 2, n}, {aggPackedGroups + 1, aggPackedGroups + 5, n}} {
			a := NewAggregator(keys, aggs, false)
			lo := 0
			for _, hi := range cuts {
				s := Slice(b, lo, hi)
				if err := a.Update(s, ktAggArgs(s, aggs)); err != nil {
					t.Fatal(err)
				}
				lo = hi
			}
			if a.packed {
				t.Fatalf("keys %v: still packed with %d groups", keys, a.Groups())
			}
			got, err := a.Result(true)
			if err != nil {
				t.Fatal(err)
			}
			ktSameBatch(t, fmt.Sprintf("keys %v cuts %v", keys, cuts), got, ktAggRef(b, keys, aggs, true), 0)
		}
	}
}
