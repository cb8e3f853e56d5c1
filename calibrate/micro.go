package calibrate

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gostachio/costmodel"
	"gostachio/dataset"
	"gostachio/engine"
	"gostachio/engine/storage"
	"gostachio/internal/cpuref"
	"gostachio/internal/diskref"
	"gostachio/internal/stats"
	"gostachio/kernels/cpu"
	"gostachio/plan"
	"gostachio/tpch/queries"
)

// MicroOptions configure RunMicro.
type MicroOptions struct {
	// Data is a dataset folder: storage is measured on its lineitem file
	// (O_DIRECT, the engine's reader), kernels on chunk 0 of its tables.
	Data string
	// Seed orders the storage configurations (each run in a seeded random
	// order, so a drift in the machine does not line up with one axis).
	Seed uint64
	// Reps is the timed repetitions per kernel point, after an untimed
	// one; the sample is their mean (default 5).
	Reps int
	// Passes is how many times the kernel points are measured, one whole
	// pass after the other; a point's sample is the median of its passes
	// (default 3; 1 with Quick), after an untimed warm-up pass (not with
	// Quick). On a shared VM a kernel's speed drifts by 2x over minutes
	// (the same q1 aggregate measured 100 and 230 ns/row in two runs a
	// minute apart): a single pass fits whichever phase the machine was
	// in. Without the warm-up, one calibration of 2026-11-26 kept q21's
	// and q22's samples 3–18x too slow (slow in two passes of three: q22's
	// shuffle of 32 Ki rows 1.66 ms, 0.12–0.20 in three other calibrations
	// that day), and its profile predicted q21 and q22 at 2–3x the
	// engine's time.
	Passes int
	// Quick measures few, small points (tests): seconds instead of a
	// minute.
	Quick bool
	// NoSteal skips the compute loops beside reads (what reads take from
	// the cores: the CPU engine's concern, not the GPU backend's).
	NoSteal bool
	// NoCorun skips the kernels beside kernels (what cores computing at
	// once take from each other: the CPU engine's concern).
	NoCorun bool
	// Log receives progress lines (nil: none).
	Log io.Writer
}

// RunMicro runs the micro-benchmarks on this machine: storage reads over
// sizes × queue depths, the h2d decode, task dispatch, and every kernel
// over sizes and selectivities — the filters, projections, partial and
// final aggregates and shuffles of the TPC-H plans applied to the tables'
// stored data, plus hash builds, probes and sorts over TPC-H keys. No
// whole query runs: those are what Validate checks the fit against. The
// CPU reference is timed between groups of kernel points, and each
// pass's kernel samples are normalized by the references around them to
// the calibration's mean speed (normalizeSpeed).
func RunMicro(ctx context.Context, opts MicroOptions) ([]Sample, error) {
	if opts.Reps <= 0 {
		opts.Reps = 5
	}
	logw := opts.Log
	if logw == nil {
		logw = io.Discard
	}
	ds, err := dataset.Open(opts.Data)
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	// The engine's GC percent, but no soft memory limit: this harness's
	// heap (the storage benchmark's buffers, 4 Mi-row builds) comes close
	// to the engine's limit, and near it the runtime hands freed memory
	// back to the kernel at every collection, so the kernels re-fault it:
	// 1.75 M page faults in one calibration with the limit, 0.87 M
	// without, and a q1 aggregate of 129 Ki rows at 21 ms against 4–6 ms.
	// The engine's queries stay well under their limit.
	defer engine.TuneGC()()
	debug.SetMemoryLimit(harnessHeapLimit)
	var out []Sample
	fmt.Fprintln(logw, "calibrate: storage reads (sizes x depths, O_DIRECT)")
	rs, err := microReads(ctx, ds, opts)
	if err != nil {
		return nil, err
	}
	out = append(out, rs...)
	fmt.Fprintln(logw, "calibrate: completion order (a small read submitted with large ones)")
	cs, err := microCompletion(ctx, ds, opts)
	if err != nil {
		return nil, err
	}
	out = append(out, cs...)
	if !opts.NoSteal {
		fmt.Fprintln(logw, "calibrate: compute loops beside reads (what reads take from the cores)")
		ss, err := microSteal(ctx, ds, opts, logw)
		if err != nil {
			return nil, err
		}
		out = append(out, ss...)
	}
	if !opts.NoCorun {
		fmt.Fprintln(logw, "calibrate: kernels beside kernels (what cores computing at once take from each other)")
		cs, err := microCorun(ctx, ds, opts, logw)
		if err != nil {
			return nil, err
		}
		out = append(out, cs...)
	}
	fmt.Fprintln(logw, "calibrate: task dispatch")
	out = append(out, microLaunch())
	passes := opts.Passes
	if passes <= 0 {
		passes = DefaultPasses
		if opts.Quick {
			passes = 1
		}
	}
	batches := map[string]*cpu.Batch{}
	var runs [][]Sample
	var marks [][]refMark // per pass
	// Pass 0 is a warm-up whose samples are dropped: in the first pass
	// the heap grows onto memory the process never touched (the collector
	// has not yet run to recycle any), so every rep of a kernel faults its
	// outputs in, and points ran 15–20x slower than in later passes (72 of
	// the 90 points whose passes differed by more than 2x in one
	// calibration had their slowest in the first pass).
	first := 0
	if opts.Quick {
		first = 1
	}
	for pass := first; pass <= passes; pass++ {
		m := &micro{ds: ds, reps: opts.Reps, quick: opts.Quick, batches: batches}
		var pm []refMark
		reference := func() {
			ns := cpuref.Ns()
			if pass > 0 {
				out = append(out, Sample{Component: CompReference, Case: "cpu reference", Tasks: cpuref.Reps, Ns: ns})
			}
			pm = append(pm, refMark{at: len(m.out), ns: ns})
		}
		m.reference = reference
		reference()
		label := fmt.Sprintf("pass %d of %d", pass, passes)
		if pass == 0 {
			label = "warm-up pass (not kept)"
		}
		fmt.Fprintf(logw, "calibrate: %s: h2d decode\n", label)
		if err := m.h2d(); err != nil {
			return nil, err
		}
		reference()
		fmt.Fprintf(logw, "calibrate: %s: kernels of the plans' operators\n", label)
		if err := m.planOps(ctx); err != nil {
			return nil, err
		}
		if !m.quick {
			if err := m.bigFolds(ctx); err != nil {
				return nil, err
			}
		}
		reference()
		fmt.Fprintf(logw, "calibrate: %s: hash builds, probes, sorts, text keys\n", label)
		if err := m.joinsAndSorts(); err != nil {
			return nil, err
		}
		if err := m.textKeys(); err != nil {
			return nil, err
		}
		reference()
		if pass == 0 {
			continue
		}
		runs = append(runs, m.out)
		marks = append(marks, pm)
	}
	normalizeSpeed(runs, marks)
	merged, err := medianOfPasses(runs)
	if err != nil {
		return nil, err
	}
	if un := unstablePoints(runs, unstableFactor, unstableMinNs); len(un) > 0 {
		var worst []string
		for _, u := range un[:min(len(un), 5)] {
			worst = append(worst, fmt.Sprintf("%s %d rows x%.1f", u.Case, u.Rows, u.Spread))
		}
		fmt.Fprintf(logw, "calibrate: %d of %d kernel points varied more than %gx between passes (the median of %d passes is kept): %s\n",
			len(un), len(merged), unstableFactor, len(runs), strings.Join(worst, ", "))
	}
	return append(out, merged...), nil
}

// DefaultPasses is MicroOptions.Passes' default.
const DefaultPasses = 3

// unstableFactor and unstableMinNs: a kernel point of at least
// unstableMinNs (in its slowest pass) whose passes differ by more than
// unstableFactor is reported.
const (
	unstableFactor = 2.0
	unstableMinNs  = 100_000
)

// unstablePoint is a kernel point whose passes disagree: Spread is its
// slowest pass over its fastest.
type unstablePoint struct {
	Case   string
	Rows   int64
	Spread float64
}

// unstablePoints lists the points of runs (one slice of samples per pass,
// in the same order, as medianOfPasses takes them) whose slowest pass took
// at least minNs and more than factor times their fastest, the largest
// spread first (ties by case and rows). Such a point's median still holds
// the slow value where more than half its passes were slow, which the
// calibration then fits; the report says where to look.
func unstablePoints(runs [][]Sample, factor float64, minNs int64) []unstablePoint {
	if len(runs) < 2 {
		return nil
	}
	var out []unstablePoint
	for i := range runs[0] {
		lo, hi := int64(math.MaxInt64), int64(0)
		for _, r := range runs {
			if i >= len(r) {
				return out
			}
			lo, hi = min(lo, r[i].Ns), max(hi, r[i].Ns)
		}
		if hi >= minNs && lo > 0 && float64(hi) > factor*float64(lo) {
			out = append(out, unstablePoint{Case: runs[0][i].Case, Rows: runs[0][i].Rows, Spread: float64(hi) / float64(lo)})
		}
	}
	slices.SortStableFunc(out, func(a, b unstablePoint) int {
		switch {
		case a.Spread != b.Spread:
			if a.Spread > b.Spread {
				return -1
			}
			return 1
		case a.Case != b.Case:
			return strings.Compare(a.Case, b.Case)
		}
		return int(a.Rows - b.Rows)
	})
	return out
}

// refMark is a CPU reference sample taken when a pass had measured at
// samples.
type refMark struct {
	at int
	ns int64
}

// normalizeSpeed scales every sample of the passes to the CPU's mean speed
// over the calibration: a sample between reference marks k and k+1 of its
// pass is multiplied by
//
//	mean / ((ref_k + ref_k+1) / 2)
//
// with mean the mean of every mark. The guest's CPU runs at two speeds
// 1.6x apart for seconds at a time (reference.go; one calibration's
// references: its first 40 at ~8 ms, the rest at ~4.5), so the kernels
// timed in a slow stretch were priced 1.6x those timed in a fast one, and
// a pass's median mixed them; normalized, each is priced at the speed the
// profile's host.reference (the same mean) records, which validate
// --rescale-cpu compares with the engine's. Samples outside a pair of
// marks are left as they are (they do not occur: each pass starts and ends
// with one).
func normalizeSpeed(runs [][]Sample, marks [][]refMark) {
	var sum float64
	var n int
	for _, pm := range marks {
		for _, mk := range pm {
			sum += float64(mk.ns)
			n++
		}
	}
	if n == 0 || !(sum > 0) {
		return
	}
	mean := sum / float64(n)
	for p, pm := range marks {
		for k := 0; k+1 < len(pm); k++ {
			local := float64(pm[k].ns+pm[k+1].ns) / 2
			if !(local > 0) {
				continue
			}
			for j := pm[k].at; j < pm[k+1].at; j++ {
				runs[p][j].Ns = int64(math.Round(float64(runs[p][j].Ns) * mean / local))
			}
		}
	}
}

// medianOfPasses merges the passes' samples point by point (same order in
// every pass): the first pass's sample with the median of the passes' ns.
func medianOfPasses(runs [][]Sample) ([]Sample, error) {
	if len(runs) == 0 {
		return nil, nil
	}
	out := slices.Clone(runs[0])
	for _, r := range runs[1:] {
		if len(r) != len(out) {
			return nil, fmt.Errorf("calibrate: passes measured %d and %d kernel points", len(out), len(r))
		}
	}
	ns := make([]float64, len(runs))
	for i := range out {
		for k, r := range runs {
			if r[i].Case != out[i].Case || r[i].Op != out[i].Op {
				return nil, fmt.Errorf("calibrate: pass %d measured %s %q where pass 1 measured %s %q", k+1, r[i].Op, r[i].Case, out[i].Op, out[i].Case)
			}
			ns[k] = float64(r[i].Ns)
		}
		out[i].Ns = int64(math.Round(stats.Median(ns)))
	}
	return out, nil
}

// microReads measures the engine's storage reader: for each read size and
// depth, reads of that size at consecutive 4 KiB-aligned offsets of the
// lineitem file with depth of them outstanding, timed from the first
// submission to the last completion.
func microReads(ctx context.Context, ds *dataset.Dataset, opts MicroOptions) ([]Sample, error) {
	path, size, err := readFile(ds)
	if err != nil {
		return nil, err
	}
	r, err := engine.NewReader("auto", false, nil, opts.Log)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	sizes := []int64{64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20}
	depths := []int{1, 2, 4, 8, 16}
	target, capB := int64(48<<20), int64(192<<20)
	if opts.Quick {
		sizes, depths, target, capB = []int64{64 << 10, 1 << 20}, []int{1, 4}, 2<<20, 8<<20
	}
	type cfg struct {
		size  int64
		depth int
	}
	var cfgs []cfg
	for _, s := range sizes {
		for _, d := range depths {
			if s <= size {
				cfgs = append(cfgs, cfg{s, d})
			}
		}
	}
	if len(cfgs) == 0 {
		return nil, fmt.Errorf("calibrate: %s (%d bytes) is too small for the read benchmark", path, size)
	}
	rng := rand.New(rand.NewPCG(opts.Seed, 0x5eed))
	// Warm-up: ring setup and first-use registration are not a read's cost.
	if err := readBatch(ctx, r, path, size, 0, 4096, 1, 1, nil); err != nil {
		return nil, err
	}
	// Every configuration is read once per pass, the passes in new
	// seeded orders, and a configuration's sample is the median of its
	// passes: this guest's disk moves between 0.5 and 3 GB/s from one
	// minute to the next, and a single pass fitted curves that fell with
	// queue depth.
	passes := opts.Passes
	if passes <= 0 {
		passes = DefaultPasses
		if opts.Quick {
			passes = 1
		}
	}
	ns := make([][]int64, len(cfgs))
	tasks := make([]int, len(cfgs))
	off := int64(0)
	order := make([]int, len(cfgs))
	for i := range order {
		order[i] = i
	}
	for range passes {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, ci := range order {
			c := cfgs[ci]
			total := min(max(target, 8*c.size*int64(c.depth)), capB)
			n := int(max(total/c.size, int64(c.depth)))
			start := time.Now()
			if err := readBatch(ctx, r, path, size, off, c.size, c.depth, n, nil); err != nil {
				return nil, err
			}
			ns[ci] = append(ns[ci], time.Since(start).Nanoseconds())
			tasks[ci] = n
			off = (off + int64(n)*c.size) % size
		}
	}
	var out []Sample
	for ci, c := range cfgs {
		out = append(out, Sample{Component: CompRead, Case: fmt.Sprintf("read %dKiB qd%d", c.size>>10, c.depth),
			Bytes: c.size, Depth: c.depth, Tasks: tasks[ci], Ns: stats.LowerMedian(ns[ci])})
	}
	return out, nil
}

// readFile is the file the storage benchmarks read (chunk 0 of lineitem)
// and its size rounded down to 4 KiB (O_DIRECT reads).
func readFile(ds *dataset.Dataset) (path string, size int64, err error) {
	if path, size, err = diskref.LineitemFile(ds); err != nil {
		return "", 0, fmt.Errorf("calibrate: %w", err)
	}
	return path, size, nil
}

// readBatch is diskref.ReadSpans, its errors named as calibrate's.
func readBatch(ctx context.Context, r *storage.Reader, path string, limit, off, size int64, depth, n int, progress *atomic.Int64) error {
	if err := diskref.ReadSpans(ctx, r, path, limit, off, size, depth, n, progress); err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	return nil
}

// microLaunch measures what the engine pays per CPU task besides its work:
// a goroutine, a slot of the CPU semaphore, and the completion handed back
// through a locked queue and a notify channel (engine.Backend.runCPU and
// complete).
func microLaunch() Sample {
	const n = 20000
	slots := make(chan struct{}, runtime.GOMAXPROCS(0))
	notify := make(chan struct{}, 1)
	var mu sync.Mutex
	var queue []int
	start := time.Now()
	for i := 0; i < n; i++ {
		go func() {
			slots <- struct{}{}
			<-slots
			mu.Lock()
			queue = append(queue, i)
			mu.Unlock()
			select {
			case notify <- struct{}{}:
			default:
			}
		}()
		for {
			mu.Lock()
			got := len(queue) > 0
			queue = queue[:0]
			mu.Unlock()
			if got {
				break
			}
			<-notify
		}
	}
	per := time.Since(start).Nanoseconds() / n
	return Sample{Component: CompLaunch, Case: "goroutine + slot + completion", Tasks: n, Ns: per}
}

type micro struct {
	ds      *dataset.Dataset
	reps    int
	quick   bool
	batches map[string]*cpu.Batch // table -> chunk 0, all columns
	out     []Sample
	// reference, if set, times the CPU reference (RunMicro's samples)
	// after each plan's operators and each join: its samples' mean is
	// the machine's speed over the calibration, and the CPU spends
	// seconds in each of its two speeds, so a few samples estimate that
	// share poorly (10 samples ranged 2.5–8.7 ms in one calibration).
	reference func()
}

// harnessHeapLimit is the harness's soft memory limit: about four times
// its live heap (≤ 0.8 GB: chunk 0 of every table, the builds' key
// columns), as the engine's 1 GiB is for a query's. Under it the heap
// recycles memory it has touched; without one (GOGC=400 alone) the heap
// kept growing onto fresh memory, whose first touch is a page fault (4 KiB:
// ~12 µs here; an advised 2 MiB page: ~1.7 ms of clearing) that landed in
// whichever kernel was timed — the same 4096-row build measured 5 and 109
// ns/row in two calibrations. At 1 GiB, too close to the live heap, the
// collector ran back to back and returned memory at every cycle.
const harnessHeapLimit = 3 << 30

// maxBuildRows is the largest hash build measured: a device's share of
// the largest builds of the TPC-H plans at SF1 (lineitem's 6M order keys,
// over 2 devices) is about 3M rows.
const maxBuildRows = 4 << 20

// sizes are the input rows per kernel point, up to rows.
func (m *micro) sizes(rows int) []int {
	cand := []int{4096, 32768, 262144, 1 << 20, 2 << 20}
	if m.quick {
		cand = []int{1024, 8192}
	}
	var out []int
	for _, n := range cand {
		if n < rows {
			out = append(out, n)
		}
	}
	return append(out, rows)
}

// table is chunk 0 of a table, all columns, as the engine's vectors.
func (m *micro) table(name string) (*cpu.Batch, error) {
	if b, ok := m.batches[name]; ok {
		return b, nil
	}
	sb, err := m.ds.ReadChunk(name, 0, nil)
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	b := engine.ChunkBatch(sb)
	m.batches[name] = b
	return b, nil
}

// leading is a table's first chunks, the given columns (only those: 4 Mi rows
// of every lineitem column held 1.2 GB live, and the collector's marking of it
// landed in the timed kernels), concatenated until they
// hold at least n rows (or the whole table): builds larger than a chunk.
func (m *micro) leading(name string, n int, columns []string) (*cpu.Batch, error) {
	key := fmt.Sprintf("%s/%d/%s", name, n, strings.Join(columns, ","))
	if b, ok := m.batches[key]; ok {
		return b, nil
	}
	tm, err := m.ds.Table(name)
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	var parts []*cpu.Batch
	rows := 0
	for i := 0; i < len(tm.Chunks) && rows < n; i++ {
		sb, err := m.ds.ReadChunk(name, i, columns)
		if err != nil {
			return nil, fmt.Errorf("calibrate: %w", err)
		}
		parts = append(parts, engine.ChunkBatch(sb))
		rows += sb.Rows
	}
	b, err := cpu.Concat(parts)
	if err != nil {
		return nil, fmt.Errorf("calibrate: %s: %w", name, err)
	}
	m.batches[key] = b
	return b, nil
}

// shiftedKeys is b with its int64 column key moved past every TPC-H key
// (+2^40), so that a probe on it finds none.
func shiftedKeys(b *cpu.Batch, key string) (*cpu.Batch, error) {
	return shiftedBy(b, key, 1<<40)
}

// shiftedBy is b with by added to its int64 column key.
func shiftedBy(b *cpu.Batch, key string, by int64) (*cpu.Batch, error) {
	i := b.Col(key)
	if i < 0 || (b.Cols[i].Type != cpu.TInt64 && b.Cols[i].Type != cpu.TDecimal) {
		return nil, fmt.Errorf("calibrate: key %s: want an int64 column", key)
	}
	out := &cpu.Batch{Names: b.Names, Cols: append([]cpu.Vec(nil), b.Cols...), Rows: b.Rows}
	v := b.Cols[i].I64[:b.Rows]
	shifted := make([]int64, len(v))
	for r, k := range v {
		shifted[r] = k + by
	}
	out.Cols[i].I64 = shifted
	return out, nil
}

// cols is b restricted to names (in that order), rows [0, n).
func cols(b *cpu.Batch, names []string, n int) (*cpu.Batch, error) {
	out := &cpu.Batch{Rows: b.Rows}
	for _, c := range names {
		v, err := b.Column(c)
		if err != nil {
			return nil, err
		}
		out.Names = append(out.Names, c)
		out.Cols = append(out.Cols, *v)
	}
	if n < b.Rows {
		return cpu.Slice(out, 0, n), nil
	}
	return out, nil
}

// time runs fn once untimed, then reps times, and returns the mean ns;
// fn's error stops it. The mean, not the median: the model predicts sums
// of kernel times, and the reps that pay a garbage collection or a
// fault are part of what a query pays (on this VM the median profile
// under-predicted whole queries by 26% where the mean one did by 16%,
// 2026-11). The untimed run is there because a kernel's first
// run allocates its outputs on memory the process never touched, and on a
// VM a first touch costs a page fault per 4 KiB (measured 12 µs here: the
// kernel then runs 2–16x slower); the engine's kernels run on a warm heap.
func (m *micro) time(fn func() error) (int64, error) {
	ts := make([]int64, 0, m.reps)
	if err := fn(); err != nil {
		return 0, err
	}
	for i := 0; i < m.reps; i++ {
		start := time.Now()
		if err := fn(); err != nil {
			return 0, err
		}
		ts = append(ts, time.Since(start).Nanoseconds())
	}
	var sum int64
	for _, t := range ts {
		sum += t
	}
	return sum / int64(len(ts)), nil
}

func (m *micro) add(op plan.OpKind, terms float64, c string, in *cpu.Batch, ns int64) {
	m.addOut(op, terms, c, in, nil, ns)
}

// addOut is add for a kernel whose output batch out is known.
func (m *micro) addOut(op plan.OpKind, terms float64, c string, in, out *cpu.Batch, ns int64) {
	m.out = append(m.out, Sample{Component: CompKernel, Op: op.String(), Case: c, Bytes: bytesOf(in), Rows: int64(in.Rows), Terms: terms, Ns: ns, Out: bytesOf(out)})
}

func bytesOf(b *cpu.Batch) int64 {
	if b == nil || b.Rows == 0 {
		return 0
	}
	return b.Bytes()
}

// h2d measures the engine's CPU "copy" of a unit: the vectors are views of
// the read buffers, and every string column's offsets are checked (the
// loop of engine/decode.go's decodeUnit). Units of all columns and of the
// fixed-width columns only, so bytes per checked offset vary.
func (m *micro) h2d() error {
	for _, t := range []string{"lineitem", "orders", "customer", "part", "partsupp"} {
		b, err := m.table(t)
		if err != nil {
			return err
		}
		var fixed []string
		for i, n := range b.Names {
			if b.Cols[i].Type != cpu.TString {
				fixed = append(fixed, n)
			}
		}
		for _, set := range [][]string{b.Names, fixed} {
			for _, n := range m.sizes(b.Rows) {
				in, err := cols(b, set, n)
				if err != nil {
					return err
				}
				ns, err := m.time(func() error { return checkOffsets(in) })
				if err != nil {
					return err
				}
				m.out = append(m.out, Sample{Component: CompH2D, Case: fmt.Sprintf("%s %d cols", t, len(set)),
					Bytes: bytesOf(in), Rows: int64(n), Ns: ns})
			}
		}
	}
	return nil
}

func checkOffsets(b *cpu.Batch) error {
	views := make([]cpu.Vec, len(b.Cols))
	for k := range b.Cols {
		v := &b.Cols[k]
		views[k] = *v
		if v.Type != cpu.TString {
			continue
		}
		offs, r := v.Off, len(v.Off)-1
		if offs[0] != 0 || int(offs[r]) != len(v.Str) {
			return fmt.Errorf("calibrate: string offsets do not span the data")
		}
		for i := 1; i <= r; i++ {
			if offs[i] < offs[i-1] {
				return fmt.Errorf("calibrate: string offset %d decreases", i)
			}
		}
	}
	runtime.KeepAlive(views)
	return nil
}

// eachPlan builds the 22 TPC-H plans for the dataset's scale factor and
// calls fn with each, stopping at its first error or when ctx ends.
func (m *micro) eachPlan(ctx context.Context, fn func(p *plan.Plan) error) error {
	tables := m.ds.PlanStats()
	sf := m.ds.Manifest.ScaleFactor
	if !(sf > 0) {
		var err error
		if sf, err = queries.ScaleFactor(tables); err != nil {
			return fmt.Errorf("calibrate: %w", err)
		}
	}
	for _, q := range queries.Names() {
		if err := ctx.Err(); err != nil {
			return err
		}
		p, err := queries.Build(q, sf, tables)
		if err != nil {
			return fmt.Errorf("calibrate: %w", err)
		}
		if err := fn(p); err != nil {
			return err
		}
	}
	return nil
}

// planOps runs, for every scan pipeline of the 22 TPC-H plans, the
// pipeline's leading operators over its table's stored rows as the engine
// runs them per chunk — filters with the plan's predicates (so
// selectivities are the real ones), projections, the partial aggregate
// (and the consuming pipeline's final aggregate over two devices' partial
// states) and the shuffle's partitioning — up to the first operator that
// needs another pipeline's output (a probe).
func (m *micro) planOps(ctx context.Context) error {
	devices := runtime.GOMAXPROCS(0)
	return m.eachPlan(ctx, func(p *plan.Plan) error {
		q := p.Name
		for pi := range p.Pipelines {
			pl := &p.Pipelines[pi]
			if pl.Source.Kind != plan.SourceScan {
				continue
			}
			base, err := m.table(p.Tables[pl.Source.Table].Name)
			if err != nil {
				return err
			}
			sizes := m.sizes(base.Rows)
			for si, n := range sizes {
				in, err := cols(base, pl.Ops[0].Out, n)
				if err != nil {
					return fmt.Errorf("calibrate: %s pipeline %d: %w", q, pi, err)
				}
				last := si == len(sizes)-1
				if err := m.walk(p, pi, in, devices, last); err != nil {
					return fmt.Errorf("calibrate: %s pipeline %d (%s): %w", q, pi, pl.Name, err)
				}
			}
		}
		m.timeReference()
		return nil
	})
}

// timeReference takes a CPU reference sample between groups of kernels
// (micro.reference), except in quick runs.
func (m *micro) timeReference() {
	if m.reference != nil && !m.quick {
		m.reference()
	}
}

// walk times pipeline pi's ops after the scan over b (see planOps); with
// final it also times the consumer's final aggregate.
func (m *micro) walk(p *plan.Plan, pi int, b *cpu.Batch, devices int, final bool) error {
	pl := &p.Pipelines[pi]
	for oi := 1; oi < len(pl.Ops); oi++ {
		op := &pl.Ops[oi]
		label := fmt.Sprintf("%s p%d %s", p.Name, pi, op.Kind)
		in := b
		var ns int64
		var err error
		switch op.Kind {
		case plan.OpFilter:
			ns, err = m.time(func() (e error) { b, e = cpu.Filter(in, op.Expr); return })
		case plan.OpProject:
			ns, err = m.time(func() (e error) { b, e = cpu.Project(in, op.Expr.(plan.Projection)); return })
		case plan.OpAggPartial:
			var st *cpu.Aggregator
			ns, err = m.time(func() (e error) { st, e = fold(op, in); return })
			if err == nil {
				m.add(op.Kind, op.Terms(), label, in, ns)
				m.out[len(m.out)-1].StrTerms = op.StrTerms()
				m.out[len(m.out)-1].Table = aggStateBytes(op, st)
				m.out[len(m.out)-1].Key = op.Fingerprint()
				if final {
					err = m.aggFinal(p, pi, st, devices, "")
				}
			}
			return err
		case plan.OpShuffle:
			ns, err = m.time(func() error { _, e := cpu.Partition(in, op.Keys, devices); return e })
		default:
			return nil
		}
		if err != nil {
			return err
		}
		if op.Kind == plan.OpShuffle {
			m.add(op.Kind, op.Terms(), label, in, ns)
		} else {
			m.addOut(op.Kind, op.Terms(), label, in, b, ns)
		}
		m.out[len(m.out)-1].StrTerms = op.StrTerms()
		m.out[len(m.out)-1].Key = op.Fingerprint()
		if b == nil || b.Rows == 0 || op.Kind == plan.OpShuffle {
			return nil
		}
	}
	return nil
}

// aggStateBytes is the working set of a fold that left st: its groups at
// the op's output width (costmodel.AggState prices the plan's estimate
// of the same); 0 without keys.
func aggStateBytes(op *plan.Op, st *cpu.Aggregator) int64 {
	if len(op.Keys) == 0 {
		return 0
	}
	return int64(st.Groups()) * int64(max(op.OutWidth, 8))
}

// bigFoldRows is the input of the large fold samples (bigFolds).
const bigFoldRows = 2 << 20

// bigFolds times, for each scan pipeline that ends in a grouped partial
// aggregate after filters and projections only, one fold of its first
// bigFoldRows rows into one state — the size a device's state reaches in
// a query (q21 and q18 at SF1: ~750 K orders per device), where the
// chunk-0 samples of planOps stay within the caches (≤ 33 K groups) —
// and the consuming final aggregate over such states (aggFinal).
func (m *micro) bigFolds(ctx context.Context) error {
	devices := runtime.GOMAXPROCS(0)
	return m.eachPlan(ctx, func(p *plan.Plan) error {
		q := p.Name
	pipes:
		for pi := range p.Pipelines {
			pl := &p.Pipelines[pi]
			if pl.Source.Kind != plan.SourceScan {
				continue
			}
			agg := -1
			for oi := 1; oi < len(pl.Ops); oi++ {
				switch pl.Ops[oi].Kind {
				case plan.OpFilter, plan.OpProject:
					continue
				case plan.OpAggPartial:
					agg = oi
				}
				break
			}
			if agg < 0 || len(pl.Ops[agg].Keys) == 0 {
				continue
			}
			name := p.Tables[pl.Source.Table].Name
			base, err := m.table(name)
			if err != nil {
				return err
			}
			if base.Rows >= bigFoldRows {
				continue
			}
			in, err := m.leading(name, bigFoldRows, pl.Ops[0].Out)
			if err != nil {
				return err
			}
			if in.Rows <= base.Rows {
				continue // the table is one chunk: planOps measured it whole
			}
			b := in
			for oi := 1; oi < agg; oi++ {
				op := &pl.Ops[oi]
				if op.Kind == plan.OpFilter {
					b, err = cpu.Filter(b, op.Expr)
				} else {
					b, err = cpu.Project(b, op.Expr.(plan.Projection))
				}
				if err != nil {
					return fmt.Errorf("calibrate: %s pipeline %d: %w", q, pi, err)
				}
				if b == nil || b.Rows == 0 {
					continue pipes
				}
			}
			op := &pl.Ops[agg]
			var st *cpu.Aggregator
			ns, err := m.time(func() (e error) { st, e = fold(op, b); return })
			if err != nil {
				return fmt.Errorf("calibrate: %s pipeline %d: %w", q, pi, err)
			}
			m.add(op.Kind, op.Terms(), fmt.Sprintf("%s p%d %s %d rows", p.Name, pi, op.Kind, in.Rows), b, ns)
			m.out[len(m.out)-1].StrTerms = op.StrTerms()
			m.out[len(m.out)-1].Table = aggStateBytes(op, st)
			m.out[len(m.out)-1].Key = op.Fingerprint()
			// The consumer's final over states of this size: chunk-sized
			// ones stay in the caches, a device's whole one does not.
			if err := m.aggFinal(p, pi, st, devices, op.Keys[0]); err != nil {
				return fmt.Errorf("calibrate: %s pipeline %d: %w", q, pi, err)
			}
		}
		return nil
	})
}

// fold is the engine's partial aggregation of one batch: arguments
// evaluated, then folded into a new state.
func fold(op *plan.Op, b *cpu.Batch) (*cpu.Aggregator, error) {
	aggs := op.Expr.(plan.Aggs)
	args, err := cpu.AggArgs(b, aggs)
	if err != nil {
		return nil, err
	}
	st := cpu.NewAggregator(op.Keys, aggs, false)
	if b.Rows > 0 {
		if err := st.Update(b, args); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// aggFinal times the final aggregate that consumes pipeline pi's partial
// states: devices copies of st's state merged, then the result. With
// shift naming an integer key column, copy i has i·2^40 added to it, so
// that every row is a group of its own: a final fed by a shuffle on the
// keys of states its devices built from different chunks (q18's and
// q21's orders) inserts each row, where copies of one state (a gathered
// q1) update the groups the first copy made.
func (m *micro) aggFinal(p *plan.Plan, pi int, st *cpu.Aggregator, devices int, shift string) error {
	part, err := st.Result(false)
	if err != nil || part == nil || part.Rows == 0 {
		return err
	}
	parts := make([]*cpu.Batch, devices)
	for i := range parts {
		parts[i] = part
		if shift != "" && i > 0 {
			if moved, err := shiftedBy(part, shift, int64(i)<<40); err == nil {
				parts[i] = moved
			}
		}
	}
	in, err := cpu.Concat(parts)
	if err != nil {
		return err
	}
	for ci := range p.Pipelines {
		c := &p.Pipelines[ci]
		if c.Source.Kind != plan.SourceInputs || !slices.Contains(c.Source.Inputs, pi) || c.Ops[0].Kind != plan.OpAggFinal {
			continue
		}
		op := &c.Ops[0]
		groups := 0
		ns, err := m.time(func() error {
			a := cpu.NewAggregator(op.Keys, op.Expr.(plan.Aggs), true)
			if err := a.Merge(in); err != nil {
				return err
			}
			groups = a.Groups()
			_, err := a.Result(true)
			return err
		})
		if err != nil {
			return err
		}
		m.add(plan.OpAggFinal, op.Terms(), fmt.Sprintf("%s p%d agg-final %d rows", p.Name, ci, in.Rows), in, ns)
		if len(op.Keys) > 0 {
			// The merged state, as costmodel.AggState prices the plan's.
			m.out[len(m.out)-1].Table = int64(groups) * int64(max(op.OutWidth, 8))
		}
		m.out[len(m.out)-1].Key = op.Fingerprint()
	}
	return nil
}

// joinsAndSorts times hash builds and probes on TPC-H's foreign keys
// (orders ⋈ lineitem, customer ⋈ orders, and orders against a table of
// lineitem's order keys — duplicate keys, up to maxBuildRows rows, as the
// semi joins of q4, q18, q21 build) over build sizes (hash-table size
// effects: the large ones are past the caches) and match fractions, and
// sorts / top-k over lineitem.
func (m *micro) joinsAndSorts() error {
	type join struct {
		build, probe        string
		bcols, pcols, carry []string
		bkey, pkey          string
		buildRows           int // 0: chunk 0 of the build table
	}
	joins := []join{
		{"orders", "lineitem", []string{"o_orderkey", "o_orderdate", "o_shippriority"}, []string{"l_orderkey", "l_extendedprice", "l_discount"},
			[]string{"o_orderdate", "o_shippriority"}, "o_orderkey", "l_orderkey", 0},
		{"customer", "orders", []string{"c_custkey", "c_nationkey"}, []string{"o_custkey", "o_orderkey", "o_totalprice"},
			[]string{"c_nationkey"}, "c_custkey", "o_custkey", 0},
		{"lineitem", "orders", []string{"l_orderkey", "l_suppkey"}, []string{"o_orderkey", "o_orderdate"},
			[]string{"l_suppkey"}, "l_orderkey", "o_orderkey", maxBuildRows},
		// Builds of other widths (8 and 37 bytes a row besides the 16 of
		// the three above): a build indexes its input without copying it,
		// so its cost follows its rows, not its bytes, and with every
		// build 16 bytes wide the fit could not tell the two apart (it
		// priced q21's key-only builds at half their rows' cost).
		{"lineitem", "orders", []string{"l_orderkey"}, []string{"o_orderkey", "o_orderdate"},
			nil, "l_orderkey", "o_orderkey", maxBuildRows / 4},
		{"orders", "lineitem", []string{"o_orderkey", "o_custkey", "o_orderdate", "o_totalprice", "o_shippriority", "o_orderstatus"},
			[]string{"l_orderkey", "l_extendedprice"}, []string{"o_custkey", "o_totalprice"}, "o_orderkey", "l_orderkey", 0},
		// Keys that repeat across the rows (15 orders a customer): the
		// table holds the distinct keys, the rows chain behind them.
		{"orders", "customer", []string{"o_custkey", "o_orderkey"}, []string{"c_custkey", "c_nationkey"},
			[]string{"o_orderkey"}, "o_custkey", "c_custkey", maxBuildRows},
		// Text carried (q16's partsupp into part): a matched row gathers
		// its strings' bytes, not a fixed width (plan.Op.StrKeys).
		{"part", "partsupp", []string{"p_partkey", "p_brand", "p_type"}, []string{"ps_partkey", "ps_suppkey"},
			[]string{"p_brand", "p_type"}, "p_partkey", "ps_partkey", 0},
	}
	for _, j := range joins {
		bt, err := m.table(j.build)
		if j.buildRows > 0 && !m.quick {
			bt, err = m.leading(j.build, j.buildRows, j.bcols)
		}
		if err != nil {
			return err
		}
		pt, err := m.table(j.probe)
		if err != nil {
			return err
		}
		for _, nb := range m.sizes(bt.Rows) {
			bin, err := cols(bt, j.bcols, nb)
			if err != nil {
				return err
			}
			var ht *cpu.HashTable
			ns, err := m.time(func() (e error) { ht, e = cpu.BuildHashTable(bin, []string{j.bkey}); return })
			if err != nil {
				return err
			}
			// The table's own bytes (slots for its distinct keys, chain
			// links where keys repeat: l_orderkey in runs of 4, o_custkey
			// 15 times) are the build's working set and its probes'
			// (costmodel.TableBytes prices the plans' the same way).
			table := ht.Footprint()
			m.add(plan.OpHashBuild, 1, fmt.Sprintf("build %s on %s %d", j.build, j.bkey, nb), bin, ns)
			m.out[len(m.out)-1].Table = table
			for _, np := range m.sizes(pt.Rows) {
				pin, err := cols(pt, j.pcols, np)
				if err != nil {
					return err
				}
				for _, kind := range []plan.JoinKind{plan.JoinInner, plan.JoinSemi} {
					carry := j.carry
					if kind != plan.JoinInner {
						carry = nil
					}
					var out *cpu.Batch
					ns, err := m.time(func() (e error) { out, e = ht.Probe(pin, []string{j.pkey}, kind, carry); return })
					if err != nil {
						return err
					}
					m.addOut(plan.OpHashProbe, float64(1+len(carry)), fmt.Sprintf("probe %s %s build=%d", j.probe, kind, nb), pin, out, ns)
					m.out[len(m.out)-1].Table = table
					m.out[len(m.out)-1].StrTerms = float64(textColumns(bin, carry))
				}
				// The same probe with no key in the table: the TPC-H
				// probes above match most of their rows, so their cost
				// at a table size mixes the lookups with the output,
				// while downstream probes often match few (Q3's lineitem
				// into its orders: 1%).
				miss, err := shiftedKeys(pin, j.pkey)
				if err != nil {
					return err
				}
				var out *cpu.Batch
				ns, err := m.time(func() (e error) { out, e = ht.Probe(miss, []string{j.pkey}, plan.JoinInner, j.carry); return })
				if err != nil {
					return err
				}
				m.addOut(plan.OpHashProbe, float64(1+len(j.carry)), fmt.Sprintf("probe %s inner build=%d, no match", j.probe, nb), miss, out, ns)
				m.out[len(m.out)-1].Table = table
				m.out[len(m.out)-1].StrTerms = float64(textColumns(bin, j.carry))
			}
		}
		m.timeReference()
	}
	li, err := m.table("lineitem")
	if err != nil {
		return err
	}
	for _, n := range m.sizes(min(li.Rows, 262144)) {
		in, err := cols(li, []string{"l_orderkey", "l_extendedprice", "l_shipdate", "l_returnflag"}, n)
		if err != nil {
			return err
		}
		for _, s := range []struct {
			kind  plan.OpKind
			keys  []plan.SortKey
			limit int
		}{
			{plan.OpSort, []plan.SortKey{{Col: "l_returnflag"}, {Col: "l_shipdate"}}, 0},
			{plan.OpSort, []plan.SortKey{{Col: "l_extendedprice", Desc: true}}, 0},
			{plan.OpTopK, []plan.SortKey{{Col: "l_extendedprice", Desc: true}, {Col: "l_orderkey"}}, 10},
			{plan.OpTopK, []plan.SortKey{{Col: "l_shipdate"}}, 100},
		} {
			ns, err := m.time(func() error { _, e := cpu.Sort(in, s.keys, s.limit); return e })
			if err != nil {
				return err
			}
			var names []string
			for _, k := range s.keys {
				names = append(names, k.Col)
			}
			terms, text := float64(len(s.keys)), float64(textColumns(in, names))
			if s.kind == plan.OpSort {
				l := costmodel.SortLog(float64(in.Rows))
				terms, text = terms*l, text*l
			}
			m.add(s.kind, terms, fmt.Sprintf("%s %d keys limit %d", s.kind, len(s.keys), s.limit), in, ns)
			m.out[len(m.out)-1].StrTerms = text
		}
	}
	return nil
}
