package dataset

import (
	"gostachio/plan"
	"gostachio/tpch/schema"
)

// PlanStats describes a dataset's tables as the planner and the simulator
// see them: per chunk its rows, and per column the file span its Arrow
// buffers occupy (what an O_DIRECT read of the column moves, padding
// included) and, for integer-coded columns, min/max for pruning; a chunk
// of a partitioned table is placed on its partition (ChunkStats.Placed).
// Each table's Schema holds its columns' types and table-wide statistics
// (see columnStatsOf).
func (ds *Dataset) PlanStats() []plan.TableStats {
	var out []plan.TableStats
	for _, name := range ds.Tables() {
		tm, _ := ds.Table(name)
		ts := plan.TableStats{Name: tm.Name}
		for _, c := range tm.Columns {
			ts.Columns = append(ts.Columns, c.Name)
		}
		for _, f := range tm.Files {
			ts.Files = append(ts.Files, f.Path)
		}
		for _, ch := range tm.Chunks {
			cs := plan.ChunkStats{Rows: ch.Rows, File: int32(ch.File), Base: ch.Offset,
				Bytes: make([]int64, len(ch.Columns)), Offset: make([]int64, len(ch.Columns)),
				Stats: make([]plan.MinMax, len(ch.Columns))}
			if ch.Partition != NoPartition {
				cs.Placed, cs.Node = true, int32(ch.Partition)
			}
			for ci, col := range ch.Columns {
				lo, hi := int64(-1), int64(0)
				for _, b := range col.Buffers {
					if b.Len == 0 {
						continue
					}
					if lo < 0 {
						lo = b.Off
					}
					hi = b.Off + b.Padded()
				}
				if lo >= 0 {
					cs.Offset[ci], cs.Bytes[ci] = lo, hi-lo
				}
				if tm.Schema != nil && tm.Schema.Columns[ci].Type.PlanType().IntegerCoded() && !col.Min.IsStr && ch.Rows > 0 {
					cs.Stats[ci] = plan.MinMax{Valid: true, Min: col.Min.Int, Max: col.Max.Int}
				}
			}
			ts.Chunks = append(ts.Chunks, cs)
		}
		ts.Schema = columnStatsOf(tm)
		out = append(out, ts)
	}
	return out
}

// columnStatsOf is the table-wide statistics of tm's columns: the type
// (and decimal scale) from the schema, Distinct from the manifest (0 where
// it was written before distinct counts), Range the min and max over all
// chunks of an integer-coded column (invalid for an empty table), and for
// text AvgLen = Σ data-buffer bytes / rows, the mean value length in
// bytes (a text column's buffers are validity, offsets, data).
func columnStatsOf(tm *TableMeta) []plan.ColumnStats {
	out := make([]plan.ColumnStats, len(tm.Columns))
	for ci, cm := range tm.Columns {
		cs := &out[ci]
		var t schema.Type
		if tm.Schema != nil {
			t = tm.Schema.Columns[ci].Type
		}
		cs.Type = t.PlanType()
		if t == schema.Decimal {
			cs.Scale = cm.Scale
		}
		cs.Distinct = cm.Distinct
		var textBytes int64
		for _, ch := range tm.Chunks {
			if ch.Rows == 0 {
				continue
			}
			col := &ch.Columns[ci]
			switch {
			case t == schema.String:
				if len(col.Buffers) == 3 {
					textBytes += col.Buffers[2].Len
				}
			case cs.Type.IntegerCoded() && !col.Min.IsStr:
				if !cs.Range.Valid {
					cs.Range = plan.MinMax{Valid: true, Min: col.Min.Int, Max: col.Max.Int}
				}
				cs.Range.Min, cs.Range.Max = min(cs.Range.Min, col.Min.Int), max(cs.Range.Max, col.Max.Int)
			}
		}
		if t == schema.String && tm.Rows > 0 {
			cs.AvgLen = float64(textBytes) / float64(tm.Rows)
		}
	}
	return out
}
