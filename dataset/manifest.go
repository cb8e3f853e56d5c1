package dataset

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

	"gostachio/dataset/arrowipc"
	"gostachio/tpch/schema"
)

// FormatVersion is the manifest format this package writes and reads.
const FormatVersion = 1

// ManifestName is the file that makes a folder a dataset. It is written last
// (temp + rename inside a temporary folder, then the folder is renamed into
// place), so a folder holding it is complete.
const ManifestName = "manifest.json"

// Manifest is the content of manifest.json. Every offset is an absolute
// file offset; every buffer offset is a multiple of arrowipc.Alignment and
// the buffer is followed by zero padding up to the next multiple.
type Manifest struct {
	FormatVersion int     `json:"format_version"`
	Name          string  `json:"name"`
	ScaleFactor   float64 `json:"scale_factor"`
	// Generator says what produced the data (e.g. "gostachio-dbgen" or
	// "import-tbl"), its version, seed and free-form parameters.
	Generator Generator `json:"generator"`
	// Alignment is the buffer alignment in bytes (arrowipc.Alignment).
	Alignment int `json:"alignment"`
	// Stripes are the folders chunk files live in: Stripes[0] is "." (the
	// dataset folder itself); others are absolute paths of per-dataset
	// folders on other devices.
	Stripes []string `json:"stripes"`
	// Partitions is the number of partitions the dataset is split into
	// (see partition.go); 0, absent in JSON, means unpartitioned. In a
	// partitioned dataset a table is either hash-partitioned into exactly
	// Partitions parts or replicated (TableMeta.Partitions 0).
	Partitions int `json:"partitions,omitempty"`
	// Checksums names the checksum every BufferRef.CRC holds: ChecksumCRC32C,
	// or "" (absent in JSON) for datasets written before checksums, whose
	// buffers cannot be verified.
	Checksums string      `json:"checksums,omitempty"`
	Tables    []TableMeta `json:"tables"`
	// Digest covers every other field of the manifest: DigestPrefix and
	// the hex SHA-256 of the manifest's compact JSON encoding with Digest
	// empty (Manifest.ComputeDigest). The buffers' checksums guard the
	// data; the digest guards what a query trusts about it — offsets,
	// lengths, types, row counts, min/max — so an edited manifest is
	// refused instead of pruning or reading the wrong bytes. "" (absent in
	// JSON): written before digests, not checked.
	Digest string `json:"digest,omitempty"`
}

// DigestPrefix names the hash of Manifest.Digest.
const DigestPrefix = "sha256:"

// ComputeDigest returns the digest m should record: DigestPrefix and the
// hex SHA-256 of m's compact JSON encoding with Digest left empty. The
// encoding is deterministic (struct fields in declaration order, map keys
// sorted), so a manifest read back and encoded again hashes the same.
func (m *Manifest) ComputeDigest() (string, error) {
	c := *m
	c.Digest = ""
	data, err := json.Marshal(&c)
	if err != nil {
		return "", fmt.Errorf("dataset: encode manifest for its digest: %w", err)
	}
	sum := sha256.Sum256(data)
	return DigestPrefix + hex.EncodeToString(sum[:]), nil
}

// ChecksumCRC32C is Manifest.Checksums when every buffer records the
// CRC-32C (Castagnoli) of its Len bytes (arrowipc.CRC32C).
const ChecksumCRC32C = "crc32c"

// Generator identifies what wrote a dataset.
type Generator struct {
	Name    string            `json:"name"`
	Version string            `json:"version"`
	Seed    int64             `json:"seed"`
	Params  map[string]string `json:"params,omitempty"`
}

// TableMeta is one table: schema, row count, files and chunk index.
type TableMeta struct {
	Name    string       `json:"name"`
	Columns []ColumnMeta `json:"columns"`
	Rows    int64        `json:"rows"`
	Files   []FileMeta   `json:"files"`
	Chunks  []ChunkMeta  `json:"chunks"`
	// Partitions is 0 (absent in JSON) when the table's chunks are not
	// placed (an unpartitioned dataset, or a replicated table of a
	// partitioned one); else the dataset's partition count, and every
	// chunk holds only rows with PartitionOf(PartitionKey, Partitions) ==
	// its Partition.
	Partitions int `json:"partitions,omitempty"`
	// PartitionKey is the integer-coded column whose value places a row
	// (set exactly when Partitions > 0).
	PartitionKey string `json:"partition_key,omitempty"`

	// Schema is the table as a schema.Table: the canonical TPC-H table
	// (pointer-equal to schema.Lineitem etc.) when the name is a TPC-H
	// table, else built from Columns. Set by Open; not serialized.
	Schema *schema.Table `json:"-"`
}

// ColumnMeta is one column's name and type (schema.Type.String()).
// Decimal columns carry Precision and Scale (15, 2: int64 scaled by 100).
// A column's table-wide range and average text length follow from the
// chunk index (ColumnChunk Min/Max, the data buffer lengths); what the
// chunks cannot tell is recorded here.
type ColumnMeta struct {
	Name      string `json:"name"`
	Type      string `json:"type"`
	Precision int    `json:"precision,omitempty"`
	Scale     int    `json:"scale,omitempty"`
	// Distinct estimates the number of distinct values of the column over
	// the whole table: a HyperLogLog Sketch of every row written, relative
	// standard error SketchRelativeError (~0.8%). 0 (absent in JSON):
	// unknown (manifests written before distinct counts) or no rows.
	Distinct int64 `json:"distinct,omitempty"`
}

// FileMeta is one Arrow IPC file: path relative to its stripe folder,
// stripe index, exact size in bytes.
type FileMeta struct {
	Path   string `json:"path"`
	Stripe int    `json:"stripe"`
	Size   int64  `json:"size"`
}

// ChunkMeta is one chunk = one record batch of one file.
type ChunkMeta struct {
	File  int   `json:"file"`  // index into TableMeta.Files
	Batch int   `json:"batch"` // record batch index within that file
	Rows  int64 `json:"rows"`
	// Block locates the record-batch message (as in the file's footer).
	Offset     int64 `json:"offset"`
	MetaLength int32 `json:"meta_length"`
	BodyLength int64 `json:"body_length"`
	// Columns holds, per table column, the Arrow buffers and statistics.
	Columns []ColumnChunk `json:"columns"`
	// Partition is the partition the chunk belongs to, in [0,
	// TableMeta.Partitions), or NoPartition (-1) when the table is not
	// partitioned: any worker may read the chunk. In JSON "partition",
	// absent for NoPartition, so manifests written before partitioning
	// existed read as unpartitioned.
	Partition int `json:"-"`
}

// NoPartition is ChunkMeta.Partition of a chunk that is not placed.
const NoPartition = -1

// chunkPlain is ChunkMeta without its JSON methods; chunkJSON adds the
// optional partition (a pointer, so that partition 0 is written and an
// absent one is told apart from it).
type chunkPlain ChunkMeta

type chunkJSON struct {
	chunkPlain
	Partition *int `json:"partition,omitempty"`
}

// MarshalJSON writes the chunk with "partition" only when it is placed.
func (c ChunkMeta) MarshalJSON() ([]byte, error) {
	j := chunkJSON{chunkPlain: chunkPlain(c)}
	if c.Partition != NoPartition {
		p := c.Partition
		j.Partition = &p
	}
	return json.Marshal(&j)
}

// UnmarshalJSON reads a chunk; without "partition" it is NoPartition.
func (c *ChunkMeta) UnmarshalJSON(b []byte) error {
	var j chunkJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*c = ChunkMeta(j.chunkPlain)
	c.Partition = NoPartition
	if j.Partition != nil {
		c.Partition = *j.Partition
	}
	return nil
}

// Block returns the chunk's record-batch block.
func (c *ChunkMeta) Block() arrowipc.Block {
	return arrowipc.Block{Offset: c.Offset, MetaLength: c.MetaLength, BodyLength: c.BodyLength}
}

// ColumnChunk is one column of one chunk: its Arrow buffers in Arrow order
// (validity, values) or (validity, offsets, data), absolute file offsets,
// lengths without padding (validity is always empty), and min/max values.
type ColumnChunk struct {
	Buffers []BufferRef `json:"buffers"`
	Min     Value       `json:"min"`
	Max     Value       `json:"max"`
}

// BufferRef is one buffer: absolute file offset and unpadded length. An
// O_DIRECT read transfers Padded() bytes at Off.
type BufferRef struct {
	Off int64 `json:"off"`
	Len int64 `json:"len"`
	// CRC is the buffer's checksum when Manifest.Checksums says so (0 is
	// a checksum like any other: absent in JSON, it reads back as 0).
	CRC uint32 `json:"crc,omitempty"`
}

// Padded is Len rounded up to the alignment.
func (b BufferRef) Padded() int64 { return arrowipc.AlignUp(b.Len) }

// Value is a column statistic: an integer (int64, int32, decimal cents,
// date days) or a string. In JSON it is a number or a string.
type Value struct {
	Int   int64
	Str   string
	IsStr bool
}

// MarshalJSON writes a JSON number or string.
func (v Value) MarshalJSON() ([]byte, error) {
	if v.IsStr {
		return json.Marshal(v.Str)
	}
	return strconv.AppendInt(nil, v.Int, 10), nil
}

// UnmarshalJSON reads a JSON number (which must be an exact int64) or string.
func (v *Value) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		v.IsStr = true
		return json.Unmarshal(b, &v.Str)
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return fmt.Errorf("statistic %s is neither an int64 nor a string", b)
	}
	*v = Value{Int: n}
	return nil
}

// columnsMeta describes t's columns for the manifest.
func columnsMeta(t *schema.Table) []ColumnMeta {
	cols := make([]ColumnMeta, len(t.Columns))
	for i, c := range t.Columns {
		cols[i] = ColumnMeta{Name: c.Name, Type: c.Type.String()}
		if c.Type == schema.Decimal {
			cols[i].Precision, cols[i].Scale = c.Precision, c.Scale
		}
	}
	return cols
}
