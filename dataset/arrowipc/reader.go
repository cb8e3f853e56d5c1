package arrowipc

import (
	"encoding/binary"
	"fmt"
	"io"

	"gostachio/tpch/schema"
)

// maxMetadata bounds the footer and message metadata sizes this package
// reads, so a corrupt length cannot make it allocate gigabytes.
const maxMetadata = 64 << 20

// Field is one field of a file's schema, decoded to a gostachio column type.
type Field struct {
	Name     string
	Type     schema.Type
	Nullable bool
	Metadata map[string]string
}

// Footer is the decoded footer of an Arrow IPC file.
type Footer struct {
	Version int16
	Fields  []Field
	Blocks  []Block // record batches, in file order
}

// BatchHeader is the decoded metadata of one record-batch message.
type BatchHeader struct {
	Length     int64
	Nodes      []FieldNode
	Buffers    []Buffer // offsets relative to the body
	BodyLength int64
}

// FieldNode is the length and null count of one column in a record batch.
type FieldNode struct {
	Length    int64
	NullCount int64
}

func readAt(r io.ReaderAt, off, n int64) ([]byte, error) {
	buf := make([]byte, n)
	k, err := r.ReadAt(buf, off)
	if int64(k) == n {
		return buf, nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return nil, fmt.Errorf("arrowipc: read %d bytes at offset %d: %w", n, off, err)
}

// ReadFooter checks both magics of the size-byte file r and decodes its
// footer: schema fields and record-batch blocks. Every block is checked to
// lie inside the file before the footer.
func ReadFooter(r io.ReaderAt, size int64) (*Footer, error) {
	if err := checkHost(); err != nil {
		return nil, err
	}
	const tail = int64(4 + len(Magic))
	if size < 8+tail {
		return nil, malformed("file of %d bytes is too small", size)
	}
	head, err := readAt(r, 0, 8)
	if err != nil {
		return nil, err
	}
	if string(head[:len(Magic)]) != Magic {
		return nil, malformed("no leading %s magic", Magic)
	}
	end, err := readAt(r, size-tail, tail)
	if err != nil {
		return nil, err
	}
	if string(end[4:]) != Magic {
		return nil, malformed("no trailing %s magic", Magic)
	}
	flen := int64(binary.LittleEndian.Uint32(end))
	footerStart := size - tail - flen
	if flen <= 0 || flen > maxMetadata || footerStart < 8 {
		return nil, malformed("footer length %d does not fit a %d-byte file", flen, size)
	}
	buf, err := readAt(r, footerStart, flen)
	if err != nil {
		return nil, err
	}
	root, err := fbRoot(buf)
	if err != nil {
		return nil, fmt.Errorf("footer: %w", err)
	}
	f := &Footer{}
	if f.Version, err = root.i16(0, 0); err != nil {
		return nil, err
	}
	sch, ok, err := root.table(1)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, malformed("footer has no schema")
	}
	if f.Fields, err = decodeSchema(sch); err != nil {
		return nil, err
	}
	_, nd, err := root.vector(2, 24)
	if err != nil {
		return nil, err
	}
	if nd != 0 {
		return nil, fmt.Errorf("arrowipc: %w: %d dictionary batches", ErrUnsupported, nd)
	}
	start, n, err := root.vector(3, 24)
	if err != nil {
		return nil, err
	}
	f.Blocks = make([]Block, n)
	for i := range f.Blocks {
		p := start + 24*i
		b := Block{
			Offset:     int64(binary.LittleEndian.Uint64(buf[p:])),
			MetaLength: int32(binary.LittleEndian.Uint32(buf[p+8:])),
			BodyLength: int64(binary.LittleEndian.Uint64(buf[p+16:])),
		}
		if b.Offset < 8 || b.MetaLength < 8 || b.BodyLength < 0 ||
			b.Offset > footerStart || int64(b.MetaLength) > footerStart-b.Offset ||
			b.BodyLength > footerStart-b.Offset-int64(b.MetaLength) {
			return nil, malformed("record batch block %d (offset %d, metadata %d, body %d) outside the %d bytes before the footer",
				i, b.Offset, b.MetaLength, b.BodyLength, footerStart)
		}
		f.Blocks[i] = b
	}
	return f, nil
}

func decodeSchema(sch fbTable) ([]Field, error) {
	endian, err := sch.i16(0, 0)
	if err != nil {
		return nil, err
	}
	if endian != 0 {
		return nil, fmt.Errorf("arrowipc: %w: big-endian schema", ErrUnsupported)
	}
	start, n, err := sch.vector(1, 4)
	if err != nil {
		return nil, err
	}
	fields := make([]Field, n)
	for i := range fields {
		ft, err := sch.tableElem(start, i)
		if err != nil {
			return nil, err
		}
		if fields[i], err = decodeField(ft); err != nil {
			return nil, fmt.Errorf("field %d: %w", i, err)
		}
	}
	return fields, nil
}

func decodeField(ft fbTable) (Field, error) {
	var f Field
	var err error
	if f.Name, err = ft.str(0); err != nil {
		return f, err
	}
	nullable, err := ft.u8(1, 0)
	if err != nil {
		return f, err
	}
	f.Nullable = nullable != 0
	tt, err := ft.u8(2, 0)
	if err != nil {
		return f, err
	}
	typ, ok, err := ft.table(3)
	if err != nil {
		return f, err
	}
	if !ok {
		return f, malformed("field %q has no type", f.Name)
	}
	if _, ok, err := ft.field(4, 4); err != nil {
		return f, err
	} else if ok {
		return f, fmt.Errorf("arrowipc: %w: dictionary-encoded field %q", ErrUnsupported, f.Name)
	}
	if _, nc, err := ft.vector(5, 4); err != nil {
		return f, err
	} else if nc != 0 {
		return f, fmt.Errorf("arrowipc: %w: nested field %q", ErrUnsupported, f.Name)
	}
	mstart, nm, err := ft.vector(6, 4)
	if err != nil {
		return f, err
	}
	for i := 0; i < nm; i++ {
		kv, err := ft.tableElem(mstart, i)
		if err != nil {
			return f, err
		}
		k, err := kv.str(0)
		if err != nil {
			return f, err
		}
		v, err := kv.str(1)
		if err != nil {
			return f, err
		}
		if f.Metadata == nil {
			f.Metadata = map[string]string{}
		}
		f.Metadata[k] = v
	}
	switch tt {
	case typeInt:
		width, err := typ.i32(0, 0)
		if err != nil {
			return f, err
		}
		signed, err := typ.u8(1, 0)
		if err != nil {
			return f, err
		}
		switch {
		case signed != 0 && width == 64 && f.Metadata[LogicalTypeKey] == schema.Decimal.String():
			f.Type = schema.Decimal
		case signed != 0 && width == 64:
			f.Type = schema.Int64
		case signed != 0 && width == 32:
			f.Type = schema.Int32
		default:
			return f, fmt.Errorf("arrowipc: %w: field %q is int(%d, signed=%v)", ErrUnsupported, f.Name, width, signed != 0)
		}
		if lt, ok := f.Metadata[LogicalTypeKey]; ok && f.Type != schema.Decimal {
			return f, fmt.Errorf("arrowipc: %w: field %q of int%d has logical type %q", ErrUnsupported, f.Name, width, lt)
		}
	case typeDate:
		unit, err := typ.i16(0, 1)
		if err != nil {
			return f, err
		}
		if unit != dateUnitDay {
			return f, fmt.Errorf("arrowipc: %w: field %q is a date with unit %d, want DAY", ErrUnsupported, f.Name, unit)
		}
		f.Type = schema.Date
	case typeFloat:
		prec, err := typ.i16(0, 0)
		if err != nil {
			return f, err
		}
		if prec != precisionDouble {
			return f, fmt.Errorf("arrowipc: %w: field %q is a float of precision %d, want DOUBLE", ErrUnsupported, f.Name, prec)
		}
		f.Type = schema.Float64
	case typeUtf8:
		f.Type = schema.String
	default:
		return f, fmt.Errorf("arrowipc: %w: field %q has Arrow type id %d", ErrUnsupported, f.Name, tt)
	}
	return f, nil
}

// ReadBatchHeader reads and decodes the metadata of the record-batch message
// at blk, checking the continuation marker, the length prefix and that the
// message's body length equals blk's.
func ReadBatchHeader(r io.ReaderAt, blk Block) (*BatchHeader, error) {
	if blk.MetaLength < 16 || blk.MetaLength > maxMetadata || blk.Offset < 0 {
		return nil, malformed("block at %d has metadata length %d", blk.Offset, blk.MetaLength)
	}
	buf, err := readAt(r, blk.Offset, int64(blk.MetaLength))
	if err != nil {
		return nil, err
	}
	if binary.LittleEndian.Uint32(buf) != continuation {
		return nil, malformed("message at %d lacks the continuation marker", blk.Offset)
	}
	if int64(binary.LittleEndian.Uint32(buf[4:])) != int64(blk.MetaLength)-8 {
		return nil, malformed("message at %d: length prefix %d, block says %d", blk.Offset, binary.LittleEndian.Uint32(buf[4:]), blk.MetaLength-8)
	}
	msg, err := fbRoot(buf[8:])
	if err != nil {
		return nil, fmt.Errorf("message at %d: %w", blk.Offset, err)
	}
	ht, err := msg.u8(1, 0)
	if err != nil {
		return nil, err
	}
	if ht != headerRecordBatch {
		return nil, malformed("message at %d has header type %d, want RecordBatch", blk.Offset, ht)
	}
	h := &BatchHeader{}
	if h.BodyLength, err = msg.i64(3, 0); err != nil {
		return nil, err
	}
	if h.BodyLength != blk.BodyLength {
		return nil, malformed("message at %d: body length %d, block says %d", blk.Offset, h.BodyLength, blk.BodyLength)
	}
	rb, ok, err := msg.table(2)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, malformed("message at %d has no header", blk.Offset)
	}
	if h.Length, err = rb.i64(0, 0); err != nil {
		return nil, err
	}
	if _, ok, err := rb.field(3, 4); err != nil {
		return nil, err
	} else if ok {
		return nil, fmt.Errorf("arrowipc: %w: compressed record batch at %d", ErrUnsupported, blk.Offset)
	}
	nstart, nn, err := rb.vector(1, 16)
	if err != nil {
		return nil, err
	}
	b := rb.buf
	for i := 0; i < nn; i++ {
		p := nstart + 16*i
		h.Nodes = append(h.Nodes, FieldNode{
			Length:    int64(binary.LittleEndian.Uint64(b[p:])),
			NullCount: int64(binary.LittleEndian.Uint64(b[p+8:])),
		})
	}
	bstart, nb, err := rb.vector(2, 16)
	if err != nil {
		return nil, err
	}
	for i := 0; i < nb; i++ {
		p := bstart + 16*i
		buf := Buffer{
			Offset: int64(binary.LittleEndian.Uint64(b[p:])),
			Length: int64(binary.LittleEndian.Uint64(b[p+8:])),
		}
		if buf.Offset < 0 || buf.Length < 0 || buf.Offset > h.BodyLength || buf.Length > h.BodyLength-buf.Offset {
			return nil, malformed("message at %d: buffer %d (%d+%d) outside the %d-byte body", blk.Offset, i, buf.Offset, buf.Length, h.BodyLength)
		}
		h.Buffers = append(h.Buffers, buf)
	}
	return h, nil
}
