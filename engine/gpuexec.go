package engine

import (
	"fmt"
	"math"

	"gostachio/dataset"
	"gostachio/engine/gpu"
	"gostachio/kernels/cpu"
	"gostachio/kernels/cuda"
	"gostachio/plan"
	"gostachio/scheduler"
	"gostachio/tpch/schema"
)

// useGPU marks every scan pipeline to run on dev and makes each device's
// copy and kernel streams. A scan pipeline the GPU path cannot run fails
// the plan here, before any task: a GPU run never falls back to the CPU
// part way (its times would mean neither).
func (d *runData) useGPU(dev *gpu.Device) error {
	for i := range d.plan.Pipelines {
		pl := &d.plan.Pipelines[i]
		if pl.Source.Kind != plan.SourceScan {
			continue
		}
		if err := gpu.Supported(pl.Ops); err != nil {
			return fmt.Errorf("engine: %s on the GPU: pipeline %d (%s): %w", d.plan.Name, i, pl.Name, err)
		}
		d.pipes[i].gpu = true
	}
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

// closeGPU destroys the run's streams (the device stays open: its owner
// closes it).
func (d *runData) closeGPU() {
	d.syncGPU()
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
