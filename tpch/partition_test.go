package tpch_test

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gostachio/dataset"
	"gostachio/engine"
	"gostachio/tpch"
	"gostachio/tpch/queries"
	"gostachio/tpch/schema"
)

// rowsOf formats a query result as sorted lines (partitioning changes the
// order rows reach the result in, so ties may come out in another order).
func rowsOf(r *engine.QueryResult) []string {
	var out []string
	for _, row := range r.Rows() {
		out = append(out, strings.Join(row, "|"))
	}
	slices.Sort(out)
	return out
}

// tableRows reads a table as sorted row strings, and per row its partition
// (the chunk's); rows[i] and parts[i] do not correspond after sorting, so
// partition checks use byPart.
func tableRows(t *testing.T, ds *dataset.Dataset, name string) (rows []string, byPart map[int][]string) {
	t.Helper()
	tm, err := ds.Table(name)
	if err != nil {
		t.Fatal(err)
	}
	byPart = map[int][]string{}
	for i := range tm.Chunks {
		b, err := ds.ReadChunk(name, i, nil)
		if err != nil {
			t.Fatal(err)
		}
		for r := range b.Rows {
			var sb strings.Builder
			for c, col := range b.Table.Columns {
				v := &b.Cols[c]
				switch col.Type {
				case schema.Int64, schema.Decimal:
					fmt.Fprintf(&sb, "%d|", v.I64[r])
				case schema.Int32, schema.Date:
					fmt.Fprintf(&sb, "%d|", v.I32[r])
				default:
					fmt.Fprintf(&sb, "%q|", v.Str(r))
				}
			}
			rows = append(rows, sb.String())
			byPart[tm.Chunks[i].Partition] = append(byPart[tm.Chunks[i].Partition], sb.String())
		}
	}
	slices.Sort(rows)
	for p := range byPart {
		slices.Sort(byPart[p])
	}
	return rows, byPart
}

// TestPartitionedTPCH: the SF0.01 dataset partitioned into 2 and 3 (by
// `partition` and by `gen --partitions`) holds the same rows, with every
// order and its lines on the order key's partition, and all 22 queries
// give the same results on it as on the unpartitioned dataset.
func TestPartitionedTPCH(t *testing.T) {
	if testing.Short() {
		t.Skip("generates SF0.01 and runs 22 queries on 4 datasets")
	}
	ctx := context.Background()
	root := t.TempDir()
	base := filepath.Join(root, "base")
	// Small chunks, so every table has several and a partition several.
	const chunkRows = 4096
	if err := tpch.Gen(ctx, tpch.GenOptions{ScaleFactor: 0.01, Out: base, ChunkRows: chunkRows, Workers: 2}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	src, err := dataset.Open(base)
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string]string{}
	for _, n := range []int{2, 3} {
		d := filepath.Join(root, fmt.Sprintf("part%d", n))
		if err := dataset.Partition(ctx, src, d, dataset.PartitionOptions{Partitions: n, Workers: 2}); err != nil {
			t.Fatal(err)
		}
		dirs[fmt.Sprintf("partition %d", n)] = d
	}
	g := filepath.Join(root, "gen2")
	if err := tpch.Gen(ctx, tpch.GenOptions{ScaleFactor: 0.01, Out: g, ChunkRows: chunkRows, Workers: 2, Partitions: 2}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	dirs["gen 2"] = g

	want := map[string][]string{} // per table, the source's rows
	for _, name := range src.Tables() {
		want[name], _ = tableRows(t, src, name)
	}
	byPartOf := map[string]map[string]map[int][]string{} // dataset -> table -> partition -> rows
	for label, d := range dirs {
		ds, err := dataset.Open(d)
		if err != nil {
			t.Fatal(err)
		}
		n := ds.Manifest.Partitions
		byPartOf[label] = map[string]map[int][]string{}
		for _, name := range src.Tables() {
			rows, byPart := tableRows(t, ds, name)
			byPartOf[label][name] = byPart
			if !slices.Equal(rows, want[name]) {
				t.Errorf("%s: %s rows differ from the unpartitioned dataset's (%d vs %d)", label, name, len(rows), len(want[name]))
			}
			tm, _ := ds.Table(name)
			if _, placed := dataset.TPCHPlacement[name]; placed != (tm.Partitions == n) {
				t.Errorf("%s: %s has %d partitions (dataset %d)", label, name, tm.Partitions, n)
			}
		}
		checkOrdersWithLines(t, label, ds, n)
		// Placement reaches the plan.
		for _, ts := range ds.PlanStats() {
			tm, _ := ds.Table(ts.Name)
			for i := range ts.Chunks {
				if got, want := ts.Chunks[i].Placement(), int32(tm.Chunks[i].Partition); got != want {
					t.Fatalf("%s: %s chunk %d: plan placement %d, manifest partition %d", label, ts.Name, i, got, want)
				}
			}
		}
	}
	// gen --partitions 2 and partition --partitions 2 place every row alike.
	for name, parts := range byPartOf["partition 2"] {
		for p, rows := range parts {
			if !slices.Equal(rows, byPartOf["gen 2"][name][p]) {
				t.Errorf("%s partition %d: gen --partitions and partition disagree", name, p)
			}
		}
	}

	for label, d := range dirs {
		ds, err := dataset.Open(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, devices := range []int{2, 4} {
			for _, q := range queries.Names() {
				ref, err := runQuery(ctx, src, q, engine.QueryOptions{Devices: devices, Set: "chunk=64KiB", Buffered: true, Mem: 1 << 30})
				if err != nil {
					t.Fatalf("unpartitioned %s: %v", q, err)
				}
				got, err := runQuery(ctx, ds, q, engine.QueryOptions{Devices: devices, Set: "chunk=64KiB", Buffered: true, Mem: 1 << 30})
				if err != nil {
					t.Fatalf("%s, %d devices, %s: %v", label, devices, q, err)
				}
				if g, w := rowsOf(got), rowsOf(ref); !slices.Equal(g, w) {
					t.Errorf("%s, %d devices, %s: result differs from the unpartitioned dataset's:\n%s\nwant\n%s", label, devices, q, strings.Join(g, "\n"), strings.Join(w, "\n"))
				}
			}
		}
	}
}

// checkOrdersWithLines: every order is on its key's partition and every
// line on its order's, and orders and lineitem stay co-chunked.
func checkOrdersWithLines(t *testing.T, label string, ds *dataset.Dataset, n int) {
	t.Helper()
	orderPart := map[int64]int{}
	ot, _ := ds.Table("orders")
	lt, _ := ds.Table("lineitem")
	if len(ot.Chunks) != len(lt.Chunks) || len(ot.Chunks) < 2*n {
		t.Errorf("%s: orders has %d chunks, lineitem %d: want equal (co-chunked), at least 2 per partition", label, len(ot.Chunks), len(lt.Chunks))
	}
	for i := range ot.Chunks {
		b, err := ds.ReadChunk("orders", i, []string{"o_orderkey"})
		if err != nil {
			t.Fatal(err)
		}
		p := ot.Chunks[i].Partition
		for _, k := range b.Cols[0].I64 {
			if dataset.PartitionOf(k, n) != p {
				t.Fatalf("%s: order %d in partition %d, its key hashes to %d", label, k, p, dataset.PartitionOf(k, n))
			}
			orderPart[k] = p
		}
	}
	for i := range lt.Chunks {
		b, err := ds.ReadChunk("lineitem", i, []string{"l_orderkey"})
		if err != nil {
			t.Fatal(err)
		}
		p := lt.Chunks[i].Partition
		var oks map[int64]bool
		if i < len(ot.Chunks) {
			ob, _ := ds.ReadChunk("orders", i, []string{"o_orderkey"})
			oks = map[int64]bool{}
			for _, k := range ob.Cols[0].I64 {
				oks[k] = true
			}
		}
		for _, k := range b.Cols[0].I64 {
			op, ok := orderPart[k]
			if !ok || op != p {
				t.Fatalf("%s: line of order %d in partition %d, the order in %d (found %v)", label, k, p, op, ok)
			}
			if oks != nil && !oks[k] {
				t.Fatalf("%s: lineitem chunk %d holds order %d, not in orders chunk %d", label, i, k, i)
			}
		}
	}
}

// runQuery builds query name over ds and runs it on the engine.
func runQuery(ctx context.Context, ds *dataset.Dataset, name string, opts engine.QueryOptions) (*engine.QueryResult, error) {
	p, err := engine.BuildQuery(ds, queries.Catalog(), name)
	if err != nil {
		return nil, err
	}
	return engine.Query(ctx, ds, p, opts)
}
