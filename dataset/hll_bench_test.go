package dataset

import (
	"strconv"
	"testing"

	"gostachio/tpch/schema"
)

func BenchmarkSketchInt(b *testing.B) {
	v := schema.Vector{I64: make([]int64, 1<<17)}
	for i := range v.I64 {
		v.I64[i] = int64(i * 7)
	}
	var s Sketch
	b.SetBytes(8 << 17)
	for b.Loop() {
		sketchColumn(&s, schema.Int64, &v, len(v.I64))
	}
}

func BenchmarkSketchText(b *testing.B) {
	v := schema.Vector{Offsets: []int32{0}}
	for i := range 1 << 17 {
		v.Bytes = append(v.Bytes, "some comment text "+strconv.Itoa(i)...)
		v.Offsets = append(v.Offsets, int32(len(v.Bytes)))
	}
	var s Sketch
	b.SetBytes(int64(len(v.Bytes)))
	for b.Loop() {
		sketchColumn(&s, schema.String, &v, 1<<17)
	}
}

func BenchmarkSketchShortText(b *testing.B) {
	v := schema.Vector{Offsets: []int32{0}}
	for i := range 1 << 17 {
		v.Bytes = append(v.Bytes, "MAIL"[:1+i%4]...)
		v.Offsets = append(v.Offsets, int32(len(v.Bytes)))
	}
	var s Sketch
	for b.Loop() {
		sketchColumn(&s, schema.String, &v, 1<<17)
	}
}
