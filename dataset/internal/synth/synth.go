// Package synth builds small deterministic schema.Batch values for the
// dataset tests: every column type, negative and zero decimals, empty and
// multi-byte strings, dates before and after the epoch, doubles with
// signed zeros, extremes and subnormals. It is test support
// that lives outside _test files so that dataset and dataset/arrowipc
// tests share it.
package synth

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"

	"gostachio/tpch/schema"
)

// Random returns a batch of rows rows of t whose values are drawn from a
// PCG stream seeded with seed. Row i of every Int64 column holds first+i
// when first >= 0 (a key-like, sorted column), else a random value.
func Random(t *schema.Table, rows int, seed uint64) *schema.Batch {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := &schema.Batch{Table: t, Rows: rows, Cols: make([]schema.Vector, len(t.Columns))}
	words := []string{"", "a", "furiously", "ironic", "ÄÖÜ-ß", "pending deposits", "|", "x y z"}
	for ci, c := range t.Columns {
		v := &b.Cols[ci]
		switch c.Type {
		case schema.Int64:
			v.I64 = make([]int64, rows)
			for i := range v.I64 {
				v.I64[i] = r.Int64N(1<<40) - 1<<20
			}
		case schema.Decimal:
			v.I64 = make([]int64, rows)
			for i := range v.I64 {
				v.I64[i] = r.Int64N(2_000_000_00) - 1_000_000_00
			}
		case schema.Int32:
			v.I32 = make([]int32, rows)
			for i := range v.I32 {
				v.I32[i] = r.Int32() - 1<<30
			}
		case schema.Date:
			v.I32 = make([]int32, rows)
			for i := range v.I32 {
				v.I32[i] = r.Int32N(20000) - 2000
			}
		case schema.Float64:
			v.I64 = make([]int64, rows)
			special := []float64{0, math.Copysign(0, -1), math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64}
			for i := range v.I64 {
				x := r.NormFloat64() * 1e6
				if r.IntN(16) == 0 {
					x = special[r.IntN(len(special))]
				}
				v.I64[i] = int64(math.Float64bits(x))
			}
		case schema.String:
			v.Offsets = make([]int32, rows+1)
			for i := 0; i < rows; i++ {
				n := r.IntN(4)
				for k := 0; k < n; k++ {
					if k > 0 {
						v.Bytes = append(v.Bytes, ' ')
					}
					v.Bytes = append(v.Bytes, words[r.IntN(len(words))]...)
				}
				v.Offsets[i+1] = int32(len(v.Bytes))
			}
		}
	}
	return b
}

// Equal reports the first difference between the values of a and b, or nil.
// Tables are compared by column names and types, not by pointer.
func Equal(a, b *schema.Batch) error {
	if len(a.Table.Columns) != len(b.Table.Columns) {
		return fmt.Errorf("%d columns vs %d", len(a.Table.Columns), len(b.Table.Columns))
	}
	if a.Rows != b.Rows {
		return fmt.Errorf("%d rows vs %d", a.Rows, b.Rows)
	}
	for ci, c := range a.Table.Columns {
		if d := b.Table.Columns[ci]; d.Name != c.Name || d.Type != c.Type {
			return fmt.Errorf("column %d: %s %v vs %s %v", ci, c.Name, c.Type, d.Name, d.Type)
		}
		va, vb := &a.Cols[ci], &b.Cols[ci]
		for i := 0; i < a.Rows; i++ {
			var sa, sb string
			switch c.Type {
			case schema.Int64, schema.Decimal, schema.Float64:
				sa, sb = fmt.Sprint(va.I64[i]), fmt.Sprint(vb.I64[i])
			case schema.Int32, schema.Date:
				sa, sb = fmt.Sprint(va.I32[i]), fmt.Sprint(vb.I32[i])
			case schema.String:
				if !bytes.Equal([]byte(va.Str(i)), []byte(vb.Str(i))) {
					sa, sb = fmt.Sprintf("%q", va.Str(i)), fmt.Sprintf("%q", vb.Str(i))
				}
			}
			if sa != sb {
				return fmt.Errorf("%s row %d: %s vs %s", c.Name, i, sa, sb)
			}
		}
	}
	return nil
}

// Slice returns rows [lo, hi) of b as a new batch sharing nothing with b.
func Slice(b *schema.Batch, lo, hi int) *schema.Batch {
	out := &schema.Batch{Table: b.Table, Rows: hi - lo, Cols: make([]schema.Vector, len(b.Cols))}
	for ci, c := range b.Table.Columns {
		v, o := &b.Cols[ci], &out.Cols[ci]
		switch c.Type {
		case schema.Int64, schema.Decimal, schema.Float64:
			o.I64 = append([]int64{}, v.I64[lo:hi]...)
		case schema.Int32, schema.Date:
			o.I32 = append([]int32{}, v.I32[lo:hi]...)
		case schema.String:
			o.Offsets = make([]int32, hi-lo+1)
			base := v.Offsets[lo]
			for i := lo; i <= hi; i++ {
				o.Offsets[i-lo] = v.Offsets[i] - base
			}
			o.Bytes = append([]byte{}, v.Bytes[base:v.Offsets[hi]]...)
		}
	}
	return out
}
