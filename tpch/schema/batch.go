package schema

import "fmt"

// Vector holds one column of a Batch. Exactly one representation is used,
// chosen by the column's Type:
//   - Int64, Decimal: I64 (decimals scaled by DecimalScale)
//   - Float64:        I64 holding each value's bits (math.Float64bits)
//   - Int32, Date:    I32 (dates as days since 1970-01-01)
//   - String:         Offsets (len rows+1, Offsets[0] == 0) and Bytes;
//     value i is Bytes[Offsets[i]:Offsets[i+1]]
type Vector struct {
	I64     []int64
	I32     []int32
	Offsets []int32
	Bytes   []byte
}

// Str returns string value i of a String vector.
func (v *Vector) Str(i int) string { return string(v.Bytes[v.Offsets[i]:v.Offsets[i+1]]) }

// Batch is a run of consecutive rows of one table in columnar form, one
// Vector per column of Table, in the table's column order. A Batch owns its
// slices; whoever receives one may keep it.
type Batch struct {
	Table *Table
	Rows  int
	Cols  []Vector
}

// Validate checks that every vector has the length and representation its
// column type requires.
func (b *Batch) Validate() error {
	if len(b.Cols) != len(b.Table.Columns) {
		return fmt.Errorf("schema: %s batch has %d columns, want %d", b.Table.Name, len(b.Cols), len(b.Table.Columns))
	}
	for i, c := range b.Table.Columns {
		v := &b.Cols[i]
		n := 0
		switch c.Type {
		case Int64, Decimal, Float64:
			n = len(v.I64)
		case Int32, Date:
			n = len(v.I32)
		case String:
			n = len(v.Offsets) - 1
			if n >= 0 && (v.Offsets[0] != 0 || int(v.Offsets[n]) != len(v.Bytes)) {
				return fmt.Errorf("schema: %s.%s offsets do not span the bytes", b.Table.Name, c.Name)
			}
		}
		if n != b.Rows {
			return fmt.Errorf("schema: %s.%s has %d values, want %d", b.Table.Name, c.Name, n, b.Rows)
		}
	}
	return nil
}

// Concat returns one batch holding the rows of bs in order (all of the same
// table; at least one). The result owns new slices.
func Concat(bs []*Batch) *Batch {
	t := bs[0].Table
	all := &Batch{Table: t, Cols: make([]Vector, len(t.Columns))}
	for i := range all.Cols {
		if t.Columns[i].Type == String {
			all.Cols[i].Offsets = []int32{0}
		}
	}
	for _, b := range bs {
		all.Rows += b.Rows
		for c := range b.Cols {
			v, w := &all.Cols[c], &b.Cols[c]
			v.I64 = append(v.I64, w.I64...)
			v.I32 = append(v.I32, w.I32...)
			if t.Columns[c].Type == String {
				base := v.Offsets[len(v.Offsets)-1]
				for _, o := range w.Offsets[1:] {
					v.Offsets = append(v.Offsets, base+o)
				}
				v.Bytes = append(v.Bytes, w.Bytes...)
			}
		}
	}
	return all
}
