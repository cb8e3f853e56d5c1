package engine

import (
	"context"
	"fmt"
	"slices"

	"gostachio/kernels/cpu"
	"gostachio/plan"
	"gostachio/scheduler"
)

// kernel runs a kernel task: a unit's fused streaming ops (and its sink's
// routing), or a pipeline's finalize step (Unit < 0). It returns what the
// scheduler learns from execution: output rows and bytes, and for an
// exchange the bytes bound for each worker.
func (d *runData) kernel(t *scheduler.Task) (rows, bytes int64, parts []int64, err error) {
	pl := &d.plan.Pipelines[t.Pipeline]
	pd := &d.pipes[t.Pipeline]
	dev := int(t.Device)
	var ins []*cpu.Batch
	ops := t.Ops
	switch {
	case t.Unit < 0 && pd.kind == kindAgg:
		// The emission of a partial aggregate's state for its exchange.
		rows, bytes, err := d.materialize(t.Pipeline, dev)
		if err != nil {
			return 0, 0, nil, err
		}
		return rows, bytes, nil, nil
	case t.Unit < 0:
		pd.mu.Lock()
		var in *cpu.Batch
		in, err = concat(pd.left[dev])
		pd.left[dev] = nil
		pd.mu.Unlock()
		ins = []*cpu.Batch{in}
	case pl.Source.Kind == plan.SourceScan && pd.gpu && pd.gpuRows > 0:
		var rows *cpu.Batch
		if rows, err = d.gpuRowsOf(t); err == nil {
			ins, ops = []*cpu.Batch{rows}, t.Ops[pd.gpuRows:]
		}
	case pl.Source.Kind == plan.SourceScan && pd.gpu:
		groups, err := d.gpuKernel(t)
		return groups, 0, nil, err
	case pl.Source.Kind == plan.SourceScan:
		u := d.unit(t)
		d.mu.Lock()
		ins, u.in = u.in, nil
		inBytes := u.inBytes
		d.mu.Unlock()
		defer d.track(-inBytes)
		if pd.kind != kindResult {
			d.dropUnit(t)
		}
	default:
		var in *cpu.Batch
		in, err = d.inputs(pl, dev)
		ins = []*cpu.Batch{in}
	}
	if err != nil {
		return 0, 0, nil, err
	}
	out, parts, groups, err := d.runUnit(t.Pipeline, dev, ops, ins)
	if err != nil {
		return 0, 0, nil, fmt.Errorf("engine: %s pipeline %d (%s): %w", d.plan.Name, t.Pipeline, pl.Name, err)
	}
	if pd.kind == kindAgg && t.Unit >= 0 {
		return groups, 0, nil, nil
	}
	if out != nil {
		rows, bytes = int64(out.Rows), batchBytes(out)
	}
	switch {
	case t.Unit < 0 || pd.kind == kindAccumulate:
		if out != nil {
			pd.mu.Lock()
			pd.left[dev] = append(pd.left[dev], out)
			pd.mu.Unlock()
			if pd.sink.Kind == plan.OpHashBuild {
				pd.devMu[dev].Lock()
				if err = d.buildTable(t.Pipeline, dev); err != nil {
					err = fmt.Errorf("engine: %s pipeline %d (%s): %w", d.plan.Name, t.Pipeline, pl.Name, err)
				}
				pd.devMu[dev].Unlock()
			}
			if err == nil {
				err = d.trackPipe(t.Pipeline, bytes)
			}
		}
	case pd.kind == kindResult:
		u := d.unit(t)
		d.mu.Lock()
		u.out = out
		d.mu.Unlock()
		err = d.track(bytes)
	}
	return rows, bytes, parts, err
}

// streaming reports whether an op works row by row (so a unit's chunks
// can go through it one at a time).
func streaming(k plan.OpKind) bool {
	return k == plan.OpScan || k == plan.OpFilter || k == plan.OpProject || k == plan.OpHashProbe
}

// runUnit runs ops over a unit's batches: the streaming prefix batch by
// batch (a stored chunk at a time stays in cache), then the rest over
// their union (a partial aggregate folds each batch instead).
func (d *runData) runUnit(p int32, dev int, ops []plan.Op, ins []*cpu.Batch) (*cpu.Batch, []int64, int64, error) {
	k := 0
	for k < len(ops) && streaming(ops[k].Kind) {
		k++
	}
	var outs []*cpu.Batch
	for _, b := range ins {
		if b == nil {
			continue
		}
		out, _, _, err := d.runOps(p, dev, ops[:k], b)
		if err != nil {
			return nil, nil, 0, err
		}
		if out != nil && out.Rows > 0 {
			outs = append(outs, out)
		}
	}
	rest := ops[k:]
	if len(rest) > 0 && rest[0].Kind == plan.OpAggPartial {
		var groups int64
		for _, b := range outs {
			start := d.opClock()
			g, err := d.fold(p, &rest[0], dev, b)
			if err != nil {
				start.stop()
				return nil, nil, 0, fmt.Errorf("%s %q: %w", rest[0].Kind, rest[0].Label, err)
			}
			d.timeOp(p, &rest[0], rest[0].Kind.String(), dev, b, nil, start)
			groups += g
		}
		return nil, nil, groups, nil
	}
	b, err := concat(outs)
	if err != nil {
		return nil, nil, 0, err
	}
	return d.runOps(p, dev, rest, b)
}

// batchBytes is what a batch moves; an empty batch moves nothing.
func batchBytes(b *cpu.Batch) int64 {
	if b == nil || b.Rows == 0 {
		return 0
	}
	return b.Bytes()
}

func concat(bs []*cpu.Batch) (*cpu.Batch, error) {
	switch len(bs) {
	case 0:
		return nil, nil
	case 1:
		return bs[0], nil
	}
	return cpu.Concat(bs)
}

// inputs is the one unit of an inputs pipeline on dev: the union of what
// its input pipelines left there.
func (d *runData) inputs(pl *plan.Pipeline, dev int) (*cpu.Batch, error) {
	var all []*cpu.Batch
	for _, in := range pl.Source.Inputs {
		if _, _, err := d.materialize(int32(in), dev); err != nil {
			return nil, err
		}
		ip := &d.pipes[in]
		ip.mu.Lock()
		all = append(all, ip.left[dev]...)
		ip.mu.Unlock()
	}
	b, err := concat(all)
	if err != nil {
		return nil, fmt.Errorf("engine: %s pipeline %s: inputs do not share columns: %w", d.plan.Name, pl.Name, err)
	}
	return b, nil
}

// runOps applies ops of pipeline p to in on device dev. A partial
// aggregate folds into the device's state (groups: how many groups it
// added); an exchange sink routes the output (parts: bytes per worker).
func (d *runData) runOps(p int32, dev int, ops []plan.Op, in *cpu.Batch) (out *cpu.Batch, parts []int64, groups int64, err error) {
	b := in
	for i := range ops {
		op := &ops[i]
		start, opIn := d.opClock(), b
		switch op.Kind {
		case plan.OpScan, plan.OpHashBuild, plan.OpResult:
			// Scan: decoded by the copy. Build: the retained output is the
			// table's rows (indexed by kernel, after the unit). Result: the
			// host merge.
		case plan.OpFilter:
			if b != nil {
				b, err = cpu.Filter(b, op.Expr)
			}
		case plan.OpProject:
			if b != nil {
				b, err = cpu.Project(b, op.Expr.(plan.Projection))
			}
		case plan.OpHashProbe:
			if b != nil {
				b, err = d.probe(op, dev, b)
			}
		case plan.OpAggPartial:
			groups, err = d.fold(p, op, dev, b)
			if err == nil && b != nil {
				d.timeOp(p, op, op.Kind.String(), dev, b, nil, start)
			}
			start.stop()
			return nil, nil, groups, err
		case plan.OpAggFinal:
			a := cpu.NewAggregator(op.Keys, op.Expr.(plan.Aggs), true)
			if b != nil {
				if err = a.Merge(b); err != nil {
					break
				}
			}
			if b != nil || len(op.Keys) == 0 {
				b, err = a.Emit(true)
			}
		case plan.OpSort, plan.OpTopK:
			if b != nil {
				b, err = cpu.Sort(b, plan.ParseSortKeys(op.Keys), op.Limit)
			}
		case plan.OpShuffle, plan.OpBroadcast, plan.OpGather:
			parts, err = d.route(p, dev, b)
			if err == nil && b != nil {
				d.timeOp(p, op, op.Kind.String(), dev, b, b, start)
			}
			start.stop()
			return b, parts, 0, err
		default:
			err = fmt.Errorf("operator %s not supported by the CPU engine", op.Kind)
		}
		if err != nil {
			start.stop()
			return nil, nil, 0, fmt.Errorf("%s %q: %w", op.Kind, op.Label, err)
		}
		if opIn != nil && op.Kind != plan.OpScan && op.Kind != plan.OpHashBuild && op.Kind != plan.OpResult {
			d.timeOp(p, op, op.Kind.String(), dev, opIn, b, start)
		}
		start.stop()
	}
	return b, nil, 0, nil
}

// fold adds a unit's rows to the device's partial aggregate state.
func (d *runData) fold(p int32, op *plan.Op, dev int, b *cpu.Batch) (int64, error) {
	if b == nil || b.Rows == 0 {
		return 0, nil
	}
	aggs := op.Expr.(plan.Aggs)
	args, err := cpu.AggArgs(b, aggs)
	if err != nil {
		return 0, err
	}
	pd := &d.pipes[p]
	// The device's own lock, not the pipeline's: every device folds into
	// its own state, and under pd.mu the devices' folds of one pipeline
	// ran one at a time (TPC-H Q18 at SF1: each of two devices' lineitem
	// folds took 1.75x as long as one device's alone).
	pd.devMu[dev].Lock()
	defer pd.devMu[dev].Unlock()
	st := pd.state[dev]
	before := 0
	if st == nil {
		// A new state reports all its groups (a no-keys aggregate starts
		// with its one group: it must still count as output).
		st = cpu.NewAggregator(op.Keys, aggs, false)
		pd.state[dev] = st
	} else {
		before = st.Groups()
	}
	if err := st.Update(b, args); err != nil {
		return 0, err
	}
	return int64(st.Groups() - before), nil
}

// materialize turns pipeline p's partial aggregate state on dev into a
// batch and routes it like a unit's exchange output (once).
func (d *runData) materialize(p int32, dev int) (rows, bytes int64, err error) {
	pd := &d.pipes[p]
	if pd.kind != kindAgg {
		return 0, 0, nil
	}
	// Held until the state is routed: a concurrent send from the same
	// device must not find its destination's share still missing.
	pd.devMu[dev].Lock()
	defer pd.devMu[dev].Unlock()
	st := pd.state[dev]
	if st == nil || pd.emitted[dev] {
		return 0, 0, nil
	}
	pd.emitted[dev] = true
	pd.state[dev] = nil
	start := d.opClock()
	b, err := st.Emit(false)
	if err != nil {
		start.stop()
		return 0, 0, fmt.Errorf("engine: %s pipeline %d: %w", d.plan.Name, p, err)
	}
	if _, err = d.route(p, dev, b); err != nil {
		start.stop()
		return 0, 0, err
	}
	d.timeOp(p, pd.partial, OpEmit, dev, b, nil, start)
	start.stop()
	if b == nil {
		return 0, 0, nil
	}
	return int64(b.Rows), batchBytes(b), nil
}

// route splits an exchange output of device src over the workers of the
// cluster by the pipeline's sink (gather: all to worker 0; broadcast: all
// to every worker; shuffle: hash partitions on the sink's keys). The share
// of src itself lands at once; the others wait for their send.
func (d *runData) route(p int32, src int, b *cpu.Batch) ([]int64, error) {
	pd := &d.pipes[p]
	W := d.workers()
	self := d.node*d.devices + src
	sizes := make([]int64, W)
	if b == nil {
		return sizes, nil
	}
	shares := make([]*cpu.Batch, W)
	switch pd.sink.Kind {
	case plan.OpGather:
		shares[0] = b
	case plan.OpBroadcast:
		for w := range shares {
			shares[w] = b
		}
	case plan.OpShuffle:
		ps, err := cpu.Partition(b, pd.sink.Keys, W)
		if err != nil {
			return nil, err
		}
		copy(shares, ps)
	}
	var total int64
	pd.mu.Lock()
	for w, s := range shares {
		if s == nil || s.Rows == 0 {
			continue
		}
		sizes[w] = s.Bytes()
		total += sizes[w]
		if w == self {
			pd.left[src] = append(pd.left[src], s)
		} else {
			pd.pending[src][w] = append(pd.pending[src][w], s)
		}
	}
	pd.mu.Unlock()
	return sizes, d.trackPipe(p, total)
}

// send delivers everything device src holds for device dst of node
// Peer.Node of the task's pipeline: a send may carry one unit's share, a
// coalesced message or a flushed aggregate state; delivering all pending
// data is right for each (the consumer starts only once the pipeline is
// done everywhere). Data for another node goes through the Remote
// transport; the send completes once that node stored it.
func (d *runData) send(ctx context.Context, t *scheduler.Task) error {
	src, dst, dn := int(t.Device), int(t.PeerDevice), int(t.Peer.Node)
	if src < 0 || src >= d.devices || dst < 0 || dst >= d.devices || dn < 0 || dn >= d.nodes {
		return fmt.Errorf("engine: send task %d from device %d to device %d of node %d outside %d nodes x %d devices", t.ID, src, dst, dn, d.nodes, d.devices)
	}
	if _, _, err := d.materialize(t.Pipeline, src); err != nil {
		return err
	}
	pd := &d.pipes[t.Pipeline]
	w := dn*d.devices + dst
	pd.mu.Lock()
	out := pd.pending[src][w]
	pd.pending[src][w] = nil
	if dn == d.node {
		pd.left[dst] = append(pd.left[dst], out...)
	}
	pd.mu.Unlock()
	if dn == d.node || len(out) == 0 {
		return nil
	}
	if d.remote == nil {
		return fmt.Errorf("engine: send task %d to node %d: no cluster transport", t.ID, dn)
	}
	if err := d.remote.Send(ctx, dn, int(t.Pipeline), dst, out); err != nil {
		return err
	}
	// The data now lives on the other node (its Receive counts it).
	var n int64
	for _, b := range out {
		n += batchBytes(b)
	}
	return d.trackPipe(t.Pipeline, -n)
}

// buildTable indexes what build pipeline p retained on dev into its hash
// table, in the hash-build kernel that the scheduler (and the simulator's
// cost of that task) says builds it — not lazily in the first probe, which
// put the build's time in a probing kernel while the device's other probes
// waited on the lock. A later unit on the same device (a build pipeline
// has one per device: its source is an exchange) rebuilds over all rows.
// The caller holds the device's lock (pd.devMu[dev]), not the pipeline's:
// the devices of a pipeline build their tables at the same time (under
// the pipeline's lock they took turns).
func (d *runData) buildTable(p int32, dev int) error {
	pd := &d.pipes[p]
	pd.mu.Lock()
	parts := pd.left[dev]
	pd.left[dev] = nil
	pd.mu.Unlock()
	rows, err := concat(parts)
	if err == nil && rows != nil {
		var ht *cpu.HashTable
		start := d.opClock()
		if ht, err = cpu.BuildHashTable(rows, pd.sink.Keys); err == nil {
			d.timeOp(p, pd.sink, plan.OpHashBuild.String(), dev, rows, nil, start)
			parts = []*cpu.Batch{rows}
			pd.mu.Lock()
			pd.tables[dev] = ht
			pd.mu.Unlock()
		} else {
			start.stop()
			err = fmt.Errorf("hash build: %w", err)
		}
	}
	// What arrived meanwhile stays after the indexed rows.
	pd.mu.Lock()
	pd.left[dev] = append(parts, pd.left[dev]...)
	pd.mu.Unlock()
	return err
}

// builtTable is build pipeline build's hash table on dev: built by its
// hash-build kernels, or here if none ran on dev with rows; nil where
// nothing was built on dev.
func (d *runData) builtTable(build, dev int) (*cpu.HashTable, error) {
	bp := &d.pipes[build]
	bp.devMu[dev].Lock()
	defer bp.devMu[dev].Unlock()
	bp.mu.Lock()
	ht := bp.tables[dev]
	bp.mu.Unlock()
	if ht != nil {
		return ht, nil
	}
	if err := d.buildTable(int32(build), dev); err != nil {
		return nil, fmt.Errorf("build of pipeline %d: %w", build, err)
	}
	bp.mu.Lock()
	defer bp.mu.Unlock()
	return bp.tables[dev], nil
}

// probe joins b against build pipeline op.Build's table on dev (built by
// its hash-build kernels, or here if none ran on dev with rows).
func (d *runData) probe(op *plan.Op, dev int, b *cpu.Batch) (*cpu.Batch, error) {
	j := op.Expr.(plan.Join)
	ht, err := d.builtTable(op.Build, dev)
	if err != nil {
		return nil, err
	}
	if ht == nil {
		// Nothing was built on this device.
		switch j.Kind {
		case plan.JoinAnti:
			return b, nil
		case plan.JoinLeftOuter:
			return d.zeroFilled(op.Build, b, j.Carry)
		}
		return nil, nil
	}
	return ht.Probe(b, op.Keys, j.Kind, j.Carry)
}

// zeroFilled is a left outer join of b with an empty build side: every
// probe row, with the carried columns holding their type's zero value,
// as Probe fills a row without a match. A carried column's type comes
// from the build's rows on another device; where no device holds any, it
// is int64, the type of the counts that planned left outer joins carry.
func (d *runData) zeroFilled(build int, b *cpu.Batch, carry []string) (*cpu.Batch, error) {
	if b == nil {
		return nil, nil
	}
	out := &cpu.Batch{Names: append(slices.Clone(b.Names), carry...), Cols: slices.Clone(b.Cols), Rows: b.Rows}
	bp := &d.pipes[build]
	bp.mu.Lock()
	defer bp.mu.Unlock()
	for _, c := range carry {
		if slices.Contains(b.Names, c) {
			return nil, fmt.Errorf("left outer join: carried column %q is also a probe column", c)
		}
		v := cpu.Vec{Type: cpu.TInt64}
	find:
		for _, parts := range bp.left {
			for _, part := range parts {
				if i := part.Col(c); i >= 0 {
					v = cpu.Vec{Type: part.Cols[i].Type, Scale: part.Cols[i].Scale}
					break find
				}
			}
		}
		switch v.Type {
		case cpu.TInt64, cpu.TDecimal:
			v.I64 = make([]int64, b.Rows)
		case cpu.TInt32, cpu.TDate:
			v.I32 = make([]int32, b.Rows)
		case cpu.TFloat64:
			v.F64 = make([]float64, b.Rows)
		case cpu.TBool:
			v.B = make([]bool, b.Rows)
		case cpu.TString:
			v.Off = make([]int32, b.Rows+1)
		default:
			return nil, fmt.Errorf("left outer join: carried column %q has type %d, which has no zero fill", c, v.Type)
		}
		out.Cols = append(out.Cols, v)
	}
	return out, nil
}

// copyOut (d2h) hands a result unit's output to the host.
func (d *runData) copyOut(t *scheduler.Task) error {
	pd := &d.pipes[t.Pipeline]
	if t.Unit < 0 {
		return fmt.Errorf("engine: %s pipeline %d: d2h of an aggregate state (a partial aggregate must end in an exchange)", d.plan.Name, t.Pipeline)
	}
	u := d.unit(t)
	d.mu.Lock()
	out := u.out
	u.out = nil
	d.mu.Unlock()
	d.dropUnit(t)
	if out != nil {
		pd.mu.Lock()
		pd.results = append(pd.results, out)
		pd.mu.Unlock()
	}
	return nil
}

// merge is the host's final step of a result pipeline: the devices' parts
// in one batch, re-sorted when the pipeline orders its rows (parts from
// several devices are each sorted, not globally), projected to the output
// columns.
func (d *runData) merge(t *scheduler.Task) (rows, bytes int64, err error) {
	pl := &d.plan.Pipelines[t.Pipeline]
	pd := &d.pipes[t.Pipeline]
	pd.mu.Lock()
	b, err := concat(pd.results)
	pd.results = nil
	pd.mu.Unlock()
	if err != nil {
		return 0, 0, fmt.Errorf("engine: %s result: %w", d.plan.Name, err)
	}
	if b == nil {
		return 0, 0, nil
	}
	for i := len(pl.Ops) - 1; i >= 0; i-- {
		op := &pl.Ops[i]
		if op.Kind == plan.OpSort || op.Kind == plan.OpTopK {
			if b, err = cpu.Sort(b, plan.ParseSortKeys(op.Keys), op.Limit); err != nil {
				return 0, 0, fmt.Errorf("engine: %s result: %w", d.plan.Name, err)
			}
			break
		}
	}
	if cols := pd.sink.Out; len(cols) > 0 {
		if b, err = cpu.Project(b, plan.Keep(cols...)); err != nil {
			return 0, 0, fmt.Errorf("engine: %s result: %w", d.plan.Name, err)
		}
	}
	d.result = b
	return int64(b.Rows), b.Bytes(), nil
}
