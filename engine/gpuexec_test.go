package engine

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"strings"
	"testing"

	"gostachio/engine/gpu"
	"gostachio/engine/storage/alloc"
	"gostachio/kernels/cpu"
	"gostachio/kernels/cuda"
	"gostachio/plan"
	"gostachio/tpch/queries"
)

// TestGPUAnswers runs Q1 and Q6 on the GPU backend (serial and overlap, one
// and two devices' streams) at SF0.01 and SF1 against the official answers,
// checks that a query the GPU path cannot run is refused before it starts,
// naming the operator, and runs all 22 queries as hybrid GPU runs (the
// scan pipelines the GPU path cannot run on the host) against the official
// answers. Skipped without a GPU.
func TestGPUAnswers(t *testing.T) {
	if _, err := cuda.Load(); err != nil {
		t.Skip("no CUDA driver: ", err)
	}
	dev, err := gpu.Open(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
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
		_, err = Query(context.Background(), ds, "q3", QueryOptions{GPU: dev, Devices: 1})
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

// TestGPUWithoutDriver: asking for the GPU on a machine without a CUDA
// driver fails with a message naming that, and runs nothing; the zero
// RunOptions runs on the CPU.
func TestGPUWithoutDriver(t *testing.T) {
	if _, err := cuda.Load(); err == nil {
		t.Skip("a CUDA driver is installed")
	}
	ds := testData(t, 0.01)
	var out bytes.Buffer
	err := RunQueries(context.Background(), RunOptions{Data: ds.Dir, Query: "q6", UseGPU: true}, &out, io.Discard)
	if !errors.Is(err, gpu.ErrNoDriver) || out.Len() != 0 {
		t.Fatalf("--gpu without a driver: %v (printed %q)", err, out.String())
	}
	if err := RunQueries(context.Background(), RunOptions{Data: ds.Dir, Query: "q6"}, &out, io.Discard); err != nil || !strings.Contains(out.String(), "revenue") {
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
// cannot run is refused naming it (ErrGPUPath) and its plan is left
// alone; with hybrid exactly those pipelines are marked for the host, with
// the reason. Which queries keep a scan pipeline on the GPU is pinned.
func TestPlaceGPU(t *testing.T) {
	tables, err := plan.TPCHStats(1, 131072)
	if err != nil {
		t.Fatal(err)
	}
	var some []string
	for _, q := range queries.Names() {
		p, err := queries.Build(q, 1, tables)
		if err != nil {
			t.Fatal(err)
		}
		strictErr := func() error { _, err := PlaceGPU(p, false); return err }()
		for _, pl := range p.Pipelines {
			if pl.OnHost {
				t.Fatalf("%s: %s marked for the host by a refused placement", q, pl.Name)
			}
		}
		placed, err := PlaceGPU(p, true)
		if err != nil {
			t.Fatalf("%s hybrid: %v", q, err)
		}
		onGPU, scans := 0, 0
		for i, pl := range p.Pipelines {
			if pl.Source.Kind == plan.SourceScan {
				scans++
			}
			if pl.OnHost && pl.Source.Kind != plan.SourceScan {
				t.Errorf("%s: non-scan pipeline %s marked for the host", q, pl.Name)
			}
			for _, pg := range placed {
				if pg.Pipeline == i && pg.OnGPU == pl.OnHost {
					t.Errorf("%s: placement of %s says GPU=%v, plan says host=%v", q, pl.Name, pg.OnGPU, pl.OnHost)
				}
				if pg.Pipeline == i && !pg.OnGPU && pg.Reason == "" {
					t.Errorf("%s: %s on the host without a reason", q, pl.Name)
				}
			}
		}
		for _, pg := range placed {
			if pg.OnGPU {
				onGPU++
			}
		}
		if len(placed) != scans {
			t.Errorf("%s: %d placements for %d scan pipelines", q, len(placed), scans)
		}
		if (onGPU < scans) != (strictErr != nil) {
			t.Errorf("%s: %d of %d scans on the GPU, strict placement error %v", q, onGPU, scans, strictErr)
		}
		if strictErr != nil && (!errors.Is(strictErr, ErrGPUPath) || !strings.Contains(strictErr.Error(), "--gpu-hybrid")) {
			t.Errorf("%s: refusal %v does not wrap ErrGPUPath or name --gpu-hybrid", q, strictErr)
		}
		if onGPU > 0 {
			some = append(some, q)
		}
		if q == "q15" {
			line := FormatPlacement(q, placed)
			if !strings.Contains(line, "1 of 2 scan pipelines on the GPU: q15 scan lineitem; on the host: q15 scan supplier (operator hash-probe") {
				t.Errorf("q15 placement line: %s", line)
			}
		}
	}
	if got := strings.Join(some, ","); got != "q1,q6,q15,q18" {
		t.Errorf("queries with a scan pipeline on the GPU: %s, want q1,q6,q15,q18", got)
	}
}
