package plan

import "fmt"

// MinMax is a column's value range within one chunk, integer-coded (int32,
// int64, decimal cents, date32 days). Valid is false where the range is
// unknown (strings, or a manifest without statistics): such a chunk is never
// pruned on that column.
type MinMax struct {
	Valid    bool
	Min, Max int64
}

// ChunkStats describes one stored chunk of a table: what a read of it moves.
// The caller fills it from a dataset manifest or from scale-factor formulas
// (e.g. tpch/queries.Stats). Ownership: a Plan owns its stats; nobody mutates them after
// the plan is built.
type ChunkStats struct {
	Rows int64
	// File is the index into TableStats.Files of the file holding the chunk.
	File int32
	// Base is the byte offset of the chunk body in its file.
	Base int64
	// Bytes[c] is the stored size of column c (table column order) in this
	// chunk: what reading that column moves.
	Bytes []int64
	// Offset[c] is the byte offset of column c's data in the file. Nil means
	// the columns lie back to back in column order from Base, so column c
	// starts at Base + Bytes[0] + ... + Bytes[c-1] (the dataset writer's
	// layout).
	Offset []int64
	// Stats[c] is column c's min/max in this chunk; nil when unknown.
	Stats []MinMax
	// Placed marks a chunk of a partitioned table: it lives on partition
	// Node, and the scheduler deals it only to node Node mod Nodes. An
	// unplaced chunk (the zero value, so stats built without placement
	// keep the scheduler's global round-robin) may go to any worker.
	Placed bool
	// Node is the chunk's partition index when Placed (>= 0); ignored
	// otherwise.
	Node int32
}

// Placement is the chunk's partition, or -1 when any worker may read it.
func (c *ChunkStats) Placement() int32 {
	if !c.Placed {
		return -1
	}
	return c.Node
}

// ColumnOffset is the file offset of column c of the chunk (see Offset).
func (c *ChunkStats) ColumnOffset(col int) int64 {
	if c.Offset != nil {
		return c.Offset[col]
	}
	off := c.Base
	for i := 0; i < col; i++ {
		off += c.Bytes[i]
	}
	return off
}

// MaxChunks bounds the stored chunks of all the tables a plan is sized
// from: each chunk costs the plan, the scheduler and the simulator a few
// hundred bytes of state and a unit's tasks, so two million chunks (TPC-H
// at SF 240,000 in chunks of 2^20 rows) is about as far as one process
// simulates. Planners refuse more with the chunk size that would fit.
const MaxChunks = 2_000_000

// TableStats is the chunked layout of one table as a plan sees it.
type TableStats struct {
	Name string
	// Columns are the table's column names in stored order; ChunkStats.Bytes
	// and friends are indexed like it.
	Columns []string
	// Files names the files the chunks live in (informational; may be
	// synthetic, e.g. "lineitem.arrow").
	Files  []string
	Chunks []ChunkStats
	// Schema, parallel to Columns, is each column's type and table-wide
	// statistics: what a planner from SQL binds names and estimates
	// selectivities with. Nil where unknown (stats built for a hand-built
	// plan need none).
	Schema []ColumnStats
}

// ColumnType is the logical type of a stored column.
type ColumnType uint8

const (
	TypeUnknown ColumnType = iota
	TypeInt64              // int64 (identifiers)
	TypeInt32              // int32
	TypeDecimal            // int64 scaled by 10^Scale
	TypeDate               // date32: days since 1970-01-01
	TypeString             // utf8
	TypeFloat64            // float64
)

var columnTypeNames = [...]string{"unknown", "int64", "int32", "decimal", "date", "string", "float64"}

func (t ColumnType) String() string {
	if int(t) < len(columnTypeNames) {
		return columnTypeNames[t]
	}
	return fmt.Sprintf("ColumnType(%d)", uint8(t))
}

// IntegerCoded reports whether values of t are stored as integers whose
// order is the values' order (what min/max pruning and ranges work on).
func (t ColumnType) IntegerCoded() bool {
	return t == TypeInt64 || t == TypeInt32 || t == TypeDecimal || t == TypeDate
}

// ColumnStats is what a planner knows of one column of a table as a whole.
type ColumnStats struct {
	Type ColumnType
	// Scale is the number of decimal digits after the point (TypeDecimal).
	Scale int
	// Distinct estimates the number of distinct values in the table (0:
	// unknown). Computed when the data is written (a HyperLogLog sketch
	// over every row), or from the generator's specification.
	Distinct int64
	// Range is the column's min/max over the table, integer-coded (Valid
	// false for text, floats, or where unknown).
	Range MinMax
	// AvgLen is the average length in bytes of a text value (0: unknown
	// or not text).
	AvgLen float64
}

// Column returns the index of the named column, or -1.
func (t *TableStats) Column(name string) int {
	for i, c := range t.Columns {
		if c == name {
			return i
		}
	}
	return -1
}

// Rows is the table's total row count.
func (t *TableStats) Rows() int64 {
	var n int64
	for i := range t.Chunks {
		n += t.Chunks[i].Rows
	}
	return n
}

// Bytes is the total stored size of the given columns over all chunks.
func (t *TableStats) Bytes(cols []int) int64 {
	var n int64
	for i := range t.Chunks {
		for _, c := range cols {
			n += t.Chunks[i].Bytes[c]
		}
	}
	return n
}

// ColumnIndexes resolves names to column indices, in the order given.
func (t *TableStats) ColumnIndexes(names []string) ([]int, error) {
	out := make([]int, len(names))
	for i, n := range names {
		c := t.Column(n)
		if c < 0 {
			return nil, fmt.Errorf("plan: table %s has no column %q", t.Name, n)
		}
		out[i] = c
	}
	return out, nil
}

// Survives reports whether chunk i may hold rows inside every range (min/max
// pruning). Ranges on columns without statistics never prune.
func (t *TableStats) Survives(i int, ranges []Range) bool {
	ch := &t.Chunks[i]
	if ch.Stats == nil {
		return true
	}
	for _, r := range ranges {
		c := t.Column(r.Column)
		if c < 0 || c >= len(ch.Stats) || !ch.Stats[c].Valid {
			continue
		}
		if ch.Stats[c].Max < r.Lo || ch.Stats[c].Min > r.Hi {
			return false
		}
	}
	return true
}

// Validate checks internal consistency: every chunk has one Bytes entry per
// column (and Offset/Stats, when present), non-negative sizes, a
// non-negative partition when placed, and a valid file index when Files is
// set.
func (t *TableStats) Validate() error {
	for i := range t.Chunks {
		ch := &t.Chunks[i]
		if len(ch.Bytes) != len(t.Columns) {
			return fmt.Errorf("plan: table %s chunk %d has %d column sizes, want %d", t.Name, i, len(ch.Bytes), len(t.Columns))
		}
		if ch.Offset != nil && len(ch.Offset) != len(t.Columns) {
			return fmt.Errorf("plan: table %s chunk %d has %d column offsets, want %d", t.Name, i, len(ch.Offset), len(t.Columns))
		}
		if ch.Stats != nil && len(ch.Stats) != len(t.Columns) {
			return fmt.Errorf("plan: table %s chunk %d has %d column stats, want %d", t.Name, i, len(ch.Stats), len(t.Columns))
		}
		if ch.Rows < 0 {
			return fmt.Errorf("plan: table %s chunk %d has %d rows", t.Name, i, ch.Rows)
		}
		for c, b := range ch.Bytes {
			if b < 0 {
				return fmt.Errorf("plan: table %s chunk %d column %s has %d bytes", t.Name, i, t.Columns[c], b)
			}
		}
		if ch.Placed && ch.Node < 0 {
			return fmt.Errorf("plan: table %s chunk %d is placed on partition %d", t.Name, i, ch.Node)
		}
		if len(t.Files) > 0 && (ch.File < 0 || int(ch.File) >= len(t.Files)) {
			return fmt.Errorf("plan: table %s chunk %d names file %d of %d", t.Name, i, ch.File, len(t.Files))
		}
	}
	return nil
}
