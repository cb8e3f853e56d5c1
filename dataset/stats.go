package dataset

import (
	"bytes"

	"gostachio/tpch/schema"
)

// columnStats returns the minimum and maximum of a non-empty column: for
// integer-like types numerically (decimals in cents, dates in days), for
// strings in byte-wise lexicographic order (what pruning compares with).
// A float64 column has none: both are written as 0, and nothing reads them
// (PlanStats marks them unknown, so no chunk is pruned on a float column).
func columnStats(t schema.Type, v *schema.Vector, rows int) (lo, hi Value) {
	switch t {
	case schema.Float64:
		return Value{}, Value{}
	case schema.Int64, schema.Decimal:
		mn, mx := v.I64[0], v.I64[0]
		for _, x := range v.I64[1:rows] {
			mn, mx = min(mn, x), max(mx, x)
		}
		return Value{Int: mn}, Value{Int: mx}
	case schema.Int32, schema.Date:
		mn, mx := v.I32[0], v.I32[0]
		for _, x := range v.I32[1:rows] {
			mn, mx = min(mn, x), max(mx, x)
		}
		return Value{Int: int64(mn)}, Value{Int: int64(mx)}
	default:
		at := func(i int) []byte { return v.Bytes[v.Offsets[i]:v.Offsets[i+1]] }
		mn, mx := at(0), at(0)
		for i := 1; i < rows; i++ {
			s := at(i)
			if bytes.Compare(s, mn) < 0 {
				mn = s
			}
			if bytes.Compare(s, mx) > 0 {
				mx = s
			}
		}
		return Value{Str: string(mn), IsStr: true}, Value{Str: string(mx), IsStr: true}
	}
}
