package queries

import (
	"fmt"
	"hash/fnv"
	"slices"
	"sync"
	"testing"

	"gostachio/plan"
	"gostachio/tpch/dbgen"
	"gostachio/tpch/schema"
)

// A reference interpreter of checked plans over in-memory TPC-H data,
// following the execution contract of docs/design.md with W devices: a table's chunks are dealt
// round-robin over the devices; every pipeline runs on every device over
// its unit (a scan's chunks on that device, or for a From pipeline the
// union of what its inputs left there); sinks move data exactly as the
// engine's do (Gather to device 0, Broadcast to all, Shuffle by key hash,
// HashBuild per device). Prune ranges are applied to rows, not chunks: a
// range that drops a qualifying row changes the result (chunk-level pruning
// keeps a superset of the rows, so this is the stricter test).

// dataset is a generated TPC-H database, one columnar batch per table;
// scans cut it into chunks of chunkRows rows and convert only the columns
// they read.
type dataset struct {
	tables map[string]*schema.Batch
}

// chunkRows is deliberately small and odd so every device gets chunks and
// chunk boundaries fall anywhere.
const chunkRows = 997

var (
	dataMu sync.Mutex
	data   = map[float64]*dataset{}
)

// loadData generates (once per scale factor) all eight tables with dbgen.
func loadData(t *testing.T, sf float64) *dataset {
	t.Helper()
	dataMu.Lock()
	defer dataMu.Unlock()
	if ds := data[sf]; ds != nil {
		return ds
	}
	g, err := dbgen.New(sf)
	if err != nil {
		t.Fatal(err)
	}
	ds := &dataset{tables: map[string]*schema.Batch{}}
	for _, tab := range schema.Tables {
		if tab == &schema.Lineitem || tab == &schema.PartSupp {
			continue // generated with their parent
		}
		main, child, err := g.GenerateWithChild(tab, 0, g.Units(tab))
		if err != nil {
			t.Fatal(err)
		}
		ds.tables[tab.Name] = main
		if child != nil {
			ds.tables[child.Table.Name] = child
		}
	}
	data[sf] = ds
	return ds
}

// cell returns row i of column c of b as a value.
func cell(b *schema.Batch, c, i int) value {
	v := &b.Cols[c]
	switch b.Table.Columns[c].Type {
	case schema.Int64, schema.Decimal:
		return value{i: v.I64[i]}
	case schema.Int32, schema.Date:
		return value{i: int64(v.I32[i])}
	}
	return value{s: v.Str(i)}
}

// hashTable is one device's hash table of a HashBuild pipeline.
type hashTable struct {
	rows rows
	all  []int            // every row (cross join)
	m    map[string][]int // key -> rows
}

// runtime is the state of one execution.
type runtime struct {
	w      int
	out    [][]rows       // per pipeline, per device: delivered or retained output
	tables [][]*hashTable // per pipeline, per device
	// present says on which devices a pipeline's output exists: a From
	// pipeline has a unit (runs) on a device only where one of its inputs
	// left something. After a Gather that is device 0 alone, so a no-key
	// Final over gathered partials yields its one row on device 0 only.
	present [][]bool
}

// result is a query result: column names and formatted rows.
type result struct {
	cols []string
	rows [][]string
}

// run executes c over ds on w devices.
func run(c *checked, ds *dataset, w int) (*result, error) {
	rt := &runtime{w: w, out: make([][]rows, len(c.pipes)), present: make([][]bool, len(c.pipes)),
		tables: make([][]*hashTable, len(c.pipes))}
	tableIndex := map[string]int{}
	for i, t := range schema.Tables {
		tableIndex[t.Name] = i
	}
	for i, pi := range c.pipes {
		units := make([]rows, w)
		ran := make([]bool, w)
		for dev := range ran {
			ran[dev] = true // every device runs a scan pipeline, chunks or not
		}
		rt.present[i] = make([]bool, w)
		if pi.table != "" {
			b := ds.tables[pi.table]
			for n, lo := 0, 0; lo < b.Rows; n, lo = n+1, lo+chunkRows {
				// Offset by the table so small one-chunk tables do not all
				// land on device 0.
				dev := (n + tableIndex[pi.table]) % w
			row:
				for i := lo; i < min(lo+chunkRows, b.Rows); i++ {
					nr := make([]value, len(pi.scanIdx))
					for k, j := range pi.scanIdx {
						nr[k] = cell(b, j, i)
					}
					for _, pr := range pi.prune {
						if v := nr[pr[0]].i; v < pr[1] || v > pr[2] {
							continue row
						}
					}
					units[dev] = append(units[dev], nr)
				}
			}
		} else {
			for dev := range w {
				ran[dev] = false
				for _, j := range pi.inputs {
					ran[dev] = ran[dev] || rt.present[j][dev]
					units[dev] = append(units[dev], rt.out[j][dev]...)
				}
			}
		}
		for dev := range w {
			if !ran[dev] {
				continue
			}
			for _, s := range pi.steps {
				var err error
				if units[dev], err = s(rt, dev, units[dev]); err != nil {
					return nil, fmt.Errorf("%s: pipeline %d (%s): %w", c.p.Name, i, pi.name, err)
				}
			}
		}
		rt.out[i] = make([]rows, w)
		switch pi.sink.Kind {
		case plan.OpGather:
			rt.present[i][0] = true
			for dev := range w {
				rt.out[i][0] = append(rt.out[i][0], units[dev]...)
			}
		case plan.OpBroadcast:
			var all rows
			for dev := range w {
				all = append(all, units[dev]...)
			}
			for dev := range w {
				rt.out[i][dev], rt.present[i][dev] = all, true
			}
		case plan.OpShuffle:
			kt := make([]typ, len(pi.keyIdx))
			for n, k := range pi.keyIdx {
				kt[n] = pi.out[k].t
			}
			for dev := range w {
				rt.present[i][dev] = true
				for _, r := range units[dev] {
					h := fnv.New64a()
					h.Write([]byte(keyString(r, pi.keyIdx, kt)))
					to := int(h.Sum64() % uint64(w))
					rt.out[i][to] = append(rt.out[i][to], r)
				}
			}
		case plan.OpHashBuild:
			kt := make([]typ, len(pi.keyIdx))
			for n, k := range pi.keyIdx {
				kt[n] = pi.out[k].t
			}
			rt.tables[i] = make([]*hashTable, w)
			for dev := range w {
				ht := &hashTable{rows: units[dev], m: map[string][]int{}}
				for n, r := range units[dev] {
					ht.all = append(ht.all, n)
					k := keyString(r, pi.keyIdx, kt)
					ht.m[k] = append(ht.m[k], n)
				}
				rt.tables[i][dev] = ht
			}
		case plan.OpResult:
			for dev := 1; dev < w; dev++ {
				if len(units[dev]) > 0 {
					return nil, fmt.Errorf("%s: result rows on device %d", c.p.Name, dev)
				}
			}
			res := &result{cols: slices.Clone(pi.sink.Out)}
			for _, r := range units[0] {
				line := make([]string, len(pi.keyIdx))
				for n, k := range pi.keyIdx {
					line[n] = format(r[k], pi.out[k].t)
				}
				res.rows = append(res.rows, line)
			}
			return res, nil
		default: // Done: Final / Sort / TopK output stays on each device
			copy(rt.out[i], units)
			copy(rt.present[i], ran)
		}
	}
	return nil, fmt.Errorf("%s: no result pipeline", c.p.Name)
}
