package cpu

import (
	"fmt"
	"math"
	"testing"
)

// ktPartsOf partitions b (which has a unique int64 column "row") and
// returns each row's part, checking conservation, order within parts,
// and that each part keeps b's schema.
func ktPartsOf(t *testing.T, what string, b *Batch, keys []string, parts int) []int {
	t.Helper()
	ps, err := Partition(b, keys, parts)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != parts {
		t.Fatalf("%s: %d parts, want %d", what, len(ps), parts)
	}
	rowCol := b.Col("row")
	part := make([]int, b.Rows)
	for i := range part {
		part[i] = -1
	}
	total := 0
	for p, pb := range ps {
		if err := pb.Validate(); err != nil {
			t.Fatalf("%s part %d: %v", what, p, err)
		}
		for c := range b.Cols {
			if pb.Names[c] != b.Names[c] || pb.Cols[c].Type != b.Cols[c].Type || pb.Cols[c].Scale != b.Cols[c].Scale {
				t.Fatalf("%s part %d: column %d is %s %s", what, p, c, pb.Names[c], pb.Cols[c].Type)
			}
		}
		last := int64(-1)
		for i := range pb.Rows {
			row := pb.Cols[rowCol].I64[i]
			if row <= last {
				t.Fatalf("%s part %d: row %d after row %d", what, p, row, last)
			}
			last = row
			if part[row] >= 0 {
				t.Fatalf("%s: row %d in parts %d and %d", what, row, part[row], p)
			}
			part[row] = p
		}
		// Gather is tested against per-cell rendering in TestGather.
		if !ktSameData(pb, Gather(b, ktIDs(pb, rowCol))) {
			t.Fatalf("%s part %d: rows differ from the input rows they name", what, p)
		}
		total += pb.Rows
	}
	if total != b.Rows {
		t.Fatalf("%s: parts hold %d rows, want %d", what, total, b.Rows)
	}
	return part
}

func ktIDs(b *Batch, rowCol int) []int32 {
	ids := make([]int32, b.Rows)
	for i, x := range b.Cols[rowCol].I64 {
		ids[i] = int32(x)
	}
	return ids
}

func ktWithRowIDs(b *Batch) *Batch {
	ids := make([]int64, b.Rows)
	for i := range ids {
		ids[i] = int64(i)
	}
	b.Names = append(b.Names, "row")
	b.Cols = append(b.Cols, Vec{Type: TInt64, I64: ids})
	return b
}

func TestPartition(t *testing.T) {
	r := ktRng(50)
	for _, n := range ktSizes {
		for _, spec := range ktAggSpecs(n/10 + 1) {
			b := ktWithRowIDs(ktBatch(r, n, append(spec.keys, ktCol{name: "v", typ: TString}, ktCol{name: "dec", typ: TDecimal})...))
			keys := ktNames(spec.keys)
			kc := ktColIdx(t, b, keys)
			hs := HashColumns(b, kc, nil)
			rowKeys := make([]string, n)
			for i := range rowKeys {
				rowKeys[i] = ktKey(b, kc, i)
			}
			for _, parts := range []int{1, 2, 3, 4, 7} {
				what := fmt.Sprintf("%s n=%d parts=%d", spec.name, n, parts)
				part := ktPartsOf(t, what, b, keys, parts)
				// Key locality: one part per key; and the documented rule.
				where := map[string]int{}
				for i, p := range part {
					k := rowKeys[i]
					if q, ok := where[k]; ok && q != p {
						t.Fatalf("%s: key %s in parts %d and %d", what, k, q, p)
					}
					where[k] = p
					if want := int(hs[i] % uint64(parts)); p != want {
						t.Fatalf("%s: row %d in part %d, want hash mod parts = %d", what, i, p, want)
					}
				}
				if len(keys) == 0 {
					for i, p := range part {
						if p != 0 {
							t.Fatalf("%s: row %d without keys in part %d", what, i, p)
						}
					}
				}
			}
		}
	}
}

// An int32 key and an int64 key of the same values partition alike; many
// distinct keys spread evenly.
func TestPartitionWidthsAndSpread(t *testing.T) {
	r := ktRng(51)
	const n = 100000
	i64 := make([]int64, n)
	i32 := make([]int32, n)
	for i := range n {
		v := r.Int64N(1<<32) - 1<<31
		i64[i], i32[i] = v, int32(v)
	}
	wide := ktWithRowIDs(&Batch{Rows: n, Names: []string{"k"}, Cols: []Vec{{Type: TInt64, I64: i64}}})
	narrow := ktWithRowIDs(&Batch{Rows: n, Names: []string{"k"}, Cols: []Vec{{Type: TInt32, I32: i32}}})
	date := ktWithRowIDs(&Batch{Rows: n, Names: []string{"k"}, Cols: []Vec{{Type: TDate, I32: i32}}})
	for _, parts := range []int{2, 5, 8} {
		pw := ktPartsOf(t, "int64", wide, []string{"k"}, parts)
		pn := ktPartsOf(t, "int32", narrow, []string{"k"}, parts)
		pd := ktPartsOf(t, "date", date, []string{"k"}, parts)
		count := make([]int, parts)
		for i := range pw {
			if pw[i] != pn[i] || pw[i] != pd[i] {
				t.Fatalf("parts=%d: key %d goes to part %d as int64, %d as int32, %d as date", parts, i64[i], pw[i], pn[i], pd[i])
			}
			count[pw[i]]++
		}
		for p, c := range count {
			if math.Abs(float64(c)-float64(n)/float64(parts)) > 0.05*float64(n)/float64(parts) {
				t.Errorf("parts=%d: part %d holds %d of %d rows", parts, p, c, n)
			}
		}
	}
}

func TestPartitionErrors(t *testing.T) {
	b := ktBatch(ktRng(52), 5, ktCol{name: "k", typ: TInt64})
	if ps, err := Partition(b, []string{"k"}, 1); err != nil || len(ps) != 1 || ps[0] != b {
		t.Errorf("Partition into 1: %v %v, want the batch itself", ps, err)
	}
	_, err := Partition(b, []string{"k"}, 0)
	ktWantErr(t, "0 parts", err, "0 parts")
	_, err = Partition(b, []string{"zz"}, 2)
	ktWantErr(t, "unknown key", err, "zz")
	bad := &Batch{Rows: 5, Names: []string{"k"}, Cols: []Vec{{Type: TInvalid}}}
	_, err = Partition(bad, []string{"k"}, 2)
	ktWantErr(t, "invalid key type", err, "cannot be a key")
}

func BenchmarkPartition(b *testing.B) {
	const n = 1 << 20
	src := ktBatch(ktRng(53), n, ktCol{name: "k", typ: TInt64}, ktCol{name: "v", typ: TDecimal},
		ktCol{name: "s", typ: TString, card: 1000})
	for _, parts := range []int{2, 16} {
		b.Run(fmt.Sprint(parts), func(b *testing.B) {
			for b.Loop() {
				if _, err := Partition(src, []string{"k"}, parts); err != nil {
					b.Fatal(err)
				}
			}
			ktRowsPerSec(b, n)
		})
	}
}
