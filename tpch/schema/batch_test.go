package schema

import (
	"reflect"
	"testing"
)

func TestConcat(t *testing.T) {
	a := &Batch{Table: &Region, Rows: 2, Cols: []Vector{
		{I64: []int64{0, 1}}, {Offsets: []int32{0, 2, 5}, Bytes: []byte("abcde")}, {Offsets: []int32{0, 0, 1}, Bytes: []byte("x")}}}
	b := &Batch{Table: &Region, Rows: 1, Cols: []Vector{
		{I64: []int64{2}}, {Offsets: []int32{0, 3}, Bytes: []byte("fgh")}, {Offsets: []int32{0, 2}, Bytes: []byte("yz")}}}
	c := Concat([]*Batch{a, b})
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Rows != 3 || !reflect.DeepEqual(c.Cols[0].I64, []int64{0, 1, 2}) {
		t.Fatalf("keys %v, rows %d", c.Cols[0].I64, c.Rows)
	}
	var names, comments []string
	for i := 0; i < c.Rows; i++ {
		names = append(names, c.Cols[1].Str(i))
		comments = append(comments, c.Cols[2].Str(i))
	}
	if !reflect.DeepEqual(names, []string{"ab", "cde", "fgh"}) || !reflect.DeepEqual(comments, []string{"", "x", "yz"}) {
		t.Fatalf("names %q comments %q", names, comments)
	}
}
