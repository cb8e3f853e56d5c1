package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Shared helpers of the relational kernel tests (prefix kt).

// ktSizes are the batch sizes every kernel is tested under.
var ktSizes = []int{0, 1, 7, 1000, 100000}

func ktRng(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

// ktCol describes a generated column: values drawn uniformly from card
// distinct values (card <= 0: a wide range, nearly all distinct).
type ktCol struct {
	name  string
	typ   Type
	card  int
	scale int8 // decimals (default 2)
	long  bool // strings: "Customer#000000123"-style, sharing long prefixes
}

// ktIntOf maps domain value x to the integer-coded value of every
// int64/int32/decimal column, so keys of different widths can join.
func ktIntOf(x int64) int64 { return x*31 - 1000 }

// ktStrOf maps x to a distinct string: "" for 0, base-26 digits, some with
// a "C#" prefix or a long suffix (so lengths cross 7, 8 and 16 bytes).
func ktStrOf(x int64, long bool) string {
	if long {
		return fmt.Sprintf("Customer#%09d", x)
	}
	if x == 0 {
		return ""
	}
	var sb strings.Builder
	if x%5 == 0 {
		sb.WriteString("C#")
	}
	for u := x; u > 0; u /= 26 {
		sb.WriteByte(byte('a' + u%26))
	}
	if x%3 == 0 {
		sb.WriteString("-with-a-long-suffix")
	}
	return sb.String()
}

func ktVec(r *rand.Rand, c ktCol, n int) Vec {
	draw := func() int64 {
		if c.card <= 0 {
			return r.Int64N(1 << 40)
		}
		return r.Int64N(int64(c.card))
	}
	v := Vec{Type: c.typ}
	switch c.typ {
	case TInt64:
		v.I64 = make([]int64, n)
		for i := range n {
			v.I64[i] = ktIntOf(draw())
		}
	case TDecimal:
		v.Scale = c.scale
		if v.Scale == 0 {
			v.Scale = 2
		}
		v.I64 = make([]int64, n)
		for i := range n {
			v.I64[i] = ktIntOf(draw())
		}
	case TInt32:
		v.I32 = make([]int32, n)
		for i := range n {
			v.I32[i] = int32(ktIntOf(draw() % (1 << 25)))
		}
	case TDate:
		v.I32 = make([]int32, n)
		for i := range n {
			v.I32[i] = int32(8000 + draw()%30000)
		}
	case TFloat64:
		v.F64 = make([]float64, n)
		for i := range n {
			v.F64[i] = float64(draw()%100000)*0.25 - 1000
		}
	case TBool:
		v.B = make([]bool, n)
		for i := range n {
			v.B[i] = draw()%2 == 1
		}
	case TString:
		v.Off = make([]int32, n+1)
		for i := range n {
			v.Str = append(v.Str, ktStrOf(draw(), c.long)...)
			v.Off[i+1] = int32(len(v.Str))
		}
	}
	return v
}

func ktBatch(r *rand.Rand, n int, cols ...ktCol) *Batch {
	b := &Batch{Rows: n}
	for _, c := range cols {
		b.Names = append(b.Names, c.name)
		b.Cols = append(b.Cols, ktVec(r, c, n))
	}
	return b
}

// ktAllTypes is one column of every type.
func ktAllTypes(card int) []ktCol {
	return []ktCol{
		{name: "i64", typ: TInt64, card: card}, {name: "i32", typ: TInt32, card: card},
		{name: "d", typ: TDate, card: card}, {name: "dec", typ: TDecimal, card: card},
		{name: "f", typ: TFloat64, card: card}, {name: "s", typ: TString, card: card},
		{name: "b", typ: TBool, card: card},
	}
}

// ktCell renders value i exactly (unlike Vec.Format, which rounds).
func ktCell(v *Vec, i int) string {
	switch v.Type {
	case TInt64, TDecimal:
		return strconv.FormatInt(v.I64[i], 10)
	case TInt32, TDate:
		return strconv.FormatInt(int64(v.I32[i]), 10)
	case TFloat64:
		return strconv.FormatFloat(v.F64[i], 'g', -1, 64)
	case TString:
		return strconv.Quote(string(v.StrAt(i)))
	case TBool:
		return strconv.FormatBool(v.B[i])
	}
	return "?"
}

// ktZeroCell is ktCell of a type's zero value.
func ktZeroCell(t Type) string {
	switch t {
	case TString:
		return `""`
	case TBool:
		return "false"
	}
	return "0"
}

func ktRow(b *Batch, i int) string {
	cells := make([]string, len(b.Cols))
	for c := range b.Cols {
		cells[c] = ktCell(&b.Cols[c], i)
	}
	return strings.Join(cells, "|")
}

func ktRows(b *Batch) []string {
	out := make([]string, b.Rows)
	for i := range out {
		out[i] = ktRow(b, i)
	}
	return out
}

// ktKey renders the join/group key of row i: integer-coded values by
// their int64 value, so keys of different widths agree.
func ktKey(b *Batch, cols []int, i int) string {
	parts := make([]string, len(cols))
	for k, c := range cols {
		v := &b.Cols[c]
		switch v.Type {
		case TInt64, TInt32, TDate, TDecimal:
			parts[k] = "i" + strconv.FormatInt(v.Int(i), 10)
		case TFloat64:
			f := v.F64[i]
			if f == 0 {
				f = 0
			}
			parts[k] = "f" + strconv.FormatUint(math.Float64bits(f), 16)
		default:
			parts[k] = ktCell(v, i)
		}
	}
	return strings.Join(parts, "|")
}

func ktColIdx(t testing.TB, b *Batch, names []string) []int {
	t.Helper()
	out := make([]int, len(names))
	for i, n := range names {
		out[i] = b.Col(n)
		if out[i] < 0 {
			t.Fatalf("no column %s", n)
		}
	}
	return out
}

// ktSameRows fails unless got's rows are want (in order), listing the
// first differences.
func ktSameRows(t testing.TB, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d rows, want %d", what, len(got), len(want))
	}
	bad := 0
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			if bad < 5 {
				t.Errorf("%s: row %d = %s, want %s", what, i, got[i], want[i])
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d rows differ", what, bad)
	}
}

// ktSameBatch compares names, types, scales and values; float64 values
// within a relative tolerance tol.
func ktSameBatch(t testing.TB, what string, got, want *Batch, tol float64) {
	t.Helper()
	if err := got.Validate(); err != nil {
		t.Fatalf("%s: invalid output: %v", what, err)
	}
	if strings.Join(got.Names, ",") != strings.Join(want.Names, ",") {
		t.Fatalf("%s: columns %v, want %v", what, got.Names, want.Names)
	}
	if got.Rows != want.Rows {
		t.Fatalf("%s: %d rows, want %d", what, got.Rows, want.Rows)
	}
	for c := range want.Cols {
		g, w := &got.Cols[c], &want.Cols[c]
		if g.Type != w.Type || g.Scale != w.Scale {
			t.Fatalf("%s: column %s is %s, want %s", what, want.Names[c], gthTypeName(g), gthTypeName(w))
		}
		bad := 0
		for i := range want.Rows {
			ok := ktCell(g, i) == ktCell(w, i)
			if !ok && g.Type == TFloat64 {
				x, y := g.F64[i], w.F64[i]
				ok = math.Abs(x-y) <= tol*math.Max(math.Abs(x), math.Abs(y))
			}
			if !ok {
				if bad < 5 {
					t.Errorf("%s: column %s row %d = %s, want %s", what, want.Names[c], i, ktCell(g, i), ktCell(w, i))
				}
				bad++
			}
		}
		if bad > 0 {
			t.Fatalf("%s: column %s: %d values differ", what, want.Names[c], bad)
		}
	}
}

// ktSameData reports whether got and want hold the same names, types and
// values (bit-exact), without rendering cells: the fast check for large
// outputs (ktSameRows then shows the differences).
func ktSameData(got, want *Batch) bool {
	if got.Rows != want.Rows || len(got.Cols) != len(want.Cols) {
		return false
	}
	for c := range want.Cols {
		g, w := &got.Cols[c], &want.Cols[c]
		if got.Names[c] != want.Names[c] || g.Type != w.Type || g.Scale != w.Scale {
			return false
		}
		n := want.Rows
		switch w.Type {
		case TInt64, TDecimal:
			if !slices.Equal(g.I64[:n], w.I64[:n]) {
				return false
			}
		case TInt32, TDate:
			if !slices.Equal(g.I32[:n], w.I32[:n]) {
				return false
			}
		case TFloat64:
			for i := range n {
				if math.Float64bits(g.F64[i]) != math.Float64bits(w.F64[i]) {
					return false
				}
			}
		case TBool:
			if !slices.Equal(g.B[:n], w.B[:n]) {
				return false
			}
		case TString:
			for i := range n {
				if string(g.StrAt(i)) != string(w.StrAt(i)) {
					return false
				}
			}
		}
	}
	return true
}

func ktWantErr(t testing.TB, what string, err error, substr string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want one mentioning %q", what, substr)
	} else if !strings.Contains(err.Error(), substr) {
		t.Errorf("%s: error %q does not mention %q", what, err, substr)
	}
}

func ktRowsPerSec(b *testing.B, rows int) {
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// ---- Gather, Concat, Slice

func TestGather(t *testing.T) {
	r := ktRng(1)
	for _, n := range ktSizes {
		src := ktBatch(r, n+5, ktAllTypes(n/3+1)...)
		// A view whose strings do not start at byte 0.
		b := Slice(src, 5, n+5)
		for _, m := range []int{0, 1, 7, 2 * n} {
			sel := make([]int32, m)
			if n > 0 {
				for i := range sel {
					sel[i] = int32(r.IntN(n))
				}
			} else {
				sel = sel[:0]
			}
			g := Gather(b, sel)
			if err := g.Validate(); err != nil {
				t.Fatalf("n=%d m=%d: %v", n, m, err)
			}
			want := make([]string, len(sel))
			for i, s := range sel {
				want[i] = ktRow(src, int(s)+5)
			}
			ktSameRows(t, fmt.Sprintf("Gather n=%d m=%d", n, len(sel)), ktRows(g), want)
			for c := range g.Cols {
				if g.Cols[c].Type != b.Cols[c].Type || g.Cols[c].Scale != b.Cols[c].Scale || g.Names[c] != b.Names[c] {
					t.Fatalf("Gather changed column %s", b.Names[c])
				}
			}
		}
	}
}

func TestConcat(t *testing.T) {
	r := ktRng(2)
	for _, n := range ktSizes {
		b := ktBatch(r, n, ktAllTypes(n/3+1)...)
		// Random pieces: views (Slice), copies (Gather) and empty batches,
		// including an empty string vector without offsets.
		var parts []*Batch
		for lo := 0; lo < n; {
			hi := lo + r.IntN(n-lo+1)
			switch r.IntN(3) {
			case 0:
				parts = append(parts, Slice(b, lo, hi))
			case 1:
				sel := make([]int32, hi-lo)
				for i := range sel {
					sel[i] = int32(lo + i)
				}
				parts = append(parts, Gather(b, sel))
			default:
				parts = append(parts, Slice(b, lo, hi), Empty(b))
			}
			lo = hi
		}
		bare := Empty(b)
		for c := range bare.Cols {
			bare.Cols[c].Off = nil
		}
		parts = append(parts, bare, Empty(b))
		got, err := Concat(parts)
		if err != nil {
			t.Fatal(err)
		}
		if err := got.Validate(); err != nil {
			t.Fatal(err)
		}
		ktSameRows(t, fmt.Sprintf("Concat n=%d of %d", n, len(parts)), ktRows(got), ktRows(b))
	}

	b := ktBatch(r, 10, ktAllTypes(5)...)
	if got, err := Concat([]*Batch{b}); err != nil || got != b {
		t.Errorf("Concat of one batch: %p %v, want the batch itself", got, err)
	}
	_, err := Concat(nil)
	ktWantErr(t, "Concat()", err, "no batches")
	_, err = Concat([]*Batch{b, nil})
	ktWantErr(t, "Concat with nil", err, "nil")

	renamed := Slice(b, 0, 3)
	renamed.Names[2] = "other"
	_, err = Concat([]*Batch{b, renamed})
	ktWantErr(t, "Concat renamed", err, "other")

	retyped := Slice(b, 0, 3)
	retyped.Cols[1] = Vec{Type: TInt64, I64: make([]int64, 3)}
	_, err = Concat([]*Batch{b, retyped})
	ktWantErr(t, "Concat retyped", err, "i32")

	rescaled := Slice(b, 0, 3)
	rescaled.Cols[3].Scale = 4
	_, err = Concat([]*Batch{b, rescaled})
	ktWantErr(t, "Concat rescaled", err, "dec")

	short := Slice(b, 0, 3)
	short.Cols = short.Cols[:4]
	_, err = Concat([]*Batch{b, short})
	ktWantErr(t, "Concat fewer columns", err, "columns")
}

func TestSlice(t *testing.T) {
	r := ktRng(3)
	for _, n := range ktSizes {
		b := ktBatch(r, n, ktAllTypes(0)...)
		all := ktRows(b)
		for range 5 {
			lo := r.IntN(n + 1)
			hi := lo + r.IntN(n-lo+1)
			s := Slice(b, lo, hi)
			if err := s.Validate(); err != nil {
				t.Fatalf("Slice(%d, %d) of %d: %v", lo, hi, n, err)
			}
			ktSameRows(t, fmt.Sprintf("Slice(%d, %d)", lo, hi), ktRows(s), all[lo:hi])
			if s.Cols[5].Off[0] != 0 {
				t.Errorf("Slice(%d, %d): string offsets start at %d", lo, hi, s.Cols[5].Off[0])
			}
			// Appending to a view must not write into b.
			if hi < n {
				before := b.Cols[0].I64[hi]
				_ = append(s.Cols[0].I64, before+1)
				if b.Cols[0].I64[hi] != before {
					t.Fatalf("appending to a Slice view changed the source")
				}
			}
		}
	}
	defer func() {
		if recover() == nil {
			t.Errorf("Slice out of range did not panic")
		}
	}()
	Slice(&Batch{Rows: 3}, 2, 4)
}

func BenchmarkGather(b *testing.B) {
	const n = 1 << 20
	r := ktRng(4)
	src := ktBatch(r, n, ktCol{name: "k", typ: TInt64, card: 0}, ktCol{name: "d", typ: TDate, card: 1000},
		ktCol{name: "s", typ: TString, card: 1000})
	sel := make([]int32, n)
	for i := range sel {
		sel[i] = int32(r.IntN(n))
	}
	for b.Loop() {
		Gather(src, sel)
	}
	ktRowsPerSec(b, n)
}
