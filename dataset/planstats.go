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
				if tm.Schema != nil && tm.Schema.Columns[ci].Type != schema.String && !col.Min.IsStr && ch.Rows > 0 {
					cs.Stats[ci] = plan.MinMax{Valid: true, Min: col.Min.Int, Max: col.Max.Int}
				}
			}
			ts.Chunks = append(ts.Chunks, cs)
		}
		out = append(out, ts)
	}
	return out
}
