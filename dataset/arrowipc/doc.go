// Package arrowipc writes and reads Arrow IPC *file* format files whose
// record-batch buffers start at 4096-byte-aligned file offsets and are
// zero-padded to a multiple of 4096 bytes, so that one column of one record
// batch can be read with O_DIRECT into an aligned buffer and used as is.
//
// Why our own encoder: arrow-go's ipc writer aligns buffers to 64 bytes only
// and its flatbuffer bindings are internal. The Arrow format allows any
// 8-byte-aligned buffer offsets inside a message body, so a file written here
// is an ordinary Arrow IPC file that arrow-go, pyarrow and DuckDB open.
//
// File layout (all integers little-endian):
//
//	"ARROW1" 0 0                           magic, padded to 8
//	0xFFFFFFFF len Message(Schema) pad      schema message, no body
//	per record batch:
//	  0xFFFFFFFF len Message(RecordBatch)   metadata, zero-padded so that the
//	                                        body starts at a multiple of 4096
//	  body                                  buffers, each at a multiple of 4096,
//	                                        each zero-padded to a multiple of 4096
//	0xFFFFFFFF 0                            end-of-stream marker
//	Footer (flatbuffer) int32(len) "ARROW1"
//
// The bytes up to the footer also form a valid Arrow IPC stream. Only the
// column types of gostachio/tpch/schema are supported: Int64 and Decimal
// (Arrow Int64; decimals carry field metadata LogicalTypeKey), Int32, Date
// (Arrow Date32[DAY]) and String (Arrow Utf8). All fields are non-nullable and
// null counts are zero; the validity buffer is present with length zero.
//
// Reading side: flatbuffers' Go accessors index slices without checks and
// panic on corrupt input, so this package parses footers and message
// headers with its own bounds-checked reader (fb.go): every malformed input
// yields an error wrapping ErrMalformed, never a panic.
package arrowipc
