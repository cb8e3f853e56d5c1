package calibrate

import (
	"context"
	"fmt"
	"io"
	"unsafe"

	"gostachio/dataset"
	"gostachio/engine"
	"gostachio/engine/gpu"
	"gostachio/kernels/cpu"
	"gostachio/kernels/cuda"
	"gostachio/plan"
)

// gpuPipeline is one GPU micro-benchmark: a scan pipeline that is none of
// the TPC-H queries' (so validating Q1 and Q6 on the GPU is a held-out
// check), varying the columns read, the expression terms per row, the
// string keys and the groups within what the GPU backend fuses.
type gpuPipeline struct {
	name  string
	table string
	build func(b *plan.Builder) *plan.Pipe
}

func gpuPipelines() []gpuPipeline {
	col := func(n string) plan.Col { return plan.Col(n) }
	li := func(b *plan.Builder, cols ...string) *plan.Pipe { return b.Scan("lineitem", cols...) }
	return []gpuPipeline{
		{"count, 1 date filter", "lineitem", func(b *plan.Builder) *plan.Pipe {
			return li(b, "l_shipdate").Where(plan.Lt(col("l_shipdate"), plan.Date("1995-06-17")), 0.5).
				Partial(1, 8, nil, plan.Count("n"))
		}},
		{"sum, between and compare", "lineitem", func(b *plan.Builder) *plan.Pipe {
			return li(b, "l_quantity", "l_extendedprice", "l_discount").
				Where(plan.And(plan.Between(col("l_discount"), plan.Dec("0.02"), plan.Dec("0.09")),
					plan.Lt(col("l_quantity"), plan.Int(30))), 0.5).
				Partial(1, 8, nil, plan.Sum("s", col("l_extendedprice")))
		}},
		{"two sums of products, date filter", "lineitem", func(b *plan.Builder) *plan.Pipe {
			return li(b, "l_extendedprice", "l_discount", "l_receiptdate").
				Where(plan.Gt(col("l_receiptdate"), plan.Date("1993-03-01")), 0.8).
				Partial(1, 16, nil,
					plan.Sum("net", plan.Mul(col("l_extendedprice"), plan.Sub(plan.Int(1), col("l_discount")))),
					plan.Sum("off", plan.Mul(col("l_extendedprice"), col("l_discount"))))
		}},
		{"by ship mode (7 groups): count, sum", "lineitem", func(b *plan.Builder) *plan.Pipe {
			return li(b, "l_shipmode", "l_quantity").
				Partial(7, 24, []string{"l_shipmode"}, plan.Count("n"), plan.Sum("q", col("l_quantity")))
		}},
		{"by return flag (3 groups): sum, min, max, avg", "lineitem", func(b *plan.Builder) *plan.Pipe {
			return li(b, "l_returnflag", "l_tax", "l_shipdate", "l_commitdate", "l_discount").
				Where(plan.Ge(col("l_commitdate"), plan.Date("1992-06-01")), 0.95).
				Partial(3, 48, []string{"l_returnflag"}, plan.Sum("t", col("l_tax")), plan.Min("lo", col("l_shipdate")),
					plan.Max("hi", col("l_commitdate")), plan.Avg("d", col("l_discount")))
		}},
		{"three sums of nested products", "lineitem", func(b *plan.Builder) *plan.Pipe {
			return li(b, "l_quantity", "l_extendedprice", "l_discount", "l_tax").
				Partial(1, 24, nil,
					plan.Sum("c", plan.Mul(plan.Mul(col("l_extendedprice"), plan.Sub(plan.Int(1), col("l_discount"))), plan.Add(plan.Int(1), col("l_tax")))),
					plan.Sum("qt", plan.Mul(col("l_quantity"), col("l_tax"))),
					plan.Sum("q", col("l_quantity")))
		}},
		{"orders by status (3 groups), date filter", "orders", func(b *plan.Builder) *plan.Pipe {
			return b.Scan("orders", "o_orderstatus", "o_totalprice", "o_orderdate").
				Where(plan.Lt(col("o_orderdate"), plan.Date("1997-01-01")), 0.7).
				Partial(3, 24, []string{"o_orderstatus"}, plan.Sum("p", col("o_totalprice")), plan.Count("n"))
		}},
	}
}

// gpuChunkCounts are the input sizes of the GPU points, in stored chunks
// (lineitem's hold 131 Ki rows at SF1; the engine's units are 1–8 of
// them), up to the whole table.
func gpuChunkCounts(chunks int, quick bool) []int {
	cand := []int{1, 2, 4, 8, 16}
	if quick {
		cand = []int{1, 2}
	}
	var out []int
	for _, n := range cand {
		if n < chunks {
			out = append(out, n)
		}
	}
	return append(out, chunks)
}

// RunGPUMicro measures the GPU backend on dev: the h2d of a scan unit
// (engine: uploadUnit) for every pipeline's columns over 1–8 chunks, from
// pinned host memory as the engine's reads land there, and each
// pipeline's fused kernel (engine: gpuKernel, compiled as the engine
// compiles it) over resident columns of growing size. Every point runs
// once untimed (the compile, the pool's first allocation), then reps
// times; the sample is the mean.
func RunGPUMicro(ctx context.Context, dev *gpu.Device, ds *dataset.Dataset, reps int, quick bool, logw io.Writer) ([]Sample, error) {
	if reps <= 0 {
		reps = 5
	}
	s, err := dev.Context().NewStream(cuda.StreamNonBlocking)
	if err != nil {
		return nil, fmt.Errorf("calibrate: gpu: %w", err)
	}
	defer s.Destroy()
	m := &micro{ds: ds, reps: reps, quick: quick}
	tables := ds.PlanStats()
	var out []Sample
	for _, gp := range gpuPipelines() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		b := plan.NewBuilder("gpu micro", tables)
		pipe := gp.build(b)
		pipe.Gather()
		p, err := b.Build()
		if err != nil {
			return nil, fmt.Errorf("calibrate: gpu pipeline %q: %w", gp.name, err)
		}
		ops := p.Pipelines[0].Ops
		if err := gpu.Supported(ops); err != nil {
			return nil, fmt.Errorf("calibrate: gpu pipeline %q: %w", gp.name, err)
		}
		var terms, strTerms float64
		for i := range ops {
			terms += ops[i].Terms()
			strTerms += ops[i].StrTerms()
		}
		tm, err := ds.Table(gp.table)
		if err != nil {
			return nil, fmt.Errorf("calibrate: %w", err)
		}
		fmt.Fprintf(logw, "calibrate: gpu: %s (%s)\n", gp.name, gp.table)
		var parts []*cpu.Batch
		for i := range tm.Chunks {
			sb, err := ds.ReadChunk(gp.table, i, ops[0].Out)
			if err != nil {
				return nil, fmt.Errorf("calibrate: %w", err)
			}
			parts = append(parts, engine.ChunkBatch(sb))
		}
		for _, n := range gpuChunkCounts(len(parts), quick) {
			in := parts[:n]
			var bytes, rows int64
			for _, c := range in {
				bytes += bytesOf(c)
				rows += int64(c.Rows)
			}
			if n <= 8 {
				ns, err := timeUpload(m, dev, s, in)
				if err != nil {
					return nil, fmt.Errorf("calibrate: gpu h2d %q, %d chunks: %w", gp.name, n, err)
				}
				out = append(out, Sample{Component: CompGPUH2D, Case: fmt.Sprintf("%s: %d chunks", gp.name, n), Bytes: bytes, Rows: rows, Ns: ns})
			}
			g, err := dev.Upload(s, in)
			if err != nil {
				return nil, fmt.Errorf("calibrate: gpu %q: %w", gp.name, err)
			}
			if err := engine.BoundGPUColumns(g, tm, 0, n); err != nil { // as the engine's units
				g.Free()
				return nil, fmt.Errorf("calibrate: gpu %q: %w", gp.name, err)
			}
			var st gpu.Stats
			ns, err := m.time(func() error {
				var err error
				_, st, err = dev.Partial(s, g, ops)
				return err
			})
			g.Free()
			if err != nil {
				return nil, fmt.Errorf("calibrate: gpu kernel %q, %d chunks: %w", gp.name, n, err)
			}
			if !st.Fused {
				return nil, fmt.Errorf("calibrate: gpu pipeline %q ran operator at a time: it would not price the fused pipelines the engine runs", gp.name)
			}
			if !st.Compiled {
				fmt.Fprintf(logw, "warning: calibrate: gpu %q ran interpreted (%s), as the engine's pipelines will here\n", gp.name, dev.JIT())
			}
			out = append(out, Sample{Component: CompGPUKernel, Op: plan.OpAggPartial.String(), Case: fmt.Sprintf("%s: %d chunks", gp.name, n),
				Bytes: bytes, Rows: rows, Terms: terms, StrTerms: strTerms, Ns: ns})
		}
	}
	return out, nil
}

// timeUpload times dev.Upload of parts copied into pinned host memory
// (the engine's reads land in a registered arena), freeing each upload.
func timeUpload(m *micro, dev *gpu.Device, s *cuda.Stream, parts []*cpu.Batch) (int64, error) {
	size := 0
	for _, p := range parts {
		for _, c := range p.Cols {
			size += align8(len(c.I64)*8) + align8(len(c.I32)*4) + align8(len(c.Off)*4) + align8(len(c.Str))
		}
	}
	host, err := dev.Context().AllocHost(max(size, 8), 0)
	if err != nil {
		return 0, err
	}
	defer host.Free()
	pinned := pinnedCopies(host.Bytes(), parts)
	return m.time(func() error {
		g, err := dev.Upload(s, pinned)
		if err != nil {
			return err
		}
		g.Free()
		return nil
	})
}

func align8(n int) int { return (n + 7) &^ 7 }

// pinnedCopies copies parts' column arrays into buf (8-byte aligned, large
// enough) and returns batches viewing them there.
func pinnedCopies(buf []byte, parts []*cpu.Batch) []*cpu.Batch {
	at := 0
	take := func(n int) []byte {
		b := buf[at : at+n : at+n]
		at += align8(n)
		return b
	}
	out := make([]*cpu.Batch, len(parts))
	for i, p := range parts {
		q := &cpu.Batch{Names: p.Names, Rows: p.Rows, Cols: make([]cpu.Vec, len(p.Cols))}
		for k, c := range p.Cols {
			v := c
			if len(c.I64) > 0 {
				b := take(len(c.I64) * 8)
				v.I64 = unsafe.Slice((*int64)(unsafe.Pointer(unsafe.SliceData(b))), len(c.I64))
				copy(v.I64, c.I64)
			}
			if len(c.I32) > 0 {
				b := take(len(c.I32) * 4)
				v.I32 = unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(b))), len(c.I32))
				copy(v.I32, c.I32)
			}
			if len(c.Off) > 0 {
				b := take(len(c.Off) * 4)
				v.Off = unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(b))), len(c.Off))
				copy(v.Off, c.Off)
			}
			if len(c.Str) > 0 {
				v.Str = take(len(c.Str))
				copy(v.Str, c.Str)
			}
			q.Cols[k] = v
		}
		out[i] = q
	}
	return out
}
