package arrowipc

import (
	"bytes"
	"errors"
	"hash/crc32"
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"gostachio/dataset/internal/synth"
	"gostachio/tpch/schema"
)

// writeFile encodes batches into an in-memory IPC file.
func writeFile(t *testing.T, tbl *schema.Table, batches []*schema.Batch) ([]byte, []BatchLayout) {
	t.Helper()
	var buf bytes.Buffer
	fw, err := NewFileWriter(&buf, tbl.Columns)
	if err != nil {
		t.Fatal(err)
	}
	var lays []BatchLayout
	for _, b := range batches {
		lay, err := fw.WriteBatch(b)
		if err != nil {
			t.Fatal(err)
		}
		lays = append(lays, lay)
	}
	size, err := fw.Close()
	if err != nil {
		t.Fatal(err)
	}
	if size != int64(buf.Len()) {
		t.Fatalf("Close reported %d bytes, wrote %d", size, buf.Len())
	}
	return buf.Bytes(), lays
}

// checkArrowRecord compares an arrow-go record with b value by value using
// arrow-go's typed accessors (the independent reader).
func checkArrowRecord(t *testing.T, rec arrow.RecordBatch, b *schema.Batch) {
	t.Helper()
	if int(rec.NumRows()) != b.Rows {
		t.Fatalf("arrow-go read %d rows, wrote %d", rec.NumRows(), b.Rows)
	}
	for ci, c := range b.Table.Columns {
		col := rec.Column(ci)
		if col.NullN() != 0 {
			t.Fatalf("%s: %d nulls", c.Name, col.NullN())
		}
		v := &b.Cols[ci]
		for i := 0; i < b.Rows; i++ {
			switch c.Type {
			case schema.Int64, schema.Decimal:
				if got := col.(*array.Int64).Value(i); got != v.I64[i] {
					t.Fatalf("%s[%d] = %d, want %d", c.Name, i, got, v.I64[i])
				}
			case schema.Int32:
				if got := col.(*array.Int32).Value(i); got != v.I32[i] {
					t.Fatalf("%s[%d] = %d, want %d", c.Name, i, got, v.I32[i])
				}
			case schema.Date:
				if got := col.(*array.Date32).Value(i); int32(got) != v.I32[i] {
					t.Fatalf("%s[%d] = %d, want %d", c.Name, i, got, v.I32[i])
				}
			case schema.Float64:
				if got := col.(*array.Float64).Value(i); math.Float64bits(got) != uint64(v.I64[i]) {
					t.Fatalf("%s[%d] = %v, want bits %#x", c.Name, i, got, v.I64[i])
				}
			case schema.String:
				if got := col.(*array.String).Value(i); got != v.Str(i) {
					t.Fatalf("%s[%d] = %q, want %q", c.Name, i, got, v.Str(i))
				}
			}
		}
	}
}

var allTypes = schema.Table{Name: "alltypes", Columns: []schema.Column{
	{Name: "k", Type: schema.Int64}, {Name: "price", Type: schema.Decimal, Precision: 15, Scale: 2},
	{Name: "n", Type: schema.Int32}, {Name: "day", Type: schema.Date},
	{Name: "s", Type: schema.String}, {Name: "empty", Type: schema.String},
	{Name: "ratio", Type: schema.Float64},
}}

func TestArrowGoReadsOurFile(t *testing.T) {
	tests := []struct {
		name string
		tbl  *schema.Table
		rows []int
	}{
		{"lineitem", &schema.Lineitem, []int{1000, 1, 513}},
		{"alltypes", &allTypes, []int{7, 0, 3000}},
		{"no batches", &schema.Region, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var batches []*schema.Batch
			for i, n := range tc.rows {
				b := synth.Random(tc.tbl, n, uint64(i+1))
				if tc.tbl == &allTypes { // a column of only empty strings
					b.Cols[5] = schema.Vector{Offsets: make([]int32, n+1)}
				}
				batches = append(batches, b)
			}
			data, _ := writeFile(t, tc.tbl, batches)
			r, err := ipc.NewFileReader(bytes.NewReader(data))
			if err != nil {
				t.Fatalf("arrow-go cannot open our file: %v", err)
			}
			defer r.Close()
			sch := r.Schema()
			want := map[schema.Type]arrow.DataType{
				schema.Int64: arrow.PrimitiveTypes.Int64, schema.Decimal: arrow.PrimitiveTypes.Int64,
				schema.Int32: arrow.PrimitiveTypes.Int32, schema.Date: arrow.FixedWidthTypes.Date32,
				schema.String: arrow.BinaryTypes.String, schema.Float64: arrow.PrimitiveTypes.Float64,
			}
			for i, c := range tc.tbl.Columns {
				f := sch.Field(i)
				if f.Name != c.Name || !arrow.TypeEqual(f.Type, want[c.Type]) || f.Nullable {
					t.Fatalf("field %d = %v, want %s %v non-nullable", i, f, c.Name, want[c.Type])
				}
				lt, ok := f.Metadata.GetValue(LogicalTypeKey)
				if (c.Type == schema.Decimal) != ok || (ok && lt != "decimal(15,2)") {
					t.Fatalf("field %s metadata %v", c.Name, f.Metadata)
				}
			}
			if r.NumRecords() != len(batches) {
				t.Fatalf("arrow-go sees %d record batches, want %d", r.NumRecords(), len(batches))
			}
			for i, b := range batches {
				rec, err := r.RecordBatch(i)
				if err != nil {
					t.Fatal(err)
				}
				checkArrowRecord(t, rec, b)
			}
		})
	}
}

func TestAlignmentFromFooterAndMessages(t *testing.T) {
	batches := []*schema.Batch{
		synth.Random(&schema.Lineitem, 300, 1),
		synth.Random(&schema.Lineitem, 0, 2),
		synth.Random(&schema.Lineitem, 5000, 3),
	}
	data, lays := writeFile(t, &schema.Lineitem, batches)
	r := bytes.NewReader(data)
	f, err := ReadFooter(r, int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != metadataV5 || len(f.Fields) != len(schema.Lineitem.Columns) || len(f.Blocks) != len(batches) {
		t.Fatalf("footer: version %d, %d fields, %d blocks", f.Version, len(f.Fields), len(f.Blocks))
	}
	for i, c := range schema.Lineitem.Columns {
		if f.Fields[i].Name != c.Name || f.Fields[i].Type != c.Type {
			t.Fatalf("footer field %d = %+v, want %v", i, f.Fields[i], c)
		}
	}
	for bi, blk := range f.Blocks {
		if blk != lays[bi].Block {
			t.Fatalf("footer block %d = %+v, writer reported %+v", bi, blk, lays[bi].Block)
		}
		if blk.BodyOffset()%Alignment != 0 || blk.BodyLength%Alignment != 0 {
			t.Fatalf("block %d body at %d length %d not aligned", bi, blk.BodyOffset(), blk.BodyLength)
		}
		h, err := ReadBatchHeader(r, blk)
		if err != nil {
			t.Fatal(err)
		}
		rows := int64(batches[bi].Rows)
		if h.Length != rows || len(h.Nodes) != len(schema.Lineitem.Columns) {
			t.Fatalf("batch %d: length %d, %d nodes", bi, h.Length, len(h.Nodes))
		}
		k := 0
		for ci, c := range schema.Lineitem.Columns {
			if h.Nodes[ci] != (FieldNode{Length: rows}) {
				t.Fatalf("node %d = %+v", ci, h.Nodes[ci])
			}
			v := &batches[bi].Cols[ci]
			// Expected lengths computed from the batch, not from the writer.
			wantLens := []int64{0, rows * int64(c.Type.Width())}
			if c.Type == schema.String {
				wantLens = []int64{0, (rows + 1) * 4, int64(len(v.Bytes))}
			}
			for j, wl := range wantLens {
				buf := h.Buffers[k]
				k++
				abs := blk.BodyOffset() + buf.Offset
				if abs%Alignment != 0 {
					t.Fatalf("batch %d %s buffer %d at file offset %d", bi, c.Name, j, abs)
				}
				if buf.Length != wl {
					t.Fatalf("batch %d %s buffer %d length %d, want %d", bi, c.Name, j, buf.Length, wl)
				}
				got := lays[bi].Columns[ci][j]
				if got.Offset != abs || got.Length != wl {
					t.Fatalf("layout %+v, header says %d+%d", got, abs, wl)
				}
				// The layout's checksum is of the bytes in the file.
				if want := crc32.Checksum(data[abs:abs+wl], crc32.MakeTable(crc32.Castagnoli)); got.CRC != want {
					t.Fatalf("batch %d %s buffer %d: layout CRC %08x, the file's bytes %08x", bi, c.Name, j, got.CRC, want)
				}
			}
			// The data buffer of a fixed-width column, read at its offset,
			// is the values as little-endian bytes.
			if c.Type == schema.Int64 && rows > 0 {
				buf := h.Buffers[k-1]
				got := data[blk.BodyOffset()+buf.Offset:][:8]
				x := v.I64[0]
				for b := 0; b < 8; b++ {
					if got[b] != byte(x>>(8*b)) {
						t.Fatalf("%s first value bytes %x, want %d", c.Name, got, x)
					}
				}
			}
		}
		if k != len(h.Buffers) {
			t.Fatalf("%d buffers, used %d", len(h.Buffers), k)
		}
	}
}

func TestCorruptFilesGiveErrors(t *testing.T) {
	data, lays := writeFile(t, &schema.Nation, []*schema.Batch{synth.Random(&schema.Nation, 25, 9)})
	size := int64(len(data))
	mut := func(f func(d []byte) []byte) []byte { return f(append([]byte{}, data...)) }
	tests := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"truncated by one", data[:size-1]},
		{"truncated to half", data[:size/2]},
		{"bad leading magic", mut(func(d []byte) []byte { d[0] = 'X'; return d })},
		{"bad trailing magic", mut(func(d []byte) []byte { d[size-1] = 'X'; return d })},
		{"huge footer length", mut(func(d []byte) []byte { d[size-10], d[size-9] = 0xff, 0x7f; return d })},
		{"footer root garbage", mut(func(d []byte) []byte {
			n := int64(d[size-10]) | int64(d[size-9])<<8
			for i := size - 10 - n; i < size-10; i++ {
				d[i] = 0xA5
			}
			return d
		})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadFooter(bytes.NewReader(tc.data), int64(len(tc.data)))
			if err == nil {
				t.Fatal("ReadFooter accepted a corrupt file")
			}
		})
	}
	// A block whose metadata was overwritten.
	bad := mut(func(d []byte) []byte { d[lays[0].Block.Offset] = 0; return d })
	if _, err := ReadBatchHeader(bytes.NewReader(bad), lays[0].Block); !errors.Is(err, ErrMalformed) {
		t.Fatalf("ReadBatchHeader on a smashed marker: %v", err)
	}
}

// FuzzReadFooter feeds arbitrary bytes to the footer and message decoders:
// they must return errors, never panic.
func FuzzReadFooter(f *testing.F) {
	var buf bytes.Buffer
	fw, _ := NewFileWriter(&buf, schema.Region.Columns)
	fw.WriteBatch(synth.Random(&schema.Region, 5, 1))
	fw.Close()
	f.Add(buf.Bytes())
	f.Add(buf.Bytes()[:buf.Len()/2])
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		ft, err := ReadFooter(r, int64(len(data)))
		if err != nil {
			return
		}
		for _, blk := range ft.Blocks {
			ReadBatchHeader(r, blk)
		}
	})
}
