// Package cpu holds the CPU kernels: vectorized operators over columnar
// batches in Arrow's memory layout (fixed-width values back to back;
// strings as int32 offsets plus bytes; no validity bitmaps, since TPC-H has
// no NULLs). A kernel loops over whole vectors; nothing on a hot path makes
// a per-row interface call or allocation.
//
// Ownership. A Batch owns its vectors. Kernels never modify their input
// batches; every output is newly allocated (or a sub-slice view that the
// kernel documents), so a batch may be shared by concurrent readers.
package cpu

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"gostachio/plan"
)

// Type is a vector's logical type.
type Type uint8

const (
	TInvalid Type = iota
	TInt64        // I64
	TInt32        // I32
	TDate         // I32: days since 1970-01-01
	TDecimal      // I64 scaled by 10^Scale
	TFloat64      // F64
	TString       // Off (len n+1) and Str
	TBool         // B (predicate results)
)

var typeNames = [...]string{"invalid", "int64", "int32", "date", "decimal", "float64", "string", "bool"}

func (t Type) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("Type(%d)", uint8(t))
}

// Vec is one column of a batch. Exactly the slice its Type names is set.
type Vec struct {
	Type  Type
	Scale int8 // TDecimal: digits after the point
	I64   []int64
	I32   []int32
	F64   []float64
	Off   []int32 // TString: Off[i]..Off[i+1] are value i's bytes in Str
	Str   []byte
	B     []bool
}

// Len is the number of values.
func (v *Vec) Len() int {
	switch v.Type {
	case TInt64, TDecimal:
		return len(v.I64)
	case TInt32, TDate:
		return len(v.I32)
	case TFloat64:
		return len(v.F64)
	case TString:
		if len(v.Off) == 0 {
			return 0
		}
		return len(v.Off) - 1
	case TBool:
		return len(v.B)
	}
	return 0
}

// StrAt returns value i of a string vector as a byte slice view (valid as
// long as the vector).
func (v *Vec) StrAt(i int) []byte { return v.Str[v.Off[i]:v.Off[i+1]] }

// Int returns value i of an integer-coded vector (int64, int32, date,
// decimal units) as int64.
func (v *Vec) Int(i int) int64 {
	switch v.Type {
	case TInt64, TDecimal:
		return v.I64[i]
	case TInt32, TDate:
		return int64(v.I32[i])
	}
	panic(fmt.Sprintf("cpu: Int of a %s vector", v.Type))
}

// Bytes is the vector's data size in bytes (what moving it costs).
func (v *Vec) Bytes() int64 {
	return int64(8*len(v.I64) + 4*len(v.I32) + 8*len(v.F64) + 4*len(v.Off) + len(v.Str) + len(v.B))
}

// Format renders value i as a result cell: decimals and floats to 2
// places (half away from zero; a float from its shortest decimal form, see
// formatFloat2), dates as YYYY-MM-DD.
func (v *Vec) Format(i int) string {
	switch v.Type {
	case TInt64:
		return strconv.FormatInt(v.I64[i], 10)
	case TInt32:
		return strconv.FormatInt(int64(v.I32[i]), 10)
	case TDate:
		return plan.FormatDate(int64(v.I32[i]))
	case TDecimal:
		return plan.FormatDecimal(v.I64[i], int(v.Scale), 2)
	case TFloat64:
		return formatFloat2(v.F64[i])
	case TString:
		return string(v.StrAt(i))
	case TBool:
		return strconv.FormatBool(v.B[i])
	}
	return "?"
}

// Batch is a set of equally long named columns.
type Batch struct {
	Names []string
	Cols  []Vec
	Rows  int
}

// Col returns the index of the named column, or -1.
func (b *Batch) Col(name string) int {
	for i, n := range b.Names {
		if n == name {
			return i
		}
	}
	return -1
}

// Column returns the named column or an error naming what the batch has.
func (b *Batch) Column(name string) (*Vec, error) {
	i := b.Col(name)
	if i < 0 {
		return nil, fmt.Errorf("cpu: no column %q (have %s)", name, strings.Join(b.Names, ", "))
	}
	return &b.Cols[i], nil
}

// Bytes is the batch's data size.
func (b *Batch) Bytes() int64 {
	var n int64
	for i := range b.Cols {
		n += b.Cols[i].Bytes()
	}
	return n
}

// Clone is a deep copy of the batch: nothing of it shares memory with b.
func (b *Batch) Clone() *Batch {
	out := &Batch{Rows: b.Rows, Names: slices.Clone(b.Names), Cols: make([]Vec, len(b.Cols))}
	for i := range b.Cols {
		v := b.Cols[i]
		v.I64, v.I32, v.F64 = slices.Clone(v.I64), slices.Clone(v.I32), slices.Clone(v.F64)
		v.Off, v.Str, v.B = slices.Clone(v.Off), slices.Clone(v.Str), slices.Clone(v.B)
		out.Cols[i] = v
	}
	return out
}

// Validate checks that every column has Rows values and string offsets
// are well formed.
func (b *Batch) Validate() error {
	if len(b.Names) != len(b.Cols) {
		return fmt.Errorf("cpu: batch has %d names for %d columns", len(b.Names), len(b.Cols))
	}
	for i := range b.Cols {
		v := &b.Cols[i]
		if n := v.Len(); n != b.Rows {
			return fmt.Errorf("cpu: column %s has %d values, batch %d rows", b.Names[i], n, b.Rows)
		}
		if v.Type == TString && b.Rows > 0 {
			if v.Off[0] != 0 || int(v.Off[b.Rows]) != len(v.Str) {
				return fmt.Errorf("cpu: column %s: string offsets do not span its %d bytes", b.Names[i], len(v.Str))
			}
		}
	}
	return nil
}

// Empty returns a batch with no rows and the columns (names, types,
// scales) of like.
func Empty(like *Batch) *Batch {
	out := &Batch{Names: append([]string(nil), like.Names...), Cols: make([]Vec, len(like.Cols))}
	for i := range like.Cols {
		out.Cols[i] = Vec{Type: like.Cols[i].Type, Scale: like.Cols[i].Scale}
		if like.Cols[i].Type == TString {
			out.Cols[i].Off = []int32{0}
		}
	}
	return out
}

// formatFloat2 renders f to 2 places, rounding half away from zero the
// shortest decimal form that reads back as f (2.675 gives 2.68, although
// the binary value is just below 2.675), so that a float prints as a
// decimal of the same digits does, and as the DuckDB peer formats its
// doubles; a value that rounds to zero prints without a sign. NaN and
// infinities print as strconv writes them.
func formatFloat2(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	intPart, frac, _ := strings.Cut(s, ".")
	frac += "000"
	digits := []byte(intPart + frac[:2])
	if frac[2] >= '5' {
		i := len(digits) - 1
		for ; i >= 0 && digits[i] == '9'; i-- {
			digits[i] = '0'
		}
		if i < 0 {
			digits = append([]byte{'1'}, digits...)
		} else {
			digits[i]++
		}
	}
	n := len(digits)
	out := string(digits[:n-2]) + "." + string(digits[n-2:])
	if neg && strings.Trim(string(digits), "0") != "" {
		out = "-" + out
	}
	return out
}
