package cpu

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"gostachio/plan"
)

// ktSortRef is a stable comparison sort of all rows: the expected row order.
func ktSortRef(b *Batch, keys []plan.SortKey) []int32 {
	cols := make([]*Vec, len(keys))
	for i, k := range keys {
		cols[i] = &b.Cols[b.Col(k.Col)]
	}
	idx := make([]int32, b.Rows)
	for i := range idx {
		idx[i] = int32(i)
	}
	sort.SliceStable(idx, func(x, y int) bool {
		for i, k := range keys {
			c := ktCompare(cols[i], int(idx[x]), int(idx[y]))
			if k.Desc {
				c = -c
			}
			if c != 0 {
				return c < 0
			}
		}
		return false
	})
	return idx
}

// ktCheckSorted compares Sort's output with rows want of b.
func ktCheckSorted(t *testing.T, what string, got, b *Batch, want []int32) {
	t.Helper()
	if err := got.Validate(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	// Gather is tested against per-cell rendering in TestGather.
	exp := Gather(b, want)
	if !ktSameData(got, exp) {
		ktSameRows(t, what, ktRows(got), ktRows(exp))
		t.Fatalf("%s: output differs", what)
	}
}

func ktSortCols(card int) []ktCol {
	return []ktCol{
		{name: "i64", typ: TInt64, card: card}, {name: "wide", typ: TInt64}, {name: "wide2", typ: TInt64},
		{name: "i32", typ: TInt32, card: card}, {name: "d", typ: TDate, card: card}, {name: "dec", typ: TDecimal, card: card},
		{name: "f", typ: TFloat64, card: card}, {name: "flag", typ: TString, card: 3}, {name: "s", typ: TString, card: card},
		{name: "long", typ: TString, card: card, long: true}, {name: "b", typ: TBool, card: 2},
		{name: "id", typ: TInt32, card: 1 << 24},
	}
}

// ktSortKeySets covers the packed radix path, packed exact short strings,
// string prefixes, keys that overflow 64 bits, and the comparison path.
var ktSortKeySets = []string{
	"wide",
	"i64 desc",
	"flag desc, i32",
	"d desc, dec, long",
	"long desc",
	"s, b desc",
	"f, b desc",
	"wide, wide2 desc, i32",
	"b, flag, d desc, i64",
	"dec desc, s desc, f",
	"",
}

func ktParseKeys(s string) []plan.SortKey {
	var out []plan.SortKey
	for _, k := range strings.Split(s, ",") {
		if k = strings.TrimSpace(k); k != "" {
			out = append(out, plan.ParseSortKey(k))
		}
	}
	return out
}

func TestSort(t *testing.T) {
	r := ktRng(40)
	for _, n := range ktSizes {
		for ci, card := range []int{n/4 + 1, 5} {
			if n == 100000 && ci == 1 {
				continue
			}
			b := ktBatch(r, n, ktSortCols(card)...)
			for _, ks := range ktSortKeySets {
				keys := ktParseKeys(ks)
				want := ktSortRef(b, keys)
				limits := []int{0, -1, 1, 5, n / 10, n / 2, n, n + 3}
				if n > 1000 {
					limits = []int{0, 5, n / 10, n + 3}
				}
				for _, limit := range limits {
					got, err := Sort(b, keys, limit)
					if err != nil {
						t.Fatal(err)
					}
					w := want
					if limit > 0 && limit < n {
						w = want[:limit]
					}
					ktCheckSorted(t, fmt.Sprintf("Sort n=%d card=%d by %q limit %d", n, card, ks, limit), got, b, w)
				}
			}
		}
	}
}

// Strings of one column sharing a 7-byte prefix (or being prefixes of one
// another, or holding zero bytes) still sort bytewise.
func TestSortStringPrefixes(t *testing.T) {
	vals := []string{"abcdefgh", "abcdefg", "abcdefg\x00", "abcdefgz", "abc", "abc\x00", "", "\x00", "abcdefgha",
		"b", "abcdefg\xff", "Customer#000000010", "Customer#000000001", "Customer#00000001"}
	r := ktRng(41)
	for _, n := range []int{7, 1000} {
		v := Vec{Type: TString, Off: make([]int32, n+1)}
		short := Vec{Type: TString, Off: make([]int32, n+1)}
		pre := Vec{Type: TString, Off: make([]int32, n+1)}
		for i := range n {
			s := vals[r.IntN(len(vals))]
			v.Str = append(v.Str, s...)
			v.Off[i+1] = int32(len(v.Str))
			pre.Str = append(append(pre.Str, "shared prefix/"...), s...)
			pre.Off[i+1] = int32(len(pre.Str))
			if len(s) > 7 {
				s = s[:7]
			}
			short.Str = append(short.Str, s...)
			short.Off[i+1] = int32(len(short.Str))
		}
		id := Vec{Type: TInt32, I32: make([]int32, n)}
		for i := range id.I32 {
			id.I32[i] = int32(i)
		}
		b := &Batch{Rows: n, Names: []string{"s", "short", "pre", "id"}, Cols: []Vec{v, short, pre, id}}
		for _, ks := range []string{"s", "s desc", "short desc", "short, s desc", "s desc, short", "pre", "pre desc, short"} {
			keys := ktParseKeys(ks)
			for _, limit := range []int{0, 3} {
				got, err := Sort(b, keys, limit)
				if err != nil {
					t.Fatal(err)
				}
				want := ktSortRef(b, keys)
				if limit > 0 {
					want = want[:limit]
				}
				ktCheckSorted(t, fmt.Sprintf("prefixes n=%d by %q limit %d", n, ks, limit), got, b, want)
			}
		}
	}
}

func TestSortErrors(t *testing.T) {
	b := ktBatch(ktRng(42), 3, ktCol{name: "a", typ: TInt64})
	_, err := Sort(b, []plan.SortKey{{Col: "zz"}}, 0)
	ktWantErr(t, "unknown sort column", err, "zz")
	b.Cols[0].I64 = b.Cols[0].I64[:2]
	_, err = Sort(b, []plan.SortKey{{Col: "a"}}, 0)
	ktWantErr(t, "short column", err, "2 values")
}

func BenchmarkSort(b *testing.B) {
	const n = 1 << 20
	src := ktBatch(ktRng(43), n, ktCol{name: "k", typ: TInt64}, ktCol{name: "d", typ: TDate, card: 2500},
		ktCol{name: "name", typ: TString, card: n, long: true}, ktCol{name: "v", typ: TDecimal})
	for _, c := range []struct {
		keys  string
		limit int
	}{{"k", 0}, {"d desc, v", 0}, {"name", 0}, {"v desc, d", 10}, {"name desc", 100}} {
		b.Run(fmt.Sprintf("%s/limit=%d", c.keys, c.limit), func(b *testing.B) {
			keys := ktParseKeys(c.keys)
			for b.Loop() {
				if _, err := Sort(src, keys, c.limit); err != nil {
					b.Fatal(err)
				}
			}
			ktRowsPerSec(b, n)
		})
	}
}
