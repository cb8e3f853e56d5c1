package arrowipc

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"unsafe"

	flatbuffers "github.com/google/flatbuffers/go"

	"gostachio/tpch/schema"
)

// castagnoli is the CRC-32C table: the polynomial with hardware support
// (SSE4.2, ARMv8), about 23 GB/s on one core of the dev VM.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CRC32C is the CRC-32C (Castagnoli) of p, the checksum datasets record
// for every buffer.
func CRC32C(p []byte) uint32 { return crc32.Checksum(p, castagnoli) }

// BatchLayout is where WriteBatch put one record batch: its block and, per
// column, the absolute file offset and length of each Arrow buffer
// (BufferCount of the column's type, in Arrow order).
type BatchLayout struct {
	Block   Block
	Rows    int64
	Columns [][]Buffer
}

// FileWriter writes one Arrow IPC file with aligned buffers. It is not safe
// for concurrent use. The caller owns w and closes it after Close.
type FileWriter struct {
	w      io.Writer
	pos    int64
	cols   []schema.Column
	blocks []Block
	done   bool
	err    error // first write error; every later call returns it
}

// NewFileWriter writes the file magic and the schema message for cols to w
// and returns a writer for record batches. w must be positioned at offset 0
// of the file: offsets are counted from there.
func NewFileWriter(w io.Writer, cols []schema.Column) (*FileWriter, error) {
	if err := checkHost(); err != nil {
		return nil, err
	}
	if err := checkColumns(cols); err != nil {
		return nil, err
	}
	fw := &FileWriter{w: w, cols: append([]schema.Column(nil), cols...)}
	fw.write([]byte(Magic + "\x00\x00"))
	b := flatbuffers.NewBuilder(1024)
	sch := buildSchema(b, fw.cols)
	msg := buildMessage(b, headerSchema, sch, 0)
	b.Finish(msg)
	fb := b.FinishedBytes()
	fw.writeMessage(fb, int64(8+pad8(len(fb))))
	return fw, fw.err
}

func checkColumns(cols []schema.Column) error {
	for _, c := range cols {
		if c.Type < schema.Int64 || c.Type > schema.Float64 {
			return fmt.Errorf("arrowipc: column %s: %w: type %v", c.Name, ErrUnsupported, c.Type)
		}
	}
	return nil
}

func pad8(n int) int { return (n + 7) &^ 7 }

var zeros [Alignment]byte

func (fw *FileWriter) write(p []byte) {
	if fw.err != nil || len(p) == 0 {
		return
	}
	n, err := fw.w.Write(p)
	fw.pos += int64(n)
	if err != nil {
		fw.err = fmt.Errorf("arrowipc: write at offset %d: %w", fw.pos, err)
	}
}

func (fw *FileWriter) writeZeros(n int64) {
	for n > 0 && fw.err == nil {
		k := min(n, int64(len(zeros)))
		fw.write(zeros[:k])
		n -= k
	}
}

// writeMessage writes the continuation marker, the length prefix, fb and
// zero padding so that the metadata occupies exactly meta bytes.
func (fw *FileWriter) writeMessage(fb []byte, meta int64) {
	var hdr [8]byte
	binary.LittleEndian.PutUint32(hdr[0:], continuation)
	binary.LittleEndian.PutUint32(hdr[4:], uint32(meta-8))
	fw.write(hdr[:])
	fw.write(fb)
	fw.writeZeros(meta - 8 - int64(len(fb)))
}

// Pos is the number of bytes written so far.
func (fw *FileWriter) Pos() int64 { return fw.pos }

// WriteBatch appends b as one record batch. b's columns must match the
// writer's columns in number and type (b.Validate is checked). A zero-row
// batch is legal and yields a batch of empty buffers.
func (fw *FileWriter) WriteBatch(b *schema.Batch) (BatchLayout, error) {
	if fw.err != nil {
		return BatchLayout{}, fw.err
	}
	if fw.done {
		return BatchLayout{}, fmt.Errorf("arrowipc: WriteBatch after Close")
	}
	if err := validateBatch(b, fw.cols); err != nil {
		return BatchLayout{}, err
	}
	// Body layout: each buffer at a multiple of Alignment relative to the
	// body start, which itself is placed at an aligned file offset.
	data := make([][][]byte, len(fw.cols))
	rel := make([][]Buffer, len(fw.cols))
	var cur int64
	for i, c := range fw.cols {
		parts := columnBytes(c.Type, &b.Cols[i])
		data[i] = parts
		bufs := make([]Buffer, 0, 1+len(parts))
		bufs = append(bufs, Buffer{Offset: cur}) // validity: absent, no nulls
		for _, p := range parts {
			bufs = append(bufs, Buffer{Offset: cur, Length: int64(len(p)), CRC: CRC32C(p)})
			cur += AlignUp(int64(len(p)))
		}
		rel[i] = bufs
	}
	bodyLen := cur

	fbb := flatbuffers.NewBuilder(256 + 64*len(fw.cols))
	rb := buildRecordBatch(fbb, int64(b.Rows), rel)
	fbb.Finish(buildMessage(fbb, headerRecordBatch, rb, bodyLen))
	fb := fbb.FinishedBytes()

	start := fw.pos
	meta := AlignUp(start+8+int64(len(fb))) - start
	if meta > 1<<31-1 {
		return BatchLayout{}, fmt.Errorf("arrowipc: record batch metadata of %d bytes too large", meta)
	}
	fw.writeMessage(fb, meta)
	for _, parts := range data {
		for _, p := range parts {
			fw.write(p)
			fw.writeZeros(AlignUp(int64(len(p))) - int64(len(p)))
		}
	}
	if fw.err != nil {
		return BatchLayout{}, fw.err
	}
	blk := Block{Offset: start, MetaLength: int32(meta), BodyLength: bodyLen}
	fw.blocks = append(fw.blocks, blk)
	lay := BatchLayout{Block: blk, Rows: int64(b.Rows), Columns: rel}
	for _, bufs := range rel {
		for j := range bufs {
			bufs[j].Offset += blk.BodyOffset()
		}
	}
	return lay, nil
}

func validateBatch(b *schema.Batch, cols []schema.Column) error {
	if b == nil || b.Table == nil {
		return fmt.Errorf("arrowipc: nil batch or batch without table")
	}
	if len(b.Table.Columns) != len(cols) {
		return fmt.Errorf("arrowipc: batch of %s has %d columns, file has %d", b.Table.Name, len(b.Table.Columns), len(cols))
	}
	for i, c := range cols {
		if b.Table.Columns[i].Type != c.Type {
			return fmt.Errorf("arrowipc: batch column %s is %v, file column %s is %v", b.Table.Columns[i].Name, b.Table.Columns[i].Type, c.Name, c.Type)
		}
	}
	if err := b.Validate(); err != nil {
		return fmt.Errorf("arrowipc: %w", err)
	}
	return nil
}

// zeroOffset is the offsets buffer of a zero-row string column given
// without offsets: Arrow wants length+1 offsets.
var zeroOffset = []int32{0}

// columnBytes returns the non-validity buffers of v as byte views of its
// slices (no copy; little-endian host checked at NewFileWriter).
func columnBytes(t schema.Type, v *schema.Vector) [][]byte {
	switch t {
	case schema.Int64, schema.Decimal, schema.Float64:
		return [][]byte{sliceBytes(v.I64)}
	case schema.Int32, schema.Date:
		return [][]byte{sliceBytes(v.I32)}
	default:
		offs := v.Offsets
		if len(offs) == 0 {
			offs = zeroOffset
		}
		return [][]byte{sliceBytes(offs), v.Bytes}
	}
}

func sliceBytes[T int32 | int64](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

// Close writes the end-of-stream marker, the footer (schema and one Block
// per record batch), the footer length and the closing magic, and returns
// the file size. It does not close the underlying writer.
func (fw *FileWriter) Close() (int64, error) {
	if fw.err != nil {
		return 0, fw.err
	}
	if fw.done {
		return fw.pos, nil
	}
	fw.done = true
	var eos [8]byte
	binary.LittleEndian.PutUint32(eos[0:], continuation)
	fw.write(eos[:])

	b := flatbuffers.NewBuilder(1024 + 24*len(fw.blocks))
	sch := buildSchema(b, fw.cols)
	b.StartVector(24, 0, 8)
	dicts := b.EndVector(0)
	b.StartVector(24, len(fw.blocks), 8)
	for i := len(fw.blocks) - 1; i >= 0; i-- {
		blk := fw.blocks[i]
		b.Prep(8, 24)
		b.PrependInt64(blk.BodyLength)
		b.Pad(4)
		b.PrependInt32(blk.MetaLength)
		b.PrependInt64(blk.Offset)
	}
	batches := b.EndVector(len(fw.blocks))
	b.StartObject(5) // Footer
	b.PrependInt16Slot(0, metadataV5, 0)
	b.PrependUOffsetTSlot(1, sch, 0)
	b.PrependUOffsetTSlot(2, dicts, 0)
	b.PrependUOffsetTSlot(3, batches, 0)
	b.Finish(b.EndObject())
	fb := b.FinishedBytes()
	n := pad8(len(fb))
	fw.write(fb)
	fw.writeZeros(int64(n - len(fb)))
	var tail [4 + len(Magic)]byte
	binary.LittleEndian.PutUint32(tail[0:], uint32(n))
	copy(tail[4:], Magic)
	fw.write(tail[:])
	return fw.pos, fw.err
}

// buildMessage builds a Message table (Message.fbs) around header.
func buildMessage(b *flatbuffers.Builder, headerType byte, header flatbuffers.UOffsetT, bodyLen int64) flatbuffers.UOffsetT {
	b.StartObject(5)
	b.PrependInt16Slot(0, metadataV5, 0)
	b.PrependByteSlot(1, headerType, 0)
	b.PrependUOffsetTSlot(2, header, 0)
	b.PrependInt64Slot(3, bodyLen, 0)
	return b.EndObject()
}

// buildSchema builds a Schema table (Schema.fbs): little-endian, one
// non-nullable field per column.
func buildSchema(b *flatbuffers.Builder, cols []schema.Column) flatbuffers.UOffsetT {
	fields := make([]flatbuffers.UOffsetT, len(cols))
	for i, c := range cols {
		fields[i] = buildField(b, c)
	}
	b.StartVector(4, len(fields), 4)
	for i := len(fields) - 1; i >= 0; i-- {
		b.PrependUOffsetT(fields[i])
	}
	fv := b.EndVector(len(fields))
	b.StartObject(4)
	b.PrependInt16Slot(0, 0, 0) // Endianness.Little (default)
	b.PrependUOffsetTSlot(1, fv, 0)
	return b.EndObject()
}

func buildField(b *flatbuffers.Builder, c schema.Column) flatbuffers.UOffsetT {
	name := b.CreateString(c.Name)
	var typ flatbuffers.UOffsetT
	var tt byte
	switch c.Type {
	case schema.Int64, schema.Decimal, schema.Int32:
		width := int32(64)
		if c.Type == schema.Int32 {
			width = 32
		}
		b.StartObject(2) // Int
		b.PrependInt32Slot(0, width, 0)
		b.PrependBoolSlot(1, true, false)
		typ, tt = b.EndObject(), typeInt
	case schema.Date:
		b.StartObject(1) // Date
		b.PrependInt16Slot(0, dateUnitDay, 1)
		typ, tt = b.EndObject(), typeDate
	case schema.Float64:
		b.StartObject(1) // FloatingPoint
		b.PrependInt16Slot(0, precisionDouble, 0)
		typ, tt = b.EndObject(), typeFloat
	default:
		b.StartObject(0) // Utf8
		typ, tt = b.EndObject(), typeUtf8
	}
	var md flatbuffers.UOffsetT
	if c.Type == schema.Decimal {
		k := b.CreateString(LogicalTypeKey)
		v := b.CreateString(schema.Decimal.String())
		b.StartObject(2) // KeyValue
		b.PrependUOffsetTSlot(0, k, 0)
		b.PrependUOffsetTSlot(1, v, 0)
		kv := b.EndObject()
		b.StartVector(4, 1, 4)
		b.PrependUOffsetT(kv)
		md = b.EndVector(1)
	}
	// Arrow C++ rejects a Field whose children vector is null, so an empty
	// one is always written.
	b.StartVector(4, 0, 4)
	children := b.EndVector(0)
	b.StartObject(7) // Field
	b.PrependUOffsetTSlot(0, name, 0)
	b.PrependBoolSlot(1, false, false)
	b.PrependByteSlot(2, tt, 0)
	b.PrependUOffsetTSlot(3, typ, 0)
	b.PrependUOffsetTSlot(5, children, 0)
	if md != 0 {
		b.PrependUOffsetTSlot(6, md, 0)
	}
	return b.EndObject()
}

// buildRecordBatch builds a RecordBatch table (Message.fbs) with one
// FieldNode per column and the buffers of bufs (offsets relative to the
// body).
func buildRecordBatch(b *flatbuffers.Builder, rows int64, bufs [][]Buffer) flatbuffers.UOffsetT {
	var all []Buffer
	for _, c := range bufs {
		all = append(all, c...)
	}
	b.StartVector(16, len(all), 8)
	for i := len(all) - 1; i >= 0; i-- {
		b.Prep(8, 16)
		b.PrependInt64(all[i].Length)
		b.PrependInt64(all[i].Offset)
	}
	bv := b.EndVector(len(all))
	b.StartVector(16, len(bufs), 8)
	for range bufs {
		b.Prep(8, 16)
		b.PrependInt64(0) // null_count
		b.PrependInt64(rows)
	}
	nv := b.EndVector(len(bufs))
	b.StartObject(5)
	b.PrependInt64Slot(0, rows, 0)
	b.PrependUOffsetTSlot(1, nv, 0)
	b.PrependUOffsetTSlot(2, bv, 0)
	return b.EndObject()
}
