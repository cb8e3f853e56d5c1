package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"gostachio/dataset"
	"gostachio/engine/gpu"
	"gostachio/engine/storage"
	"gostachio/engine/storage/alloc"
	"gostachio/internal/machine"
	"gostachio/internal/stats"
	"gostachio/kernels/cpu"
	"gostachio/kernels/cuda"
	"gostachio/plan"
	"gostachio/scheduler"
	"gostachio/tpch/schema"
)

// GPUBenchOptions configure BenchGPU.
type GPUBenchOptions struct {
	Data    string
	Ordinal int
	// Catalog builds the plans of Queries (tpch/queries.Catalog).
	Catalog plan.Catalog
	// Queries run on the GPU ("q1,q6").
	Queries string
	// Rounds of every timed measurement (medians are reported).
	Rounds   int
	Policies []string
	Set      string
	GPUMem   int64
	JSON     bool
}

// CopyRate is one copy bandwidth measurement (events around the copy).
type CopyRate struct {
	Kind    string  `json:"kind"` // h2d-pinned, d2h-pinned, h2d-pageable, d2d
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"`
	GBps    float64 `json:"gb_per_s"`
}

// ResidentRate is a query's scan pipeline over its columns already in
// device memory: kernel time alone, against the device-to-device copy.
type ResidentRate struct {
	Query string `json:"query"`
	// Path: "fused, compiled, accumulators in …" (one kernel generated for the pipeline and
	// compiled by NVRTC), "fused, interpreted" (one kernel interpreting
	// the pipeline's row program) or "operators" (a kernel per predicate,
	// arithmetic step and aggregate).
	Path       string  `json:"path"`
	Rows       int     `json:"rows"`
	InputBytes int64   `json:"input_bytes"`
	Seconds    float64 `json:"seconds"`
	GBps       float64 `json:"gb_per_s"`
	// CopyGBps is a device-to-device copy of InputBytes in the same run,
	// bytes copied per second; Ratio = GBps / CopyGBps.
	CopyGBps float64 `json:"d2d_copy_gb_per_s"`
	Ratio    float64 `json:"ratio_to_d2d"`
	// KernelSeconds is the GPU time of the kernels alone (events around
	// each launch; the compiled path only), KernelGBps and KernelRatio
	// the same figures for it: the kernels' throughput against the copy.
	KernelSeconds float64 `json:"kernel_seconds,omitempty"`
	KernelGBps    float64 `json:"kernel_gb_per_s,omitempty"`
	KernelRatio   float64 `json:"kernel_ratio_to_d2d,omitempty"`
	Launches      int     `json:"kernel_launches"`
	// MatchesCPU: the GPU's aggregate state equals the CPU engine's over
	// the same rows, cell by cell.
	MatchesCPU bool `json:"matches_cpu"`
}

// GPURun is a query from storage on one backend under one policy.
type GPURun struct {
	Query   string    `json:"query"`
	Backend string    `json:"backend"` // gpu or cpu
	Policy  string    `json:"policy"`
	Seconds float64   `json:"seconds"` // median
	All     []float64 `json:"all_seconds"`
	// Efficiency = the busiest resource's busy time (reads, h2d copies, or
	// kernels and host work) / makespan, median over rounds.
	Efficiency float64 `json:"overlap_efficiency"`
	IOBytes    int64   `json:"io_bytes"`
}

// GPUBenchReport is BenchGPU's result.
type GPUBenchReport struct {
	Device   string         `json:"device"`
	SMs      int            `json:"sms"`
	Driver   string         `json:"driver"`
	JIT      string         `json:"jit"`
	Machine  string         `json:"machine"`
	Data     string         `json:"data"`
	Copies   []CopyRate     `json:"copies"`
	Resident []ResidentRate `json:"resident"`
	Runs     []GPURun       `json:"runs"`
}

// BenchGPU measures the GPU backend on one device: copy bandwidths (pinned
// and pageable host memory, device to device), each query's scan pipeline
// over device-resident columns against a device-to-device copy of the same
// bytes, and each query from storage on the GPU and on the CPU engine under
// every policy, rounds interleaved.
func BenchGPU(ctx context.Context, opts GPUBenchOptions, stdout, stderr io.Writer) error {
	if opts.Rounds <= 0 {
		opts.Rounds = 5
	}
	if len(opts.Policies) == 0 {
		opts.Policies = []string{"serial", "overlap"}
	}
	names, err := ParseQueries(opts.Queries, opts.Catalog.Names)
	if err != nil {
		return err
	}
	ds, err := dataset.Open(opts.Data)
	if err != nil {
		return err
	}
	dev, err := gpu.Open(opts.Ordinal, opts.GPUMem)
	if err != nil {
		return fmt.Errorf("engine: gpu bench: %w", err)
	}
	defer dev.Close()
	info := dev.Info()
	rep := GPUBenchReport{Device: info.Name, SMs: info.SMs, Driver: cuda.VersionString(dev.Context().Driver().Version()),
		Machine: machine.Name(), Data: ds.Dir}
	rep.JIT = dev.JIT()
	fmt.Fprintf(stderr, "GPU %d: %s, %d SMs, driver %s, pipelines %s\n", opts.Ordinal, info.Name, info.SMs, rep.Driver, rep.JIT)
	s, err := dev.Context().NewStream(cuda.StreamNonBlocking)
	if err != nil {
		return err
	}
	defer s.Destroy()
	if rep.Copies, err = benchCopies(dev, s, opts.Rounds); err != nil {
		return err
	}
	for _, c := range rep.Copies {
		fmt.Fprintf(stderr, "copy %-13s %9s  %7.1f GB/s\n", c.Kind, fmtMiB(c.Bytes), c.GBps)
	}
	for _, q := range names {
		rs, err := benchResident(ctx, dev, s, ds, opts.Catalog, q, opts.Rounds)
		if err != nil {
			return err
		}
		for _, r := range rs {
			fmt.Fprintf(stderr, "%s resident (%s): %.1f GB/s, d2d copy %.1f GB/s: %.2fx (kernels alone %.1f GB/s: %.2fx), %d launches, state matches the CPU's: %v\n",
				q, r.Path, r.GBps, r.CopyGBps, r.Ratio, r.KernelGBps, r.KernelRatio, r.Launches, r.MatchesCPU)
		}
		rep.Resident = append(rep.Resident, rs...)
	}
	if rep.Runs, err = benchFromStorage(ctx, dev, ds, names, opts, stderr); err != nil {
		return err
	}
	if opts.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	writeGPUReport(stdout, &rep)
	return nil
}

func fmtMiB(n int64) string { return fmt.Sprintf("%d MiB", n>>20) }

// timeOnStream runs fn (which queues work on s) rounds times after one
// untimed run and returns the median seconds between events around it.
func timeOnStream(c *cuda.Context, s *cuda.Stream, rounds int, fn func() error) (float64, error) {
	start, err := c.NewEvent(cuda.EventDefault)
	if err != nil {
		return 0, err
	}
	defer start.Destroy()
	end, err := c.NewEvent(cuda.EventDefault)
	if err != nil {
		return 0, err
	}
	defer end.Destroy()
	if err := fn(); err != nil {
		return 0, err
	}
	if err := s.Synchronize(); err != nil {
		return 0, err
	}
	var ts []float64
	for range rounds {
		if err := start.Record(s); err != nil {
			return 0, err
		}
		if err := fn(); err != nil {
			return 0, err
		}
		if err := end.Record(s); err != nil {
			return 0, err
		}
		if err := end.Synchronize(); err != nil {
			return 0, err
		}
		d, err := cuda.Elapsed(start, end)
		if err != nil {
			return 0, err
		}
		ts = append(ts, d.Seconds())
	}
	return stats.Median(ts), nil
}

func benchCopies(dev *gpu.Device, s *cuda.Stream, rounds int) ([]CopyRate, error) {
	c := dev.Context()
	const big = 256 << 20
	host, err := c.AllocHost(big, 0)
	if err != nil {
		return nil, err
	}
	defer host.Free()
	hb := host.Bytes()
	for i := range hb {
		hb[i] = byte(i)
	}
	pageable := make([]byte, 64<<20)
	for i := range pageable {
		pageable[i] = byte(i)
	}
	d1, err := dev.Alloc(1 << 30)
	if err != nil {
		return nil, err
	}
	defer dev.Release(d1, 1<<30)
	d2, err := dev.Alloc(1 << 30)
	if err != nil {
		return nil, err
	}
	defer dev.Release(d2, 1<<30)
	var out []CopyRate
	add := func(kind string, n int, fn func() error) error {
		sec, err := timeOnStream(c, s, rounds, fn)
		if err != nil {
			return fmt.Errorf("%s of %d bytes: %w", kind, n, err)
		}
		out = append(out, CopyRate{Kind: kind, Bytes: int64(n), Seconds: sec, GBps: float64(n) / sec / 1e9})
		return nil
	}
	for _, n := range []int{1 << 20, 8 << 20, 64 << 20, big} {
		if err := add("h2d-pinned", n, func() error { return s.CopyHtoD(d1, hb[:n]) }); err != nil {
			return nil, err
		}
		if err := add("d2h-pinned", n, func() error { return s.CopyDtoH(hb[:n], d1) }); err != nil {
			return nil, err
		}
	}
	if err := add("h2d-pageable", len(pageable), func() error { return s.CopyHtoD(d1, pageable) }); err != nil {
		return nil, err
	}
	for _, n := range []int{64 << 20, 1 << 30} {
		if err := add("d2d", n, func() error { return s.CopyDtoD(d2, d1, n) }); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ChunkBatch converts a dataset chunk to the kernels' vectors, as the
// engine's decode types them (int64, decimal of scale 2, int32, date,
// string, float64).
func ChunkBatch(sb *schema.Batch) *cpu.Batch {
	b := &cpu.Batch{Rows: sb.Rows}
	for i, c := range sb.Table.Columns {
		v := &sb.Cols[i]
		var o cpu.Vec
		switch c.Type {
		case schema.Int64:
			o = cpu.Vec{Type: cpu.TInt64, I64: v.I64}
		case schema.Decimal:
			o = cpu.Vec{Type: cpu.TDecimal, Scale: 2, I64: v.I64}
		case schema.Int32:
			o = cpu.Vec{Type: cpu.TInt32, I32: v.I32}
		case schema.Date:
			o = cpu.Vec{Type: cpu.TDate, I32: v.I32}
		case schema.String:
			o = cpu.Vec{Type: cpu.TString, Off: v.Offsets, Str: v.Bytes}
		case schema.Float64:
			f := make([]float64, len(v.I64))
			for r, x := range v.I64 {
				f[r] = math.Float64frombits(uint64(x))
			}
			o = cpu.Vec{Type: cpu.TFloat64, F64: f}
		}
		b.Names = append(b.Names, c.Name)
		b.Cols = append(b.Cols, o)
	}
	return b
}

// benchResident uploads the whole scanned table's columns of q's GPU scan
// pipeline and times the pipeline over them on both paths (fused and
// operator at a time), each against a device-to-device copy of as many
// bytes timed right after it.
func benchResident(ctx context.Context, dev *gpu.Device, s *cuda.Stream, ds *dataset.Dataset, cat plan.Catalog, q string, rounds int) ([]ResidentRate, error) {
	p, err := BuildQuery(ds, cat, q)
	if err != nil {
		return nil, err
	}
	var pl *plan.Pipeline
	for i := range p.Pipelines {
		if p.Pipelines[i].Source.Kind == plan.SourceScan {
			pl = &p.Pipelines[i]
			break
		}
	}
	if pl == nil {
		return nil, fmt.Errorf("engine: gpu bench: %s has no scan pipeline", q)
	}
	if err := gpu.Supported(pl.Ops); err != nil {
		return nil, fmt.Errorf("engine: gpu bench: %s: %w", q, err)
	}
	table := p.Tables[pl.Source.Table].Name
	tm, err := ds.Table(table)
	if err != nil {
		return nil, err
	}
	cols := pl.Ops[0].Out
	var parts []*cpu.Batch
	for i := range tm.Chunks {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sb, err := ds.ReadChunk(table, i, cols)
		if err != nil {
			return nil, err
		}
		parts = append(parts, ChunkBatch(sb))
	}
	g, err := dev.Upload(s, parts)
	if err != nil {
		return nil, err
	}
	defer g.Free()
	if err := BoundGPUColumns(g, tm, 0, len(parts)); err != nil { // as the engine's units
		return nil, err
	}
	want, err := gpu.CPUState(parts, pl.Ops)
	if err != nil {
		return nil, err
	}
	n := int(g.Bytes)
	src, err := dev.Alloc(n)
	if err != nil {
		return nil, err
	}
	defer dev.Release(src, n)
	dst, err := dev.Alloc(n)
	if err != nil {
		return nil, err
	}
	defer dev.Release(dst, n)
	defer dev.SetFused(true)
	defer dev.SetJIT(true)
	var out []ResidentRate
	defer dev.SetAccumulators(gpu.AccShared)
	defer dev.SetRanges(true)
	defer dev.SetNarrow(false)
	for _, mode := range []string{"compiled, shared", "compiled, shared, no ranges", "compiled, shared, narrow", "compiled, registers", "compiled, registers, no ranges", "compiled, registers, narrow", "compiled, bounded", "interpreted", "operators"} {
		dev.SetFused(mode != "operators")
		dev.SetJIT(strings.HasPrefix(mode, "compiled"))
		dev.SetRanges(!strings.HasSuffix(mode, "no ranges"))
		dev.SetNarrow(strings.HasSuffix(mode, "narrow"))
		acc := gpu.AccShared
		switch {
		case strings.Contains(mode, "registers"):
			acc = gpu.AccRegisters
		case strings.Contains(mode, "bounded"):
			acc = gpu.AccBounded
		}
		dev.SetAccumulators(acc)
		r := ResidentRate{Query: q, Path: "operators", Rows: g.Rows, InputBytes: g.Bytes}
		var state *cpu.Batch
		var st gpu.Stats
		var kernel []float64
		sec, err := timeOnStream(dev.Context(), s, rounds, func() error {
			var err error
			state, st, err = dev.Partial(s, g, pl.Ops)
			kernel = append(kernel, float64(st.KernelNs)/1e9)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("engine: gpu bench: %s: %w", q, err)
		}
		switch {
		case st.Fused && st.Compiled:
			r.Path = "fused, compiled, accumulators in " + st.Accumulators.String()
			switch {
			case strings.HasSuffix(mode, "no ranges"):
				r.Path += ", no value ranges"
			case strings.HasSuffix(mode, "narrow"):
				r.Path += ", 32-bit where the ranges allow"
			}
		case st.Fused:
			r.Path = "fused, interpreted"
		}
		r.Seconds, r.Launches = sec, st.Launches
		r.GBps = float64(r.InputBytes) / sec / 1e9
		copySec, err := timeOnStream(dev.Context(), s, rounds, func() error { return s.CopyDtoD(dst, src, n) })
		if err != nil {
			return nil, err
		}
		r.CopyGBps = float64(r.InputBytes) / copySec / 1e9
		r.Ratio = r.GBps / r.CopyGBps
		if k := stats.Median(kernel[1:]); k > 0 { // [0]: the untimed run
			r.KernelSeconds = k
			r.KernelGBps = float64(r.InputBytes) / k / 1e9
			r.KernelRatio = r.KernelGBps / r.CopyGBps
		}
		r.MatchesCPU = sameState(state, want)
		out = append(out, r)
	}
	return out, nil
}

// sameState compares two partial states as sets of groups.
func sameState(a, b *cpu.Batch) bool { return slices.Equal(gpu.StateRows(a), gpu.StateRows(b)) }

// gpuEfficiency: the busiest of reads, h2d copies and the other work
// (kernels, d2h, merges, sends), each as the union of its intervals, over
// the makespan.
func gpuEfficiency(ev []scheduler.Event) float64 {
	type iv struct{ s, e scheduler.Time }
	groups := map[string][]iv{}
	var lo, hi scheduler.Time
	for i, e := range ev {
		if i == 0 || e.Start < lo {
			lo = e.Start
		}
		hi = max(hi, e.End)
		k := "work"
		switch e.Kind {
		case scheduler.TaskRead:
			k = "read"
		case scheduler.TaskH2D:
			k = "h2d"
		}
		groups[k] = append(groups[k], iv{e.Start, e.End})
	}
	if hi <= lo {
		return 0
	}
	busiest := scheduler.Time(0)
	for _, ivs := range groups {
		sort.Slice(ivs, func(i, j int) bool { return ivs[i].s < ivs[j].s })
		var total, curS, curE scheduler.Time
		for i, x := range ivs {
			if i == 0 || x.s > curE {
				total += curE - curS
				curS, curE = x.s, x.e
			} else {
				curE = max(curE, x.e)
			}
		}
		total += curE - curS
		busiest = max(busiest, total)
	}
	return float64(busiest) / float64(hi-lo)
}

// benchFromStorage runs every query from storage on the GPU and the CPU
// under every policy, rounds interleaved (one warm-up pass first).
func benchFromStorage(ctx context.Context, dev *gpu.Device, ds *dataset.Dataset, names []string, opts GPUBenchOptions, stderr io.Writer) ([]GPURun, error) {
	if err := VerifyOnce(ctx, ds, stderr); err != nil {
		return nil, err
	}
	defer TuneGC()()
	FitHeapLimit(ds)
	// The GPU runs read into pinned memory; the CPU runs into Go heap
	// buffers (which they decode in place).
	pool, unpin, err := dev.PinnedPool(DefaultMem / 4)
	if err != nil {
		return nil, err
	}
	defer unpin()
	readers := map[string]*storage.Reader{}
	for backend, a := range map[string]alloc.Allocator{"gpu": pool, "cpu": nil} {
		r, err := OpenSession(ctx, ds, QueryOptions{Log: stderr, Allocator: a})
		if err != nil {
			return nil, err
		}
		defer r.Close()
		readers[backend] = r
	}
	type key struct{ q, backend, pol string }
	times := map[key][]float64{}
	effs := map[key][]float64{}
	ioBytes := map[key]int64{}
	var order []key
	for _, q := range names {
		for _, b := range []string{"gpu", "cpu"} {
			for _, pol := range opts.Policies {
				order = append(order, key{q, b, pol})
			}
		}
	}
	for round := -1; round < opts.Rounds; round++ {
		for _, k := range order {
			qo := QueryOptions{Policy: k.pol, Set: opts.Set, Reader: readers[k.backend], Log: stderr, NoVerify: true}
			if k.backend == "gpu" {
				qo.GPU, qo.Devices = dev, 1
			}
			log := &eventLog{}
			qo.Trace = log
			start := time.Now()
			p, err := BuildQuery(ds, opts.Catalog, k.q)
			if err != nil {
				return nil, err
			}
			res, err := Query(ctx, ds, p, qo)
			if err != nil {
				return nil, err
			}
			if round < 0 {
				continue
			}
			times[k] = append(times[k], res.Wall.Seconds())
			effs[k] = append(effs[k], gpuEfficiency(log.ev))
			ioBytes[k] = res.IOBytes
			fmt.Fprintf(stderr, "round %d %s %s %s: %.3f s (wall %.3f)\n", round+1, k.q, k.backend, k.pol, res.Wall.Seconds(), time.Since(start).Seconds())
		}
	}
	var out []GPURun
	for _, k := range order {
		out = append(out, GPURun{Query: k.q, Backend: k.backend, Policy: k.pol, Seconds: stats.Median(times[k]),
			All: times[k], Efficiency: stats.Median(effs[k]), IOBytes: ioBytes[k]})
	}
	return out, nil
}

func writeGPUReport(w io.Writer, rep *GPUBenchReport) {
	fmt.Fprintf(w, "GPU %s (%d SMs, driver %s) on %s, data %s\npipelines: %s\n\n", rep.Device, rep.SMs, rep.Driver, rep.Machine, rep.Data, rep.JIT)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "copy\tbytes\tGB/s")
	for _, c := range rep.Copies {
		fmt.Fprintf(tw, "%s\t%s\t%.1f\n", c.Kind, fmtMiB(c.Bytes), c.GBps)
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "query\tpath\trows\tinput\tcall ms\tGB/s\td2d copy GB/s\tratio\tkernels ms\tkernel ratio\tlaunches\tstate = CPU's")
	for _, r := range rep.Resident {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%.3f\t%.1f\t%.1f\t%.2f\t%.3f\t%.2f\t%d\t%v\n", r.Query, r.Path, r.Rows, fmtMiB(r.InputBytes), r.Seconds*1e3,
			r.GBps, r.CopyGBps, r.Ratio, r.KernelSeconds*1e3, r.KernelRatio, r.Launches, r.MatchesCPU)
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "query\tbackend\tpolicy\tmedian s\toverlap eff.\tread")
	for _, r := range rep.Runs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.3f\t%.2f\t%s\n", r.Query, r.Backend, r.Policy, r.Seconds, r.Efficiency, fmtMiB(r.IOBytes))
	}
	tw.Flush()
}
