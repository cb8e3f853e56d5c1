package engine

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"gostachio/dataset"
	"gostachio/engine/gpu"
	"gostachio/engine/storage/alloc"
	"gostachio/kernels/cpu"
	"gostachio/kernels/cuda"
	"gostachio/plan"
	"gostachio/scheduler"
)

// runData is the data of one run: what each task reads and writes.
//
// Where data lives (D devices on this node, W = nodes x D workers in the
// cluster; worker w is device w%D of node w/D):
//   - a scan unit's read buffers, then (after its h2d) its decoded batch,
//     then (after its kernel) its output until d2h or sends move it: units;
//   - what pipeline p left on device d — exchange deliveries (the self
//     share lands at the kernel, the rest at each send), and the retained
//     outputs of accumulating pipelines (hash builds, final aggregates,
//     sorts): pipes[p].left[d];
//   - exchange output of device s for worker w not yet sent:
//     pipes[p].pending[s][w] (a send to another node hands it to the
//     Remote transport; that node's Receive appends it to its left);
//   - the partial aggregate state of p on d: pipes[p].state[d], turned
//     into batches (and routed like a unit's exchange output) the first
//     time a flush send, a d2h or a consumer needs it;
//   - the hash table of build pipeline p on d, built on first probe from
//     left[p][d].
type runData struct {
	ds      *dataset.Dataset
	plan    *plan.Plan
	devices int // on this node
	mem     int64
	// node of nodes: this backend's place in a cluster (0 of 1 alone);
	// remote carries sends to other nodes.
	node, nodes int
	remote      Remote
	// verify checks each read buffer against its recorded checksum in the
	// h2d (BackendOptions.NoVerify).
	verify bool
	// opTimes, when set, records every operator the host runs
	// (BackendOptions.OpTimes).
	opTimes *OpTimes

	mu    sync.Mutex
	units map[unitKey]*unitData
	pipes []pipeData

	sizeMu sync.Mutex
	sizes  map[string]int64

	retained atomic.Int64
	peak     atomic.Int64
	ioBytes  atomic.Int64
	result   *cpu.Batch

	// gpu runs the scan pipelines marked pipeData.gpu; per device, copies
	// and kernels go to streams of their own, so one unit's upload
	// overlaps another's kernels when the policy runs them together.
	gpu        *gpu.Device
	placement  []GPUPlacement // where the scan pipelines run (GPU runs)
	gpuCopy    []*cuda.Stream
	gpuKernels []*cuda.Stream
	// gpuJoins holds the build sides the GPU row path probes, per build
	// pipeline, device and carried columns (gpuJoin), until closeGPU.
	gpuJoinMu sync.Mutex
	gpuJoins  map[gpuJoinKey]*gpu.JoinTable
}

type unitKey struct{ pipe, unit int32 }

type readPiece struct {
	off  int64
	data []byte
	buf  *alloc.Buffer
}

type unitData struct {
	reads   []readPiece
	in      []*cpu.Batch // one per stored chunk, after the copy
	gin     *gpu.Batch   // the unit's columns on the GPU (GPU scan pipelines)
	inBytes int64
	out     *cpu.Batch
}

// pipeKind mirrors how the scheduler treats a pipeline's output.
type pipeKind uint8

const (
	kindAgg        pipeKind = iota + 1 // units fold into per-device partial aggregate state
	kindExchange                       // units' output goes to other devices
	kindResult                         // units' output goes to the host result
	kindAccumulate                     // units' output stays on the device (builds, final aggregates, sorts)
)

type pipeData struct {
	mu      sync.Mutex
	kind    pipeKind
	sink    *plan.Op
	partial *plan.Op // the OpAggPartial of an agg pipeline
	left    [][]*cpu.Batch
	pending [][][]*cpu.Batch
	state   []*cpu.Aggregator
	emitted []bool
	// devMu, per device, serializes the device's long work on what the
	// pipeline retains there — folding units into state[d] and
	// materializing it (it guards state[d] and emitted[d]), building
	// tables[d] — outside mu, which guards the shared lists only: the
	// devices do that work at the same time.
	devMu []sync.Mutex
	// retained is what the pipeline's output holds in the memory count.
	retained atomic.Int64
	tables   []*cpu.HashTable
	results  []*cpu.Batch
	// gpu: the pipeline's units run on the GPU (runData.gpu).
	gpu bool
	// gpuRows, where positive, splits the pipeline: its units' first
	// gpuRows ops run on the GPU's row path, the rest on the host.
	gpuRows int
}

func newRunData(ds *dataset.Dataset, p *plan.Plan, devices int, mem int64) *runData {
	d := &runData{ds: ds, plan: p, devices: devices, mem: mem, nodes: 1, units: map[unitKey]*unitData{},
		pipes: make([]pipeData, len(p.Pipelines))}
	for i := range p.Pipelines {
		pl := &p.Pipelines[i]
		pd := &d.pipes[i]
		pd.sink = pl.Sink()
		for j := range pl.Ops {
			if pl.Ops[j].Kind == plan.OpAggPartial {
				pd.partial = &pl.Ops[j]
			}
		}
		switch {
		case pd.partial != nil:
			pd.kind = kindAgg
		case pd.sink.Kind.IsExchange():
			pd.kind = kindExchange
		case pd.sink.Kind == plan.OpResult:
			pd.kind = kindResult
		default:
			pd.kind = kindAccumulate
		}
		pd.left = make([][]*cpu.Batch, devices)
		pd.pending = make([][][]*cpu.Batch, devices)
		for s := range pd.pending {
			pd.pending[s] = make([][]*cpu.Batch, devices)
		}
		pd.state = make([]*cpu.Aggregator, devices)
		pd.emitted = make([]bool, devices)
		pd.devMu = make([]sync.Mutex, devices)
		pd.tables = make([]*cpu.HashTable, devices)
	}
	return d
}

// resizePending widens each pipeline's pending exchange output to the
// cluster's workers (newRunData makes it for one node).
func (d *runData) resizePending() {
	for i := range d.pipes {
		for s := range d.pipes[i].pending {
			d.pipes[i].pending[s] = make([][]*cpu.Batch, d.workers())
		}
	}
}

// workers is the number of exchange destinations in the cluster.
func (d *runData) workers() int { return d.nodes * d.devices }

// receive stores exchange batches another node sent to device dev.
func (d *runData) receive(pipe, dev int, batches []*cpu.Batch) error {
	if pipe < 0 || pipe >= len(d.pipes) || dev < 0 || dev >= d.devices {
		return fmt.Errorf("engine: node %d received data for pipeline %d device %d outside plan %s on %d devices", d.node, pipe, dev, d.plan.Name, d.devices)
	}
	pd := &d.pipes[pipe]
	if pd.kind != kindExchange && pd.kind != kindAgg {
		return fmt.Errorf("engine: node %d received data for pipeline %d of plan %s, which does not end in an exchange", d.node, pipe, d.plan.Name)
	}
	var n int64
	for _, b := range batches {
		n += batchBytes(b)
	}
	pd.mu.Lock()
	pd.left[dev] = append(pd.left[dev], batches...)
	pd.mu.Unlock()
	return d.trackPipe(int32(pipe), n)
}

// checkExecutable rejects plans the CPU engine cannot run: text-only
// expressions (plans made for the simulator) and partial aggregates that
// are not the last op before an exchange.
func checkExecutable(p *plan.Plan) error {
	for i := range p.Pipelines {
		pl := &p.Pipelines[i]
		for j := range pl.Ops {
			op := &pl.Ops[j]
			var ok bool
			switch op.Kind {
			case plan.OpFilter:
				ok = isTree(op.Expr)
			case plan.OpProject:
				_, ok = op.Expr.(plan.Projection)
			case plan.OpHashProbe:
				_, ok = op.Expr.(plan.Join)
			case plan.OpAggPartial, plan.OpAggFinal:
				_, ok = op.Expr.(plan.Aggs)
			default:
				ok = true
			}
			if !ok {
				return fmt.Errorf("engine: plan %s pipeline %d (%s) op %d (%s %q) has no executable expression (text-only plans run in the simulator only)",
					p.Name, i, pl.Name, j, op.Kind, op.Label)
			}
			if op.Kind == plan.OpAggPartial && (j != len(pl.Ops)-2 || !pl.Sink().Kind.IsExchange()) {
				return fmt.Errorf("engine: plan %s pipeline %d (%s): a partial aggregate must be the last op before a gather, shuffle or broadcast",
					p.Name, i, pl.Name)
			}
		}
	}
	return nil
}

func isTree(e plan.Expr) bool {
	switch e.(type) {
	case plan.Col, plan.Lit, plan.Call:
		return true
	}
	return false
}

// trackPipe is track for data that pipeline p's output holds (released
// with it by ReleaseOutput).
func (d *runData) trackPipe(p int32, n int64) error {
	d.pipes[p].retained.Add(n)
	return d.track(n)
}

// releaseOutput drops pipeline p's retained output (no consumer reads it
// any more) and returns its bytes to the budget.
func (d *runData) releaseOutput(p int32) {
	if p < 0 || int(p) >= len(d.pipes) {
		return
	}
	pd := &d.pipes[p]
	pd.mu.Lock()
	for i := range pd.left {
		pd.left[i] = nil
	}
	for i := range pd.tables {
		pd.tables[i] = nil
	}
	pd.mu.Unlock()
	d.track(-pd.retained.Swap(0))
}

// track adds n (may be negative) to the retained bytes and fails when the
// memory budget is exceeded.
func (d *runData) track(n int64) error {
	v := d.retained.Add(n)
	for {
		p := d.peak.Load()
		if v <= p || d.peak.CompareAndSwap(p, v) {
			break
		}
	}
	if n > 0 && v > d.mem {
		return fmt.Errorf("engine: plan %s holds %d MiB of intermediate data, over the %d MiB memory budget (raise --mem; spilling is not implemented)",
			d.plan.Name, v>>20, d.mem>>20)
	}
	return nil
}

func (d *runData) unit(t *scheduler.Task) *unitData {
	k := unitKey{t.Pipeline, t.Unit}
	d.mu.Lock()
	defer d.mu.Unlock()
	u := d.units[k]
	if u == nil {
		u = &unitData{}
		d.units[k] = u
	}
	return u
}

func (d *runData) dropUnit(t *scheduler.Task) {
	d.mu.Lock()
	delete(d.units, unitKey{t.Pipeline, t.Unit})
	d.mu.Unlock()
}

// filePath is the file a read task reads.
func (d *runData) filePath(t *scheduler.Task) (string, error) {
	if t.Table < 0 || int(t.Table) >= len(d.plan.Tables) {
		return "", fmt.Errorf("engine: read task %d names table %d", t.ID, t.Table)
	}
	name := d.plan.Tables[t.Table].Name
	chunk := t.Chunk
	if chunk < 0 {
		chunk = 0
	}
	path, _, err := d.ds.ChunkPath(name, int(chunk))
	if err != nil {
		return "", fmt.Errorf("engine: %w", err)
	}
	return path, nil
}

// fileSize is the size of a dataset file (cached).
func (d *runData) fileSize(path string) (int64, error) {
	d.sizeMu.Lock()
	defer d.sizeMu.Unlock()
	if n, ok := d.sizes[path]; ok {
		return n, nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return 0, fmt.Errorf("engine: %w", err)
	}
	if d.sizes == nil {
		d.sizes = map[string]int64{}
	}
	d.sizes[path] = fi.Size()
	return fi.Size(), nil
}

// addRead keeps a finished data read's buffer for the unit's copy.
func (d *runData) addRead(t *scheduler.Task, data []byte, buf *alloc.Buffer) {
	u := d.unit(t)
	d.mu.Lock()
	u.reads = append(u.reads, readPiece{off: t.Offset, data: data, buf: buf})
	d.mu.Unlock()
}

// releaseAll returns every I/O buffer still held (a failed or cancelled run).
func (d *runData) releaseAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, u := range d.units {
		for _, r := range u.reads {
			r.buf.Release()
		}
		u.reads = nil
		if u.gin != nil {
			// A failed run's streams may still hold work on the batch.
			d.syncGPU()
			u.gin.Free()
			u.gin = nil
		}
		delete(d.units, k)
	}
}
