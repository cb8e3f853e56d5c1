package cpu

import (
	"fmt"
	"math"

	"gostachio/internal/dirtmake"
)

// Gather returns a new batch holding rows sel of b, in sel order (sel may
// repeat rows). The output shares nothing with b. It panics if an index of
// sel is out of range or a string column's gathered bytes exceed the int32
// offsets (2 GiB): sel comes from kernels, not data.
func Gather(b *Batch, sel []int32) *Batch {
	out := &Batch{Names: append([]string(nil), b.Names...), Cols: make([]Vec, len(b.Cols)), Rows: len(sel)}
	for i := range b.Cols {
		out.Cols[i] = GatherVec(&b.Cols[i], sel)
	}
	return out
}

// GatherVec is Gather for one vector: values sel of v, newly allocated.
func GatherVec(v *Vec, sel []int32) Vec {
	out := Vec{Type: v.Type, Scale: v.Scale}
	switch v.Type {
	case TInt64, TDecimal:
		out.I64 = gthFixed(v.I64, sel)
	case TInt32, TDate:
		out.I32 = gthFixed(v.I32, sel)
	case TFloat64:
		out.F64 = gthFixed(v.F64, sel)
	case TBool:
		out.B = gthFixed(v.B, sel)
	case TString:
		out.Off, out.Str = gthStrings(v, sel)
	}
	return out
}

// gthFixed gathers a fixed-width slice (into unzeroed memory: every
// element is written).
func gthFixed[T dirtmake.Fixed](src []T, sel []int32) []T {
	out := dirtmake.Slice[T](len(sel))
	for i, s := range sel {
		out[i] = src[s]
	}
	return out
}

// gthStrings gathers a string vector: sizes first, then one allocation.
// Runs of consecutive rows (a filter's dense selection is mostly runs)
// take one byte copy each, their offsets shifted in a tight loop.
func gthStrings(v *Vec, sel []int32) ([]int32, []byte) {
	off := make([]int32, len(sel)+1)
	var total int64
	for _, s := range sel {
		total += int64(v.Off[s+1] - v.Off[s])
	}
	if total > math.MaxInt32 {
		panic(fmt.Sprintf("cpu: gathering %d string bytes overflows int32 offsets", total))
	}
	str := make([]byte, total)
	var p int32
	for i := 0; i < len(sel); {
		s := sel[i]
		j := i + 1
		for j < len(sel) && sel[j] == s+int32(j-i) {
			j++
		}
		// Rows s..e-1 are consecutive: their bytes are one span.
		e := s + int32(j-i)
		src := v.Off[s : e+1]
		delta := p - src[0]
		for k, x := range src[1:] {
			off[i+k+1] = x + delta
		}
		p += int32(copy(str[p:], v.Str[src[0]:src[len(src)-1]]))
		i = j
	}
	return off, str
}

// Concat returns one batch holding the rows of bs in order. All must have
// the same column names and types (and decimal scales), else the error
// names the first differing column. Zero batches (or a nil one) is an
// error; one batch is returned as is (not copied); otherwise the result is
// newly allocated.
func Concat(bs []*Batch) (*Batch, error) {
	if len(bs) == 0 {
		return nil, fmt.Errorf("cpu: Concat of no batches")
	}
	for i, b := range bs {
		if b == nil {
			return nil, fmt.Errorf("cpu: Concat: batch %d is nil", i)
		}
	}
	if len(bs) == 1 {
		return bs[0], nil
	}
	first := bs[0]
	rows := 0
	for k, b := range bs {
		if len(b.Names) != len(first.Names) || len(b.Cols) != len(first.Names) {
			return nil, fmt.Errorf("cpu: Concat: batch %d has %d columns (%d names), batch 0 has %d", k, len(b.Cols), len(b.Names), len(first.Names))
		}
		for c := range b.Cols {
			x, y := &first.Cols[c], &b.Cols[c]
			if b.Names[c] != first.Names[c] {
				return nil, fmt.Errorf("cpu: Concat: batch %d column %d is %s, batch 0 has %s", k, c, b.Names[c], first.Names[c])
			}
			if x.Type != y.Type || x.Type == TDecimal && x.Scale != y.Scale {
				return nil, fmt.Errorf("cpu: Concat: column %s is %s in batch %d but %s in batch 0", b.Names[c], gthTypeName(y), k, gthTypeName(x))
			}
			if y.Len() != b.Rows {
				return nil, fmt.Errorf("cpu: Concat: batch %d column %s has %d values for %d rows", k, b.Names[c], y.Len(), b.Rows)
			}
		}
		rows += b.Rows
	}
	out := &Batch{Names: append([]string(nil), first.Names...), Cols: make([]Vec, len(first.Cols)), Rows: rows}
	for c := range first.Cols {
		o := Vec{Type: first.Cols[c].Type, Scale: first.Cols[c].Scale}
		switch o.Type {
		case TInt64, TDecimal:
			o.I64 = dirtmake.Slice[int64](rows)[:0]
			for _, b := range bs {
				o.I64 = append(o.I64, b.Cols[c].I64...)
			}
		case TInt32, TDate:
			o.I32 = dirtmake.Slice[int32](rows)[:0]
			for _, b := range bs {
				o.I32 = append(o.I32, b.Cols[c].I32...)
			}
		case TFloat64:
			o.F64 = dirtmake.Slice[float64](rows)[:0]
			for _, b := range bs {
				o.F64 = append(o.F64, b.Cols[c].F64...)
			}
		case TBool:
			o.B = dirtmake.Slice[bool](rows)[:0]
			for _, b := range bs {
				o.B = append(o.B, b.Cols[c].B...)
			}
		case TString:
			var total int64
			for _, b := range bs {
				if v := &b.Cols[c]; b.Rows > 0 {
					total += int64(v.Off[b.Rows] - v.Off[0])
				}
			}
			if total > math.MaxInt32 {
				return nil, fmt.Errorf("cpu: Concat: column %s would hold %d string bytes, over the int32 offsets", first.Names[c], total)
			}
			o.Off = dirtmake.Slice[int32](rows + 1)[:1]
			o.Off[0] = 0
			o.Str = dirtmake.Bytes(int(total))[:0]
			for _, b := range bs {
				v := &b.Cols[c]
				if b.Rows == 0 {
					continue
				}
				// Rebase: value bytes may not start at Str[0] (a Slice view).
				shift := int32(len(o.Str)) - v.Off[0]
				o.Str = append(o.Str, v.Str[v.Off[0]:v.Off[b.Rows]]...)
				for _, x := range v.Off[1 : b.Rows+1] {
					o.Off = append(o.Off, x+shift)
				}
			}
		}
		out.Cols[c] = o
	}
	return out, nil
}

// gthTypeName renders a vector's type with its scale for decimals.
func gthTypeName(v *Vec) string {
	if v.Type == TDecimal {
		return fmt.Sprintf("decimal(scale %d)", v.Scale)
	}
	return v.Type.String()
}

// Slice returns rows [lo, hi) of b as a new batch. Fixed-width columns are
// views into b's vectors (capacity-limited, so appending to them copies);
// string columns get new offsets starting at 0 over a view of b's bytes.
// It panics unless 0 <= lo <= hi <= b.Rows.
func Slice(b *Batch, lo, hi int) *Batch {
	if lo < 0 || hi < lo || hi > b.Rows {
		panic(fmt.Sprintf("cpu: Slice [%d, %d) of a batch of %d rows", lo, hi, b.Rows))
	}
	out := &Batch{Names: append([]string(nil), b.Names...), Cols: make([]Vec, len(b.Cols)), Rows: hi - lo}
	for c := range b.Cols {
		out.Cols[c] = sliceVec(&b.Cols[c], lo, hi)
	}
	return out
}

// sliceVec is values [lo, hi) of v as a view (capacity clipped, so an
// append to it cannot write over v's later values); string offsets are
// rebased into a new slice unless lo is 0. The caller checks the bounds.
func sliceVec(v *Vec, lo, hi int) Vec {
	o := Vec{Type: v.Type, Scale: v.Scale}
	switch v.Type {
	case TInt64, TDecimal:
		o.I64 = v.I64[lo:hi:hi]
	case TInt32, TDate:
		o.I32 = v.I32[lo:hi:hi]
	case TFloat64:
		o.F64 = v.F64[lo:hi:hi]
	case TBool:
		o.B = v.B[lo:hi:hi]
	case TString:
		switch {
		case hi == lo || len(v.Off) == 0:
			o.Off = []int32{0}
		case lo == 0:
			end := v.Off[hi]
			o.Off, o.Str = v.Off[:hi+1:hi+1], v.Str[:end:end]
		default:
			o.Off = make([]int32, hi-lo+1)
			base, end := v.Off[lo], v.Off[hi]
			for i, x := range v.Off[lo : hi+1] {
				o.Off[i] = x - base
			}
			o.Str = v.Str[base:end:end]
		}
	}
	return o
}
