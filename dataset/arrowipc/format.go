package arrowipc

import (
	"encoding/binary"
	"errors"
	"fmt"

	"gostachio/tpch/schema"
)

// Alignment is the file-offset alignment of every record-batch buffer and
// the padding unit of every buffer: the logical block size O_DIRECT needs.
const Alignment = 4096

// LogicalTypeKey is the Arrow field-metadata key that marks an Int64 field as
// a scaled decimal; its value is schema.Decimal.String() ("decimal(15,2)"),
// meaning: the int64 is the value times schema.DecimalScale.
const LogicalTypeKey = "gostachio.logical_type"

// Magic opens and closes every Arrow IPC file.
const Magic = "ARROW1"

// metadataV5 is MetadataVersion.V5 of Schema.fbs.
const metadataV5 = 4

// continuation is the marker that starts every encapsulated IPC message.
const continuation = 0xFFFFFFFF

// Flatbuffer enum values of Schema.fbs / Message.fbs used here.
const (
	typeInt   = 2 // Type.Int
	typeFloat = 3 // Type.FloatingPoint
	typeUtf8  = 5 // Type.Utf8
	typeDate  = 8 // Type.Date

	precisionDouble = 2 // Precision.DOUBLE; the schema default is HALF (0)

	dateUnitDay = 0 // DateUnit.DAY; the schema default is MILLISECOND (1)

	headerSchema      = 1 // MessageHeader.Schema
	headerRecordBatch = 3 // MessageHeader.RecordBatch
)

// ErrMalformed is wrapped by every error about bytes that do not form the
// Arrow IPC structures this package reads.
var ErrMalformed = errors.New("malformed Arrow IPC data")

// ErrUnsupported is wrapped when well-formed Arrow data uses a feature or
// type outside what gostachio stores (compression, nulls, nested types...).
var ErrUnsupported = errors.New("unsupported Arrow IPC feature")

// Block locates one encapsulated message in a file (File.fbs Block).
type Block struct {
	Offset     int64 // file offset of the continuation marker
	MetaLength int32 // marker + length prefix + flatbuffer + padding
	BodyLength int64 // bytes of the body that follows the metadata
}

// BodyOffset is the file offset where the message body starts.
func (b Block) BodyOffset() int64 { return b.Offset + int64(b.MetaLength) }

// Buffer is one Arrow buffer: Offset is relative to the message body in IPC
// metadata and absolute (file offset) in a BatchLayout. Length excludes the
// zero padding that follows it.
type Buffer struct {
	Offset int64
	Length int64
	// CRC is the CRC-32C (Castagnoli) of the buffer's Length bytes, set
	// by FileWriter.WriteBatch (the file format has no place for it: the
	// dataset's manifest keeps it). The reader leaves it 0.
	CRC uint32
}

// Padded is the length rounded up to Alignment: what an O_DIRECT read of
// this buffer transfers.
func (b Buffer) Padded() int64 { return AlignUp(b.Length) }

// AlignUp rounds n up to a multiple of Alignment.
func AlignUp(n int64) int64 { return (n + Alignment - 1) &^ (Alignment - 1) }

// BufferCount is the number of Arrow buffers of a column of type t:
// validity + values, or validity + offsets + data for strings.
func BufferCount(t schema.Type) int {
	if t == schema.String {
		return 3
	}
	return 2
}

// littleEndian reports whether the host stores integers little-endian, as
// the files do; the writer reinterprets Go slices as bytes and the reader
// hands file bytes out as Go slices, which is only correct on such hosts.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

func checkHost() error {
	if !littleEndian {
		return fmt.Errorf("arrowipc: %w: big-endian host", ErrUnsupported)
	}
	return nil
}
