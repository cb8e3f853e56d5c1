package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"testing"

	"gostachio/engine/gpu"
	"gostachio/engine/storage/alloc"
	"gostachio/kernels/cpu"
	"gostachio/kernels/cuda"
	"gostachio/plan"
	"gostachio/tpch/queries"
	"gostachio/tpch/schema"
)

// TestGPUAnswers runs Q1 and Q6 on the GPU backend (serial and overlap, one
// and two devices' streams) at SF0.01 and SF1 against the official answers,
// checks that a query the GPU path cannot run is refused before it starts,
// naming the operator, and runs all 22 queries as hybrid GPU runs (the
// scan pipelines the GPU path cannot run on the host) against the official
// answers. Skipped without a GPU.
func TestGPUAnswers(t *testing.T) {
	dev := openTestGPU(t)
	sfs := []float64{0.01, 1}
	if testing.Short() {
		sfs = sfs[:1]
	}
	for _, sf := range sfs {
		ds := testData(t, sf)
		for _, q := range []string{"q1", "q6"} {
			for _, c := range []struct {
				pol     string
				devices int
			}{{"serial", 1}, {"overlap", 1}, {"overlap", 2}} {
				t.Run(q+"/"+c.pol, func(t *testing.T) {
					checkQuery(t, ds, q, sf, QueryOptions{Policy: c.pol, Devices: c.devices, GPU: dev, Set: "chunk=16MiB"}, alloc.NewHeap())
				})
			}
		}
		// Reads into pinned buffers (pooled: the vectors are views only
		// until the upload).
		pool, unpin, err := dev.PinnedPool(256 << 20)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{"q1", "q6"} {
			t.Run(q+"/pinned", func(t *testing.T) {
				checkQuery(t, ds, q, sf, QueryOptions{Policy: "overlap", Devices: 2, GPU: dev, Set: "chunk=16MiB"}, pool)
			})
		}
		if err := unpin(); err != nil {
			t.Error(err)
		}
		_, err = runQuery(context.Background(), ds, "q3", QueryOptions{GPU: dev, Devices: 1})
		if err == nil || !strings.Contains(err.Error(), "on the GPU") || !errors.Is(err, ErrGPUPath) {
			t.Errorf("q3 on the GPU: %v, want a refusal naming the operator", err)
		}
		// Hybrid: every query, its GPU-runnable scan pipelines on the GPU
		// (Q1's, Q6's, Q15's and Q18's lineitem scans), the rest on the
		// host's kernels; serial at SF0.01 with 2 devices' streams, overlap
		// with 4 at SF1.
		pol, devices := "serial", 2
		if sf == 1 {
			pol, devices = "overlap", 4
		}
		for _, q := range queries.Names() {
			t.Run(q+"/hybrid", func(t *testing.T) {
				checkQuery(t, ds, q, sf, QueryOptions{Policy: pol, Devices: devices, GPU: dev, GPUHybrid: true, Set: "chunk=16MiB"}, alloc.NewHeap())
			})
		}
	}
	if dev.Peak() <= 0 {
		t.Errorf("device memory peak %d after the runs", dev.Peak())
	}
}

// openTestGPU opens GPU 0 for a test, closed when it ends; the test is
// skipped without a CUDA driver.
func openTestGPU(t *testing.T) *gpu.Device {
	t.Helper()
	if _, err := cuda.Load(); err != nil {
		t.Skip("no CUDA driver: ", err)
	}
	dev, err := gpu.Open(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	return dev
}

// TestGPUWithoutDriver: asking for the GPU on a machine without a CUDA
// driver fails with a message naming that, and runs nothing; the zero
// RunOptions runs on the CPU.
func TestGPUWithoutDriver(t *testing.T) {
	if _, err := cuda.Load(); err == nil {
		t.Skip("a CUDA driver is installed")
	}
	ds := testData(t, 0.01)
	var out bytes.Buffer
	err := RunQueries(context.Background(), RunOptions{Catalog: queries.Catalog(), Data: ds.Dir, Query: "q6", UseGPU: true}, &out, io.Discard)
	if !errors.Is(err, gpu.ErrNoDriver) || out.Len() != 0 {
		t.Fatalf("--gpu without a driver: %v (printed %q)", err, out.String())
	}
	if err := RunQueries(context.Background(), RunOptions{Catalog: queries.Catalog(), Data: ds.Dir, Query: "q6"}, &out, io.Discard); err != nil || !strings.Contains(out.String(), "revenue") {
		t.Fatalf("the zero options: %v, printed %q", err, out.String())
	}
}

// TestBoundColumns: a GPU unit's integer, decimal and date columns get
// the range of the values of its chunks (checked against the values
// themselves, read back), string columns none.
func TestBoundColumns(t *testing.T) {
	ds := testData(t, 0.01)
	tm, err := ds.Table("lineitem")
	if err != nil {
		t.Fatal(err)
	}
	cols := []string{"l_quantity", "l_extendedprice", "l_shipdate", "l_linenumber", "l_returnflag"}
	types := []cpu.Type{cpu.TDecimal, cpu.TDecimal, cpu.TDate, cpu.TInt32, cpu.TString}
	first := min(1, len(tm.Chunks)-1)
	n := min(3, len(tm.Chunks)-first)
	g := &gpu.Batch{Names: cols, Cols: make([]gpu.Col, len(cols))}
	for i, ty := range types {
		g.Cols[i].Type = ty
	}
	if err := BoundGPUColumns(g, tm, first, n); err != nil {
		t.Fatal(err)
	}
	for i, name := range cols {
		c := g.Cols[i]
		if types[i] == cpu.TString {
			if c.Bounded {
				t.Errorf("%s: a string column bounded", name)
			}
			continue
		}
		lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
		for ch := first; ch < first+n; ch++ {
			sb, err := ds.ReadChunk("lineitem", ch, []string{name})
			if err != nil {
				t.Fatal(err)
			}
			v := ChunkBatch(sb).Cols[0]
			for r := 0; r < sb.Rows; r++ {
				x := int64(0)
				if v.I64 != nil {
					x = v.I64[r]
				} else {
					x = int64(v.I32[r])
				}
				lo, hi = min(lo, x), max(hi, x)
			}
		}
		if !c.Bounded || c.Lo != lo || c.Hi != hi {
			t.Errorf("%s: bounded %v [%d, %d], want [%d, %d]", name, c.Bounded, c.Lo, c.Hi, lo, hi)
		}
	}
}

// TestPlaceGPU: without hybrid a query with a scan pipeline the GPU path
// cannot run whole is refused naming it (ErrGPUPath) and its plan is left
// alone; with hybrid such pipelines are split (their scan, filters and
// projections before the first op the GPU path lacks on the GPU, marked
// HostFrom) or, without a filter in that prefix, marked for the host, each
// with the reason. Which queries run whole and split pipelines is pinned.
func TestPlaceGPU(t *testing.T) {
	tables, err := queries.Stats(1, 131072)
	if err != nil {
		t.Fatal(err)
	}
	var whole, split []string
	probes := 0
	for _, q := range queries.Names() {
		p, err := queries.Build(q, 1, tables)
		if err != nil {
			t.Fatal(err)
		}
		strictErr := func() error { _, err := PlaceGPU(p, false); return err }()
		for _, pl := range p.Pipelines {
			if pl.OnHost || pl.HostFrom != 0 {
				t.Fatalf("%s: %s marked by a refused placement", q, pl.Name)
			}
		}
		placed, err := PlaceGPU(p, true)
		if err != nil {
			t.Fatalf("%s hybrid: %v", q, err)
		}
		scans, allGPU, splits := 0, 0, 0
		for _, pl := range p.Pipelines {
			if pl.Source.Kind == plan.SourceScan {
				scans++
			} else if pl.OnHost || pl.HostFrom != 0 {
				t.Errorf("%s: non-scan pipeline %s placed", q, pl.Name)
			}
		}
		for _, pg := range placed {
			pl := &p.Pipelines[pg.Pipeline]
			switch {
			case !pg.OnGPU:
				if !pl.OnHost || pl.HostFrom != 0 || pg.Reason == "" || pg.GPUOps != 0 {
					t.Errorf("%s: %s on the host: plan %v/%d, placement %+v", q, pl.Name, pl.OnHost, pl.HostFrom, pg)
				}
			case pg.GPUOps < pg.Ops:
				splits++
				if pl.OnHost || pl.HostFrom != pg.GPUOps || pg.Reason == "" {
					t.Errorf("%s: %s split: plan %v/%d, placement %+v", q, pl.Name, pl.OnHost, pl.HostFrom, pg)
				}
				filter := false
				for _, op := range pl.Ops[:pg.GPUOps] {
					filter = filter || op.Kind == plan.OpFilter || op.Kind == plan.OpHashProbe
					switch op.Kind {
					case plan.OpScan, plan.OpFilter, plan.OpProject:
					case plan.OpHashProbe:
						probes++
					default:
						t.Errorf("%s: %s: %s on the GPU's row path", q, pl.Name, op.Kind)
					}
				}
				if !filter {
					t.Errorf("%s: %s split without a filter or a probe on the GPU", q, pl.Name)
				}
				if err := probeKeysInteger(p, pl, pg.GPUOps); err != nil {
					t.Errorf("%s: %s: %v", q, pl.Name, err)
				}
			default:
				allGPU++
				if pl.OnHost || pl.HostFrom != 0 || pg.GPUOps != len(pl.Ops) {
					t.Errorf("%s: %s on the GPU: plan %v/%d, placement %+v", q, pl.Name, pl.OnHost, pl.HostFrom, pg)
				}
			}
		}
		if len(placed) != scans {
			t.Errorf("%s: %d placements for %d scan pipelines", q, len(placed), scans)
		}
		if (allGPU < scans) != (strictErr != nil) {
			t.Errorf("%s: %d of %d scans all on the GPU, strict placement error %v", q, allGPU, scans, strictErr)
		}
		if strictErr != nil && (!errors.Is(strictErr, ErrGPUPath) || !strings.Contains(strictErr.Error(), "--gpu-hybrid")) {
			t.Errorf("%s: refusal %v does not wrap ErrGPUPath or name --gpu-hybrid", q, strictErr)
		}
		if allGPU > 0 {
			whole = append(whole, q)
		}
		if splits > 0 {
			split = append(split, q)
		}
		line := FormatPlacement(q, placed)
		switch q {
		case "q15":
			if !strings.Contains(line, "1 of 2 scan pipelines on the GPU: q15 scan lineitem; 1 split, their scan, filters and probes on the GPU: q15 scan supplier (2 of 3 ops; the host from operator gather") {
				t.Errorf("q15 placement line: %s", line)
			}
		case "q18":
			if !strings.Contains(line, "on the host: q18 scan lineitem (operator agg-partial") || !strings.Contains(line, "its state would come back nearly as large as its input") {
				t.Errorf("q18 placement line: %s", line)
			}
			if _, err := PlaceGPU(p, false); err == nil || !strings.Contains(err.Error(), "q18 scan orders") {
				t.Errorf("q18 plain GPU placement: %v, want the orders scan refused, not the lineitem aggregate", err)
			}
		case "q3":
			if !strings.Contains(line, "0 of 3 scan pipelines on the GPU; 3 split, their scan, filters and probes on the GPU: q3 scan customer (3 of 4 ops; the host from operator broadcast") {
				t.Errorf("q3 placement line: %s", line)
			}
		}
	}
	// Q18's lineitem aggregate (1.5 M groups of 6 M rows) runs on the
	// host in a hybrid run (stateTooLarge); a plain GPU run keeps it.
	if got := strings.Join(whole, ","); got != "q1,q6,q15" {
		t.Errorf("queries with a scan pipeline all on the GPU: %s, want q1,q6,q15", got)
	}
	if got := strings.Join(split, ","); got != "q2,q3,q4,q5,q7,q8,q9,q10,q11,q12,q13,q14,q15,q16,q17,q18,q19,q20,q21,q22" {
		t.Errorf("queries with a split scan pipeline: %s", got)
	}
}

// probeKeysInteger checks that every probe among the first n ops of scan
// pipeline pl (the GPU row path's) joins on a column whose type is known
// from the scanned table's schema, through the projections before it, to
// be an integer: the device table holds integer keys only (gpu.BuildJoin),
// and the placement, made from the plan alone, must not send it another.
func probeKeysInteger(p *plan.Plan, pl *plan.Pipeline, n int) error {
	tab, err := schema.Lookup(p.Tables[pl.Source.Table].Name)
	if err != nil {
		return err
	}
	types := map[string]schema.Type{}
	for _, c := range tab.Columns {
		types[c.Name] = c.Type
	}
	for _, op := range pl.Ops[:n] {
		switch op.Kind {
		case plan.OpProject:
			next := map[string]schema.Type{}
			for _, ne := range op.Expr.(plan.Projection) {
				if c, ok := ne.E.(plan.Col); ok {
					if typ, known := types[string(c)]; known {
						next[ne.Name] = typ
					}
				}
			}
			types = next
		case plan.OpHashProbe:
			typ, known := types[op.Keys[0]]
			if !known || (typ != schema.Int32 && typ != schema.Int64) {
				return fmt.Errorf("probe %q on the GPU with key %s of type %v (known %v): not an integer", op.Label, op.Keys[0], typ, known)
			}
		}
	}
	return nil
}

// TestGPURowsMatchCPU runs the row-path prefix (gpu.RowPrefix) of every
// TPC-H scan pipeline that a hybrid run splits over its whole table at
// SF0.01 on the GPU, and the same ops on the CPU kernels: the rows that
// come back equal the CPU's, column by column (names, types, scales,
// values, order). Skipped without a GPU.
func TestGPURowsMatchCPU(t *testing.T) {
	dev := openTestGPU(t)
	s, err := dev.Context().NewStream(cuda.StreamNonBlocking)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	ds := testData(t, 0.01)
	cases := 0
	for _, q := range queries.Names() {
		p, err := BuildQuery(ds, queries.Catalog(), q)
		if err != nil {
			t.Fatal(err)
		}
		for _, pl := range p.Pipelines {
			k, _ := gpu.RowPrefix(pl.Ops)
			if pl.Source.Kind != plan.SourceScan || k == 0 || gpu.Supported(pl.Ops) == nil {
				continue
			}
			// Up to the first probe: its build side is another pipeline's
			// output (joins: TestGPURowsJoin in engine/gpu, and the hybrid
			// runs of TestGPUAnswers).
			filter := false
			for i, op := range pl.Ops[:k] {
				if op.Kind == plan.OpHashProbe {
					k = i
					break
				}
				filter = filter || op.Kind == plan.OpFilter
			}
			if !filter {
				continue
			}
			cases++
			table := p.Tables[pl.Source.Table].Name
			tm, err := ds.Table(table)
			if err != nil {
				t.Fatal(err)
			}
			var parts []*cpu.Batch
			for i := range tm.Chunks {
				sb, err := ds.ReadChunk(table, i, pl.Ops[0].Out)
				if err != nil {
					t.Fatal(err)
				}
				parts = append(parts, ChunkBatch(sb))
			}
			want, err := cpu.Concat(parts)
			if err != nil {
				t.Fatal(err)
			}
			for _, op := range pl.Ops[1:k] {
				switch op.Kind {
				case plan.OpFilter:
					want, err = cpu.Filter(want, op.Expr)
				case plan.OpProject:
					want, err = cpu.Project(want, op.Expr.(plan.Projection))
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			g, err := dev.Upload(s, parts)
			if err != nil {
				t.Fatal(err)
			}
			if err := BoundGPUColumns(g, tm, 0, len(parts)); err != nil {
				t.Fatal(err)
			}
			got, _, err := dev.Rows(s, g, pl.Ops[:k], nil)
			g.Free()
			if err != nil {
				t.Errorf("%s: %v", pl.Name, err)
				continue
			}
			if err := sameRows(got, want); err != nil {
				t.Errorf("%s (first %d ops): %v", pl.Name, k, err)
				continue
			}
			t.Logf("%s: %d ops, %d of %d rows, columns %v", pl.Name, k, got.Rows, g.Rows, got.Names)
		}
	}
	if cases != 33 {
		t.Errorf("%d split pipelines checked, want the 33 the plans have (TestPlaceGPU)", cases)
	}
}

// sameRows compares two batches column by column, value by value.
func sameRows(got, want *cpu.Batch) error {
	if !slices.Equal(got.Names, want.Names) || got.Rows != want.Rows {
		return fmt.Errorf("%d rows of %v, want %d rows of %v", got.Rows, got.Names, want.Rows, want.Names)
	}
	for c := range got.Cols {
		g, w := &got.Cols[c], &want.Cols[c]
		if g.Type != w.Type || g.Scale != w.Scale {
			return fmt.Errorf("column %s: %s scale %d, want %s scale %d", got.Names[c], g.Type, g.Scale, w.Type, w.Scale)
		}
		for i := 0; i < got.Rows; i++ {
			if gv, wv := g.Format(i), w.Format(i); gv != wv {
				return fmt.Errorf("column %s row %d: %s, want %s", got.Names[c], i, gv, wv)
			}
		}
	}
	return nil
}

// TestPlaceGPUFloat: a scan pipeline that reads a float64 column (which
// the GPU path does not upload) is refused naming the column without
// hybrid (q6, all on the GPU otherwise), and placed wholly on the host
// with hybrid, its row-path prefix included (q3); the other scan
// pipelines keep their placement.
func TestPlaceGPUFloat(t *testing.T) {
	tables, err := queries.Stats(1, 131072)
	if err != nil {
		t.Fatal(err)
	}
	build := func(q string, float bool) *plan.Plan {
		p, err := queries.Build(q, 1, tables)
		if err != nil {
			t.Fatal(err)
		}
		for i := range p.Tables {
			tb := &p.Tables[i]
			tb.Schema = append([]plan.ColumnStats(nil), tb.Schema...)
			if c := tb.Column("l_extendedprice"); float && c >= 0 {
				if c >= len(tb.Schema) {
					t.Fatalf("lineitem has no schema statistics for l_extendedprice")
				}
				tb.Schema[c].Type = plan.TypeFloat64
			}
		}
		return p
	}
	if _, err := PlaceGPU(build("q6", false), false); err != nil {
		t.Fatalf("q6 is not all on the GPU: %v", err)
	}
	if _, err := PlaceGPU(build("q6", true), false); err == nil || !errors.Is(err, ErrGPUPath) || !strings.Contains(err.Error(), "l_extendedprice is float64") {
		t.Fatalf("strict placement with a float column: %v", err)
	}
	base, err := PlaceGPU(build("q3", false), true)
	if err != nil {
		t.Fatal(err)
	}
	p := build("q3", true)
	placed, err := PlaceGPU(p, true)
	if err != nil {
		t.Fatal(err)
	}
	lineitem := 0
	for i, pg := range placed {
		pl := &p.Pipelines[pg.Pipeline]
		if p.Tables[pl.Source.Table].Name != "lineitem" {
			if pg != base[i] {
				t.Errorf("%s: placement %+v, without the float column %+v", pl.Name, pg, base[i])
			}
			continue
		}
		lineitem++
		if pg.OnGPU || pg.GPUOps != 0 || !pl.OnHost || pl.HostFrom != 0 || !strings.Contains(pg.Reason, "l_extendedprice") {
			t.Errorf("%s reads a float column: placement %+v, plan on host %v from %d", pl.Name, pg, pl.OnHost, pl.HostFrom)
		}
	}
	if lineitem == 0 {
		t.Fatal("q3 has no lineitem scan pipeline")
	}
}
