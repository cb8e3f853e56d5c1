package cpu

import (
	"fmt"
	"math"
	"testing"
)

// Integer-coded columns holding the same numbers hash alike, alone and in
// composite keys.
func TestHashIntegerWidths(t *testing.T) {
	r := ktRng(10)
	for _, n := range ktSizes {
		x := ktBatch(r, n, ktCol{name: "s", typ: TString, card: 50})
		i64 := make([]int64, n)
		i32 := make([]int32, n)
		for i := range n {
			v := r.Int64N(1<<32) - 1<<31
			i64[i], i32[i] = v, int32(v)
		}
		b := &Batch{Rows: n, Names: []string{"a", "b", "c", "d", "s"}, Cols: []Vec{
			{Type: TInt64, I64: i64}, {Type: TInt32, I32: i32}, {Type: TDate, I32: i32},
			{Type: TDecimal, Scale: 2, I64: i64}, x.Cols[0]}}
		want := HashColumns(b, []int{0}, nil)
		for c := 1; c < 4; c++ {
			got := HashColumns(b, []int{c}, nil)
			for i := range n {
				if got[i] != want[i] {
					t.Fatalf("n=%d: %s hash of %d differs from int64's", n, b.Cols[c].Type, i64[i])
				}
			}
		}
		want = HashColumns(b, []int{4, 0}, nil)
		got := HashColumns(b, []int{4, 1}, nil)
		for i := range n {
			if got[i] != want[i] {
				t.Fatalf("n=%d: composite (string, int32) hash differs from (string, int64)", n)
			}
		}
	}
}

// Strings hash by their bytes, wherever they lie in Str.
func TestHashStringsByBytes(t *testing.T) {
	r := ktRng(11)
	for _, n := range ktSizes {
		b := ktBatch(r, n+3, ktCol{name: "s", typ: TString, card: n/2 + 1})
		view := Slice(b, 3, n+3)
		shifted := &Batch{Rows: n, Names: []string{"s"}, Cols: []Vec{{Type: TString,
			Off: b.Cols[0].Off[3:], Str: b.Cols[0].Str}}}
		copied := Gather(b, ktIotaFrom(3, n))
		h1 := HashColumns(view, []int{0}, nil)
		h2 := HashColumns(shifted, []int{0}, nil)
		h3 := HashColumns(copied, []int{0}, nil)
		for i := range n {
			if h1[i] != h2[i] || h1[i] != h3[i] {
				t.Fatalf("n=%d row %d: hashes of %q differ by layout", n, i, view.Cols[0].StrAt(i))
			}
		}
	}
}

func ktIotaFrom(lo, n int) []int32 {
	sel := make([]int32, n)
	for i := range sel {
		sel[i] = int32(lo + i)
	}
	return sel
}

// Distinct keys get distinct hashes, both halves of the hash are spread,
// and composite keys are order-sensitive.
func TestHashDistinct(t *testing.T) {
	const n = 100000
	seq := make([]int64, n)
	for i := range seq {
		seq[i] = int64(i)
	}
	strs := &Vec{Type: TString, Off: make([]int32, n+1)}
	for i := range n {
		strs.Str = append(strs.Str, ktStrOf(int64(i), i%2 == 0)...)
		strs.Off[i+1] = int32(len(strs.Str))
	}
	b := &Batch{Rows: n, Names: []string{"i", "s", "f"}, Cols: []Vec{{Type: TInt64, I64: seq}, *strs,
		{Type: TFloat64, F64: make([]float64, n)}}}
	for i := range n {
		b.Cols[2].F64[i] = float64(i) * 0.5
	}
	for c := range b.Cols {
		h := HashColumns(b, []int{c}, nil)
		seen := make(map[uint64]int, n)
		var low, high [8]int
		for i, x := range h {
			if j, dup := seen[x]; dup {
				t.Fatalf("%s column: rows %d and %d share hash %x", b.Cols[c].Type, j, i, x)
			}
			seen[x] = i
			low[x%8]++
			high[x>>61]++
		}
		for k := range 8 {
			if math.Abs(float64(low[k])-n/8) > n/80 || math.Abs(float64(high[k])-n/8) > n/80 {
				t.Errorf("%s column: poorly spread hashes: low bits %v, high bits %v", b.Cols[c].Type, low, high)
				break
			}
		}
	}
	// (a, b) and (b, a) differ.
	pair := &Batch{Rows: n, Names: []string{"a", "b"}, Cols: []Vec{{Type: TInt64, I64: seq},
		{Type: TInt64, I64: make([]int64, n)}}}
	for i := range n {
		pair.Cols[1].I64[i] = int64(n - 1 - i)
	}
	ab := HashColumns(pair, []int{0, 1}, nil)
	ba := HashColumns(pair, []int{1, 0}, nil)
	same := 0
	for i := range n {
		if ab[i] == ba[i] && seq[i] != pair.Cols[1].I64[i] {
			same++
		}
	}
	if same > 0 {
		t.Errorf("%d composite keys (a, b) hash like (b, a)", same)
	}
}

func TestHashEdgeCases(t *testing.T) {
	b := &Batch{Rows: 4, Names: []string{"f", "b"}, Cols: []Vec{
		{Type: TFloat64, F64: []float64{0, math.Copysign(0, -1), 1.5, -1.5}},
		{Type: TBool, B: []bool{true, true, false, true}}}}
	h := HashColumns(b, []int{0}, nil)
	if h[0] != h[1] {
		t.Errorf("-0 and +0 hash apart")
	}
	if h[2] == h[3] {
		t.Errorf("1.5 and -1.5 hash alike")
	}
	hb := HashColumns(b, []int{1}, nil)
	if hb[0] != hb[1] || hb[0] == hb[2] {
		t.Errorf("bool hashes %x", hb)
	}

	// dst reuse and allocation.
	dst := make([]uint64, 2, 10)
	got := HashColumns(b, []int{0}, dst)
	if len(got) != 4 || &got[0] != &dst[0] {
		t.Errorf("HashColumns did not reuse a dst of capacity 10")
	}
	short := make([]uint64, 1)
	if got := HashColumns(b, []int{0}, short); len(got) != 4 || &got[0] == &short[0] {
		t.Errorf("HashColumns wrote into a too short dst")
	}
	for i, x := range HashColumns(b, nil, []uint64{7, 7, 7, 7}) {
		if x != 0 {
			t.Errorf("no-key hash of row %d = %x, want 0", i, x)
		}
	}
}

func BenchmarkHashColumns(b *testing.B) {
	const n = 1 << 20
	r := ktRng(12)
	src := ktBatch(r, n, ktCol{name: "k", typ: TInt64}, ktCol{name: "s", typ: TString, card: 100000})
	for _, keys := range [][]int{{0}, {1}, {0, 1}} {
		b.Run(fmt.Sprint(keys), func(b *testing.B) {
			dst := make([]uint64, n)
			for b.Loop() {
				HashColumns(src, keys, dst)
			}
			ktRowsPerSec(b, n)
		})
	}
}
