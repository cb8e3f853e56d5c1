package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"time"

	"gostachio/dataset"
	"gostachio/engine/gpu"
	"gostachio/engine/storage"
	"gostachio/engine/storage/alloc"
	"gostachio/internal/units"
	"gostachio/kernels/cpu"
	"gostachio/plan"
	"gostachio/scheduler"
)

// DefaultMem is the default memory budget of a query (--mem).
const DefaultMem = 4 << 30

// QueryOptions configure one query run on the CPU engine.
type QueryOptions struct {
	// Policy is the scheduling policy (default "overlap"); Set overrides
	// its knobs ("chunk=8MiB,depth=4").
	Policy, Set string
	// Rates is what is known of this machine's resources (a calibration
	// profile's bandwidths and latencies: sim.Profile.Rates), handed to
	// the policy through the topology; zero: unknown, and policies that
	// size by rates learn them from completions.
	Rates [scheduler.NumResourceKinds]scheduler.Rate
	// Devices is the number of worker groups (0: GOMAXPROCS).
	Devices int
	// Mem is the memory budget in bytes (0: DefaultMem).
	Mem int64
	// Buffered reads through the page cache (default: O_DIRECT, cold).
	Buffered bool
	// IO picks the storage backend ("auto", "uring", "pread").
	IO string
	// Trace receives every executed task (nil: none).
	Trace scheduler.TraceSink
	// Allocator provides I/O buffers (nil: Go heap buffers, read in place).
	Allocator alloc.Allocator
	// Log receives one-line notices (storage fallbacks); nil: discarded.
	Log io.Writer
	// Reader is a session's shared storage reader (see Session); nil: one
	// per run, whose setup then counts in the run's time.
	Reader *storage.Reader
	// GPU runs the scan pipelines on this GPU (BackendOptions.GPU); nil:
	// the CPU engine. GPUHybrid runs the scan pipelines the GPU path cannot
	// run on the host instead of refusing the query (PlaceGPU).
	GPU       *gpu.Device
	GPUHybrid bool
	// NoVerify skips the check of every read buffer against its recorded
	// checksum (BackendOptions.NoVerify).
	NoVerify bool
	// OpTimes records every operator the host runs (BackendOptions.OpTimes).
	OpTimes *OpTimes
}

// QueryResult is one finished query.
type QueryResult struct {
	Query, Policy string
	// Columns are the result's column names; Batch its rows (never nil).
	Columns []string
	Batch   *cpu.Batch
	// Wall is the run's wall-clock time, from the first task to the end of
	// the result merge; Sched the scheduler's account of it.
	Wall  time.Duration
	Sched scheduler.Result
	// IOBytes is what storage transferred; PeakRetained the most
	// intermediate data held at once.
	IOBytes, PeakRetained int64
	// GPU is where each scan pipeline ran in a GPU run (nil: a CPU run).
	GPU []GPUPlacement
	// CPUNs is the CPU time, user and system, every thread of the
	// process(es) running the query used during its run: of every worker,
	// summed, in a cluster. -1: unknown.
	CPUNs int64
}

// Rows returns the result as text cells, formatted as Vec.Format does.
func (r *QueryResult) Rows() [][]string {
	out := make([][]string, r.Batch.Rows)
	for i := range out {
		row := make([]string, len(r.Batch.Cols))
		for c := range r.Batch.Cols {
			row[c] = r.Batch.Cols[c].Format(i)
		}
		out[i] = row
	}
	return out
}

// ErrUnknownQuery is returned for a query name the catalog has no plan for.
var ErrUnknownQuery = errors.New("engine: unknown query")

// BuildQuery returns the plan of query name of cat over ds, at the scale
// factor of its manifest (or, where the manifest states none, the one cat
// infers from its table sizes). The plan depends on ds's statistics only,
// so every node of a cluster reading the same dataset builds the same plan.
func BuildQuery(ds *dataset.Dataset, cat plan.Catalog, name string) (*plan.Plan, error) {
	if !cat.Has(name) {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownQuery, name, cat.Known())
	}
	p, err := cat.Plan(name, ds.Manifest.ScaleFactor, ds.PlanStats())
	if err != nil {
		return nil, fmt.Errorf("engine: %s: %w", ds.Dir, err)
	}
	return p, nil
}

// Query runs plan p over ds through the scheduler. The run may place p's
// pipelines (a GPU run: PlaceGPU): a caller running the same query again
// passes a fresh plan.
func Query(ctx context.Context, ds *dataset.Dataset, p *plan.Plan, opts QueryOptions) (*QueryResult, error) {
	if opts.Policy == "" {
		opts.Policy = "overlap"
	}
	if opts.Mem == 0 {
		opts.Mem = DefaultMem
	}
	pol, err := scheduler.NewPolicy(opts.Policy, opts.Set)
	if err != nil {
		return nil, err
	}
	b, err := NewBackend(ds, p, BackendOptions{Devices: opts.Devices, Mem: opts.Mem, Buffered: opts.Buffered,
		IO: opts.IO, Allocator: opts.Allocator, Log: opts.Log, Reader: opts.Reader, GPU: opts.GPU, GPUHybrid: opts.GPUHybrid,
		NoVerify: opts.NoVerify, OpTimes: opts.OpTimes, Rates: opts.Rates})
	if err != nil {
		return nil, err
	}
	cpu0 := ProcessCPUNs()
	start := time.Now()
	res, err := scheduler.Run(ctx, p, pol, b, opts.Trace)
	wall := time.Since(start)
	cpuNs := ProcessCPUSince(cpu0)
	if opts.OpTimes != nil && err == nil {
		opts.OpTimes.AddQuery(p.Name, wall, cpuNs)
	}
	if err != nil {
		b.Close()
		if errors.Is(err, scheduler.ErrStuck) {
			return nil, fmt.Errorf("engine: query %s does not fit the memory budget of %s (--mem): %w", p.Name, units.FormatBytes(opts.Mem), err)
		}
		return nil, fmt.Errorf("engine: query %s: %w", p.Name, err)
	}
	if err := b.Close(); err != nil {
		return nil, fmt.Errorf("engine: query %s: %w", p.Name, err)
	}
	out := NewQueryResult(p, pol.Name(), b, res, wall)
	out.CPUNs = cpuNs
	return out, nil
}

// NewQueryResult assembles the result of a finished run of p on b (closed
// or not): b's result batch, or, when nothing reached the result, the
// empty result. A scalar aggregate over no rows still gives one row, as
// SQL does: its counts 0, its other aggregates NULL (printed empty, as
// DuckDB's are). In a cluster, node 0's backend holds the result.
func NewQueryResult(p *plan.Plan, policy string, b *Backend, res scheduler.Result, wall time.Duration) *QueryResult {
	out := &QueryResult{Query: p.Name, Policy: policy, Wall: wall, Sched: res,
		IOBytes: b.IOBytes(), PeakRetained: b.PeakRetained(), Batch: b.Result(), GPU: b.data.placement, CPUNs: -1}
	cols := resultColumns(p)
	if out.Batch == nil {
		out.Batch = emptyResult(p, cols)
	}
	out.Columns = out.Batch.Names
	return out
}

// emptyResult is the result of p when no row reached it: no rows, or for a
// scalar aggregate one row of 0 for its counts and empty cells (NULLs)
// for the rest.
func emptyResult(p *plan.Plan, cols []string) *cpu.Batch {
	counts, scalar := scalarResult(p)
	rows := 0
	if scalar {
		rows = 1
	}
	out := &cpu.Batch{Names: cols, Cols: make([]cpu.Vec, len(cols)), Rows: rows}
	for i, name := range cols {
		if scalar && counts[name] {
			out.Cols[i] = cpu.Vec{Type: cpu.TInt64, I64: []int64{0}}
			continue
		}
		out.Cols[i] = cpu.Vec{Type: cpu.TString, Off: make([]int32, rows+1)}
	}
	return out
}

// scalarResult reports whether the result pipeline aggregates without
// keys and filters nothing after it (a scalar aggregate: always one row),
// and which of its output columns are counts: count aggregates, passed on
// unchanged (maybe renamed) by the projections after the aggregate.
func scalarResult(p *plan.Plan) (counts map[string]bool, scalar bool) {
	for i := len(p.Pipelines) - 1; i >= 0; i-- {
		pl := &p.Pipelines[i]
		if pl.Sink().Kind != plan.OpResult {
			continue
		}
		for _, op := range pl.Ops {
			switch {
			case op.Kind == plan.OpAggFinal:
				scalar = len(op.Keys) == 0
				counts = map[string]bool{}
				if aggs, ok := op.Expr.(plan.Aggs); ok {
					for _, a := range aggs {
						if a.Fn == plan.AggCount {
							counts[a.As] = true
						}
					}
				}
			case op.Kind == plan.OpFilter || op.Kind == plan.OpHashProbe:
				scalar = false
			case op.Kind == plan.OpProject:
				proj, _ := op.Expr.(plan.Projection)
				next := map[string]bool{}
				for _, n := range proj {
					if c, ok := n.E.(plan.Col); ok && counts[string(c)] {
						next[n.Name] = true
					}
				}
				counts = next
			}
		}
		return counts, scalar
	}
	return nil, false
}

func resultColumns(p *plan.Plan) []string {
	for i := len(p.Pipelines) - 1; i >= 0; i-- {
		if s := p.Pipelines[i].Sink(); s.Kind == plan.OpResult {
			return s.Out
		}
	}
	return nil
}

// OpenSession makes the storage reader that queries of a session share
// (opts.IO, Buffered, Allocator, Log) and warms it up with one read of
// ds's first stored chunk, so that ring setup and buffer registration are
// not charged to the first query. Close the reader when done.
func OpenSession(ctx context.Context, ds *dataset.Dataset, opts QueryOptions) (*storage.Reader, error) {
	r, err := NewReader(opts.IO, opts.Buffered, opts.Allocator, opts.Log)
	if err != nil {
		return nil, err
	}
	for _, t := range ds.Tables() {
		path, _, err := ds.ChunkPath(t, 0)
		if err != nil {
			continue
		}
		fi, err := os.Stat(path)
		if err != nil || fi.Size() == 0 {
			continue
		}
		req := storage.Request{Ranges: []storage.Range{{Path: path, Length: min(fi.Size(), 4096)}}}
		if err := r.Submit(req); err != nil {
			r.Close()
			return nil, fmt.Errorf("engine: warm-up read of %s: %w", path, err)
		}
		c, err := r.Next(ctx)
		if err == nil {
			err = c.Err
		}
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("engine: warm-up read of %s: %w", path, err)
		}
		c.Buffer.Release()
		break
	}
	return r, nil
}

// TuneGC sets the garbage collector for a query session: GOGC=400 unless
// GOGC is set in the environment, and a soft memory limit of
// heapLimitFloor unless GOMEMLIMIT is. Queries allocate large, short-lived
// vectors; at the default GOGC (100) the collector runs four times as
// often and its assists land on the kernels. The heap's first
// heapAdviseBytes are advised for huge pages (AdviseHeap). It returns a
// function that restores the previous settings.
func TuneGC() (restore func()) {
	oldPercent, oldLimit := -2, int64(-1)
	if os.Getenv("GOGC") == "" {
		oldPercent = debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		oldLimit = debug.SetMemoryLimit(heapLimitFloor)
	}
	AdviseHeap(heapAdviseBytes)
	return func() {
		if oldPercent != -2 {
			debug.SetGCPercent(oldPercent)
		}
		if oldLimit >= 0 {
			debug.SetMemoryLimit(oldLimit)
		}
	}
}

// heapLimitFloor is the soft memory limit TuneGC sets. GOGC=400 alone lets
// the heap grow to five times what is live (2.2 GB in a q9 at SF1), and a
// heap growing onto memory the process never touched pays a page fault
// per 4 KiB: 12 µs each on a paravirtualized guest, a third of a query's
// CPU time until the process has touched its high-water mark, several
// queries later. Collecting before the heap passes 1 GiB recycles memory
// that is already mapped: q3, q9 and q18 at SF1, 3 rounds each after a
// warm-up, took 2.8x fewer page faults and ran up to 2x faster with less
// spread (the 2-core development VM, 2026-11). FitHeapLimit raises it for larger datasets.
const heapLimitFloor = 1 << 30

// ShareHeapLimit divides the soft memory limit among the local workers
// of this machine (the workers of one emulated cluster, or of one node
// under a launcher), floored at heapShareFloor, unless GOMEMLIMIT is set
// or local is 1 or less. Call it after FitHeapLimit. Each worker's heap
// otherwise grows to the whole machine's limit, onto memory none of them
// has touched: 4 workers of an SF1 cluster cleared pages for their first
// several queries (30% of the CPU samples of runs 5-12 of q3,q9 x12 were
// clear_page). Shared, the workers' first queries ran at their steady
// speed and the system time of 24 runs fell from 6.8-9.9 s to 2.7-5.2 s
// (the 2-core development VM, 2026-11).
func ShareHeapLimit(local int) {
	if os.Getenv("GOMEMLIMIT") != "" || local <= 1 {
		return
	}
	debug.SetMemoryLimit(max(debug.SetMemoryLimit(-1)/int64(local), heapShareFloor))
}

// heapShareFloor is the least limit ShareHeapLimit leaves a worker: a
// worker of a 4-node SF1 cluster holds ~45 MiB of intermediate data at its
// peak, and its reads' buffers.
const heapShareFloor = 256 << 20

// FitHeapLimit raises the soft memory limit to the dataset's size when
// that is above it and GOMEMLIMIT is not set: a query's live heap grows
// with the data it reads, and a limit under the live heap would make the
// collector run back to back. Call it after TuneGC, once the dataset is
// known.
func FitHeapLimit(ds *dataset.Dataset) {
	if os.Getenv("GOMEMLIMIT") != "" || ds == nil {
		return
	}
	var total int64
	for _, t := range ds.Manifest.Tables {
		for _, f := range t.Files {
			total += f.Size
		}
	}
	if cur := debug.SetMemoryLimit(-1); total > cur {
		debug.SetMemoryLimit(total)
	}
}
