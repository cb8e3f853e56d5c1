package engine

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"gostachio/dataset"
	"gostachio/engine/gpu"
	"gostachio/kernels/cpu"
	"gostachio/kernels/cuda"
	"gostachio/plan"
	"gostachio/scheduler"
	"gostachio/tpch/schema"
)

// GPUPlacement says where one scan pipeline of a GPU run executes.
type GPUPlacement struct {
	Pipeline int    `json:"pipeline"`
	Name     string `json:"name"`
	// OnGPU: its units are uploaded to the GPU and its first GPUOps ops run
	// there (all of them, or the row path's prefix: gpu.RowPrefix; the
	// host runs the rest on the rows that come back); otherwise the host's
	// CPU kernels run it all. Reason says what the GPU path lacks.
	OnGPU  bool   `json:"on_gpu"`
	GPUOps int    `json:"gpu_ops"`
	Ops    int    `json:"ops"`
	Reason string `json:"reason,omitempty"`
}

// ErrGPUPath wraps the refusal of a scan pipeline the GPU path cannot run
// in a GPU run that is not hybrid.
var ErrGPUPath = errors.New("not on the GPU path")

// PlaceGPU decides, before any task, where each scan pipeline of p runs
// in a GPU run: all on the GPU where the GPU path runs its operators
// (gpu.Supported) over the columns it reads (no float64 one: floatScan) and, in a hybrid run, its partial aggregate reduces its
// rows enough (stateTooLarge). Without hybrid any other pipeline is an error wrapping
// ErrGPUPath that names it and the operator, and p is unchanged: a plain
// GPU run is all-GPU, so its times mean the GPU's. With hybrid such a
// pipeline runs its row-path prefix on the GPU (gpu.RowPrefix: the scan
// and filters, and projections, before the first op the GPU path lacks)
// and the rest on the host, or, with no such prefix, all on the host; p's
// pipelines are marked so (plan.Pipeline.HostFrom, OnHost: the simulator
// reads them too). It returns every scan pipeline's placement.
func PlaceGPU(p *plan.Plan, hybrid bool) ([]GPUPlacement, error) {
	var out []GPUPlacement
	for i := range p.Pipelines {
		pl := &p.Pipelines[i]
		if pl.Source.Kind != plan.SourceScan {
			continue
		}
		pg := GPUPlacement{Pipeline: i, Name: pl.Name, OnGPU: true, GPUOps: len(pl.Ops), Ops: len(pl.Ops)}
		floats := floatScan(p, pl)
		err := floats
		if err == nil {
			err = gpu.Supported(pl.Ops)
		}
		if err == nil && hybrid {
			err = stateTooLarge(p, pl)
		}
		if err != nil {
			if !hybrid {
				return nil, fmt.Errorf("engine: %s on the GPU: pipeline %d (%s): %w (--gpu-hybrid runs what the GPU path lacks on the host): %w",
					p.Name, i, pl.Name, err, ErrGPUPath)
			}
			pg.Reason = err.Error()
			if k, why := gpu.RowPrefix(pl.Ops); k > 0 && floats == nil {
				pg.GPUOps, pg.Reason = k, why
			} else {
				pg.OnGPU, pg.GPUOps = false, 0
			}
		}
		out = append(out, pg)
	}
	if hybrid {
		for _, pg := range out {
			pl := &p.Pipelines[pg.Pipeline]
			pl.OnHost, pl.HostFrom = !pg.OnGPU, 0
			if pg.OnGPU && pg.GPUOps < pg.Ops {
				pl.HostFrom = pg.GPUOps
			}
		}
	}
	return out, nil
}

// floatScan is an error naming the first float64 column scan pipeline pl
// reads, or nil: the GPU path uploads and computes on integer-coded and
// text columns only, so such a pipeline runs on the host in a hybrid run
// (its row-path prefix too, since the scan itself uploads the column) and
// is refused in a plain GPU run.
func floatScan(p *plan.Plan, pl *plan.Pipeline) error {
	if len(pl.Ops) == 0 || pl.Source.Table < 0 || pl.Source.Table >= len(p.Tables) {
		return nil
	}
	t := &p.Tables[pl.Source.Table]
	for _, name := range pl.Ops[0].Out {
		if isFloat(t, name) {
			return fmt.Errorf("scan of %s: column %s is float64, which the GPU path does not read", t.Name, name)
		}
	}
	// A join uploads the build columns it carries: a stored float column
	// of any table by that name keeps the pipeline on the host.
	for i := range pl.Ops {
		j, ok := pl.Ops[i].Expr.(plan.Join)
		if !ok {
			continue
		}
		for _, name := range j.Carry {
			for k := range p.Tables {
				if isFloat(&p.Tables[k], name) {
					return fmt.Errorf("%s %q carries %s.%s, a float64 column, which the GPU path does not read",
						pl.Ops[i].Kind, pl.Ops[i].Label, p.Tables[k].Name, name)
				}
			}
		}
	}
	return nil
}

func isFloat(t *plan.TableStats, name string) bool {
	c := t.Column(name)
	return c >= 0 && c < len(t.Schema) && t.Schema[c].Type == plan.TypeFloat64
}

// minStateReduction is how many input rows per group a partial aggregate
// must have to run on the GPU in a hybrid run: the GPU path hands each
// unit's state back for the host to sort and merge (orderGroups,
// cpu.Aggregator.Merge), so where the groups are a large share of the rows
// the host does nearly the work of folding them itself, after the GPU's.
// TPC-H Q18's lineitem aggregate (1.5 M groups of 6 M rows: 4 rows a
// group) ran 1.3x slower as a hybrid GPU run than on the CPU engine (16
// devices' streams, H100, 2026-11-26); Q1 (4 groups), Q6 (1) and Q15
// (10,000 groups of 230,000 filtered rows) keep it. The 8 is a round
// margin over Q18's 4, not a fitted threshold.
const minStateReduction = 8

// stateTooLarge is an error naming the partial aggregate of scan pipeline
// pl when its estimated groups (plan.Op.Groups) exceed the rows reaching
// it (the table's rows through the ops' selectivities) divided by
// minStateReduction.
func stateTooLarge(p *plan.Plan, pl *plan.Pipeline) error {
	var rows float64
	for _, c := range p.Tables[pl.Source.Table].Chunks {
		rows += float64(c.Rows)
	}
	for i := range pl.Ops {
		op := &pl.Ops[i]
		if op.Kind == plan.OpAggPartial {
			if len(op.Keys) > 0 && float64(op.Groups)*minStateReduction > rows {
				return fmt.Errorf("operator %s %q: about %d groups of %.0f rows: its state would come back nearly as large as its input (a hybrid run aggregates on the GPU at %d rows a group or more)",
					op.Kind, op.Label, op.Groups, rows, minStateReduction)
			}
			return nil
		}
		if s := op.Selectivity; s > 0 && !math.IsNaN(s) {
			rows *= s
		}
	}
	return nil
}

// FormatPlacement is one line saying which scan pipelines run where.
func FormatPlacement(query string, ps []GPUPlacement) string {
	var all, split, host []string
	for _, pg := range ps {
		switch {
		case !pg.OnGPU:
			host = append(host, fmt.Sprintf("%s (%s)", pg.Name, pg.Reason))
		case pg.GPUOps < pg.Ops:
			split = append(split, fmt.Sprintf("%s (%d of %d ops; the host from %s)", pg.Name, pg.GPUOps, pg.Ops, pg.Reason))
		default:
			all = append(all, pg.Name)
		}
	}
	s := fmt.Sprintf("%s: %d of %d scan pipelines on the GPU", query, len(all), len(ps))
	if len(all) > 0 {
		s += ": " + strings.Join(all, ", ")
	}
	if len(split) > 0 {
		s += fmt.Sprintf("; %d split, their scan, filters and probes on the GPU: %s", len(split), strings.Join(split, "; "))
	}
	if len(host) > 0 {
		s += "; on the host: " + strings.Join(host, "; ")
	}
	return s
}

// useGPU places the scan pipelines (PlaceGPU) and makes each device's copy
// and kernel streams on dev.
func (d *runData) useGPU(dev *gpu.Device, hybrid bool) error {
	placed, err := PlaceGPU(d.plan, hybrid)
	if err != nil {
		return err
	}
	for _, pg := range placed {
		pd := &d.pipes[pg.Pipeline]
		pd.gpu = pg.OnGPU
		if pg.OnGPU && pg.GPUOps < pg.Ops {
			pd.gpuRows = pg.GPUOps
		}
	}
	d.placement = placed
	d.gpu = dev
	for k := 0; k < d.devices; k++ {
		for _, list := range []*[]*cuda.Stream{&d.gpuCopy, &d.gpuKernels} {
			s, err := dev.Context().NewStream(cuda.StreamNonBlocking)
			if err != nil {
				return fmt.Errorf("engine: %w", err)
			}
			*list = append(*list, s)
		}
	}
	return nil
}

// syncGPU waits for every stream of the run (errors are the failed run's,
// already reported).
func (d *runData) syncGPU() {
	for _, s := range append(append([]*cuda.Stream(nil), d.gpuCopy...), d.gpuKernels...) {
		s.Synchronize()
	}
}

// closeGPU destroys the run's streams and frees the build sides on the
// device (the device stays open: its owner closes it).
func (d *runData) closeGPU() {
	d.syncGPU()
	d.gpuJoinMu.Lock()
	for k, t := range d.gpuJoins {
		t.Free()
		delete(d.gpuJoins, k)
	}
	d.gpuJoinMu.Unlock()
	for _, s := range append(append([]*cuda.Stream(nil), d.gpuCopy...), d.gpuKernels...) {
		s.Destroy()
	}
	d.gpuCopy, d.gpuKernels = nil, nil
}

// uploadUnit is the h2d of a GPU unit: its decoded chunks (views of the
// read buffers) go to device memory on the device's copy stream; the read
// buffers are released when it returns.
func (d *runData) uploadUnit(t *scheduler.Task, tm *dataset.TableMeta, u *unitData, bs []*cpu.Batch) error {
	g, err := d.gpu.Upload(d.gpuCopy[t.Device], bs)
	if err != nil {
		return fmt.Errorf("engine: %s unit %d: h2d: %w", d.plan.Name, t.Unit, err)
	}
	if err := BoundGPUColumns(g, tm, int(t.Chunk), int(t.Chunks)); err != nil {
		g.Free()
		return fmt.Errorf("engine: %s unit %d: %w", d.plan.Name, t.Unit, err)
	}
	d.mu.Lock()
	u.gin = g
	d.mu.Unlock()
	return nil
}

// BoundGPUColumns gives the integer, decimal and date columns of g (an
// upload of chunks [first, first+n) of tm) the range of their values
// there, from the manifest's chunk statistics (which chunk pruning trusts
// as well): the compiled pipelines drop the overflow checks and the sum
// tracking that the ranges make needless.
func BoundGPUColumns(g *gpu.Batch, tm *dataset.TableMeta, first, n int) error {
	if first < 0 || n <= 0 || first+n > len(tm.Chunks) {
		return fmt.Errorf("chunks [%d, %d) outside the table's %d", first, first+n, len(tm.Chunks))
	}
	for _, name := range g.Names {
		ci := tm.Schema.Column(name)
		if ci < 0 {
			return fmt.Errorf("no column %q", name)
		}
		switch tm.Schema.Columns[ci].Type {
		case schema.Int64, schema.Decimal, schema.Int32, schema.Date:
		default:
			continue
		}
		lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
		for c := first; c < first+n; c++ {
			st := &tm.Chunks[c].Columns[ci]
			if st.Min.IsStr || st.Max.IsStr {
				return fmt.Errorf("chunk %d column %s: string statistics for a %s column", c, name, tm.Schema.Columns[ci].Type)
			}
			lo, hi = min(lo, st.Min.Int), max(hi, st.Max.Int)
		}
		if err := g.Bound(name, lo, hi); err != nil {
			return err
		}
	}
	return nil
}

// gpuRowsOf runs the row-path prefix (the first pd.gpuRows ops) of a GPU
// unit of a split pipeline on the device's kernel stream and returns the
// rows that pass, for the host to run the rest of the unit's ops.
func (d *runData) gpuRowsOf(t *scheduler.Task) (*cpu.Batch, error) {
	pl := &d.plan.Pipelines[t.Pipeline]
	pd := &d.pipes[t.Pipeline]
	u := d.unit(t)
	d.mu.Lock()
	g := u.gin
	u.gin = nil
	d.mu.Unlock()
	if pd.kind != kindResult {
		d.dropUnit(t)
	}
	if g == nil {
		return nil, fmt.Errorf("engine: %s pipeline %d unit %d: kernel before its h2d", d.plan.Name, t.Pipeline, t.Unit)
	}
	dev := int(t.Device)
	joins := func(op *plan.Op) (*gpu.JoinTable, error) { return d.gpuJoin(op, dev) }
	rows, _, err := d.gpu.Rows(d.gpuKernels[dev], g, t.Ops[:pd.gpuRows], joins)
	g.Free()
	if err != nil {
		return nil, fmt.Errorf("engine: %s pipeline %d (%s) on the GPU: %w", d.plan.Name, t.Pipeline, pl.Name, err)
	}
	return rows, nil
}

// gpuJoinKey names a build side on the device: the build pipeline, the
// device and the columns the probe carries.
type gpuJoinKey struct {
	build, dev int
	carry      string
}

// gpuJoin returns the build side of probe op on device dev's GPU streams:
// the host's build (the rows its hash table indexes, built here if no
// build kernel ran on dev, as the CPU probe does) copied to the device
// once, on dev's kernel stream.
func (d *runData) gpuJoin(op *plan.Op, dev int) (*gpu.JoinTable, error) {
	// Two probes of one build may carry different columns: a table each.
	key := gpuJoinKey{op.Build, dev, strings.Join(op.Expr.(plan.Join).Carry, "\x00")}
	d.gpuJoinMu.Lock()
	defer d.gpuJoinMu.Unlock()
	if t := d.gpuJoins[key]; t != nil {
		return t, nil
	}
	bp := &d.pipes[op.Build]
	ht, err := d.builtTable(op.Build, dev)
	if err != nil {
		return nil, err
	}
	var rows *cpu.Batch
	if ht != nil {
		rows = ht.Batch()
	}
	if len(bp.sink.Keys) != 1 {
		return nil, fmt.Errorf("build of pipeline %d has %d keys: the GPU joins on one", op.Build, len(bp.sink.Keys))
	}
	t, err := d.gpu.BuildJoin(d.gpuKernels[dev], rows, bp.sink.Keys[0], op.Expr.(plan.Join).Carry)
	if err != nil {
		return nil, err
	}
	if d.gpuJoins == nil {
		d.gpuJoins = map[gpuJoinKey]*gpu.JoinTable{}
	}
	d.gpuJoins[key] = t
	return t, nil
}

// gpuKernel runs a GPU unit's ops on the device's kernel stream and folds
// the partial aggregate state it brings back into the device's state, as
// a CPU unit's rows are folded (so materialize and the exchange are the
// CPU engine's). It returns the groups the unit added.
func (d *runData) gpuKernel(t *scheduler.Task) (int64, error) {
	pl := &d.plan.Pipelines[t.Pipeline]
	pd := &d.pipes[t.Pipeline]
	dev := int(t.Device)
	u := d.unit(t)
	d.mu.Lock()
	g := u.gin
	u.gin = nil
	d.mu.Unlock()
	d.dropUnit(t)
	if g == nil {
		return 0, fmt.Errorf("engine: %s pipeline %d unit %d: kernel before its h2d", d.plan.Name, t.Pipeline, t.Unit)
	}
	state, _, err := d.gpu.Partial(d.gpuKernels[dev], g, t.Ops)
	g.Free()
	if err != nil {
		return 0, fmt.Errorf("engine: %s pipeline %d (%s) on the GPU: %w", d.plan.Name, t.Pipeline, pl.Name, err)
	}
	if state == nil {
		return 0, nil
	}
	op := pd.partial
	pd.devMu[dev].Lock()
	defer pd.devMu[dev].Unlock()
	st := pd.state[dev]
	before := 0
	if st == nil {
		st = cpu.NewAggregator(op.Keys, op.Expr.(plan.Aggs), false)
		pd.state[dev] = st
	} else {
		before = st.Groups()
	}
	if err := st.Merge(state); err != nil {
		return 0, fmt.Errorf("engine: %s pipeline %d (%s): GPU state: %w", d.plan.Name, t.Pipeline, pl.Name, err)
	}
	return int64(st.Groups() - before), nil
}
