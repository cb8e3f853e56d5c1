package scheduler

import (
	"fmt"

	"gostachio/plan"
)

// Stages a unit passes through on its device.
const (
	stRead   = iota // metadata + data reads into pinned host memory
	stH2D           // copy to the device
	stKernel        // fused operators
	stOut           // per-unit output: d2h (result) or sends (exchange)
	numStages
)

type unitState uint8

const (
	uPending unitState = iota // not started
	uStage                    // tasks of stage u.stage in flight (or its sync)
	uQueued                   // stage u.stage done, waiting for the next
	uDone
)

// unit is one chunk group (scan) or one device's input (inputs source).
type unit struct {
	pipe, seq, dev int32
	chunk, nchunks int32
	stage          int8
	state          unitState
	meta           bool  // metadata reads of its stage in flight
	pend           int32 // outstanding tasks of the current stage
	rows, bytes    int64 // input rows and projected bytes
	readBytes      int64 // bytes its data reads move (gaps included)
	pinned         int64 // pinned host reserved (reads + d2h staging)
	devRes         int64 // device reserved (input + output)
	devIn          int64 // of devRes: the input buffer
	out, outRows   int64 // per-unit output (estimate, then real)
	outPinned      int64 // of pinned: d2h staging for a result unit
	depFirst       TaskID
	depN           int32
	partOff        int32 // offset of its partition sizes in Scheduler.parts; -1
	syncing        bool  // the stage's tasks are done; its host sync is in flight
	waitsTableMeta bool
}

// pipeDev is one pipeline's state on one device of the node.
type pipeDev struct {
	units      int32 // units not yet done
	stateBytes int64 // partial aggregate state (reserved; its real size from the flush on)
	stateRows  int64
	stateEst   int64 // estimated state bytes, reserved on first use (foldEstimate)
	outBytes   int64 // materialized output retained on the device
	outRows    int64
	flush      int8 // flush step reached (see flushStep)
	pend       int32
	stateSet   bool
	depFirst   TaskID
	depN       int32
	hadUnits   bool
	// Message coalescing (Config.Msg): bytes / rows buffered per
	// destination worker, the device memory they and the coalesced sends
	// in flight hold, and how many of those sends are in flight.
	stage     []int64
	stageRows []int64
	coalRes   int64
	coal      int32
}

const (
	flNone     = iota // units still running
	flFinalize        // finalize kernel (sort / top-k / agg-final over the accumulated output, or the emission of a state an exchange sends)
	flOut             // sends / d2h of the aggregate state
	flSync            // the one deferred sync
	flDone
)

// pipe is one pipeline's state on the node.
type pipe struct {
	p          *plan.Pipeline
	idx        int32
	waiting    int  // After + Inputs pipelines not yet globally done
	consumers  int  // later pipelines reading its output, not yet done
	active     bool // units created
	localDone  bool // finished on this node
	globalDone bool // finished on every node
	aggOp      int  // index of OpAggPartial in Ops, or -1
	sink       plan.OpKind
	perUnitOut bool // units have an out stage (exchange / result without aggregation)
	dataDep    bool // a per-unit output's size depends on the data
	accumulate bool // per-unit kernel output is retained on the device
	finalize   bool // a finalize kernel runs over the accumulated output
	cols       []int
	slotRead   int64 // largest unit read bytes (fixed buffers)
	slotDev    int64 // largest unit device footprint
	tableMeta  *Task // the one metadata read (metadata caching)
	metaDone   bool
	unitOps    []plan.Op // what a unit's kernel runs
	unitFirst  int32     // the node's units of this pipeline: units[unitFirst:unitFirst+unitN]
	unitN      int32
	dependents []int32 // pipelines waiting on this one (After or Inputs)
	prio       int32   // Hooks.Priority, asked when the pipeline starts
	msg        int64   // Hooks.MsgBytes, asked when the pipeline starts
	inputs     []int32 // pipelines whose output this one reads (Inputs and probe builds)
	aggGroups  int64   // the partial aggregate's Groups (<= 0: unknown)
	aggWidth   int64   // its OutWidth (bytes per group; <= 0: unknown)
	devs       []pipeDev
	released   bool // retained output released (reported by Released)
	merge      bool // result pipeline: host merge task issued
	mergeDone  bool
	resultRows int64
	resultB    int64
}

// device is one device's queues and counters.
type device struct {
	pending  []int32 // unit ids not started, in order
	head     int
	q        [numStages - 1][]int32 // units done with stage s, waiting for s+1
	qh       [numStages - 1]int
	inflight [numStages]int32
	window   int32 // units between first read and done
	used     int64 // device memory reserved
	peak     int64
	dirty    bool
	pinWait  bool // blocked on the node's pinned budget
}

func (d *device) qlen(s int) int { return len(d.q[s]) - d.qh[s] }

func (d *device) pop(s int) int32 {
	u := d.q[s][d.qh[s]]
	d.qh[s]++
	if d.qh[s] == len(d.q[s]) {
		d.q[s] = d.q[s][:0]
		d.qh[s] = 0
	}
	return u
}

const taskBlock = 1024

// Scheduler is the state machine of one node. It is not safe for
// concurrent use; Run drives it from one goroutine.
type Scheduler struct {
	plan  *plan.Plan
	cfg   Config
	hooks Hooks
	// knob is hooks when they are exactly KnobHooks: the hot hooks are
	// then called directly, not through the interface (the same
	// decisions, without a dynamic call and its arguments per task).
	knob *KnobHooks
	view View
	// last is the completion being fed back (Complete), held here so
	// that the hooks can see it without an allocation.
	last Completion
	// prioMixed: some started pipeline has a priority other than 0, so
	// queues are kept in priority order (otherwise in order of arrival).
	prioMixed bool
	topo      Topology
	node      int32
	pinBud    int64
	devBud    int64

	blocks [][]Task // task storage; pointers stay valid
	ntasks int
	deps   []TaskID // shared storage of Task.Deps
	// doneBits has bit i set once task i has completed.
	doneBits []uint64
	ready    []*Task // tasks created since the last Ready
	out      []*Task // the slice Ready returns (reused)
	pipes    []pipe
	units    []unit
	devs     []device
	parts    []int64 // partition sizes of exchange units
	pinUsed  int64
	pinPeak  int64
	// The live state of each resource of the node (View): resBase[k] is
	// the first slot of resource kind k; bytes and tasks in flight, what
	// completions showed, the latest completion's end.
	resBase  [NumResourceKinds + 1]int32
	resBytes []int64
	resTasks []int32
	resObs   []Observed
	resEnd   []Time
	global   int // pipelines globally done
	running  int // tasks handed out by Ready and not yet completed
	active   []int32
	// finished lists pipelines newly finished on this node (Run collects).
	finished []int32
	// deliveries to other nodes produced by completed sends (Run routes).
	remote []delivery
	// releasedOut lists pipelines whose output was released (Released).
	releasedOut []int32
	err         error
}

// delivery is exchange data that landed on another node.
type delivery struct {
	node, dev, pipe int32
	bytes, rows     int64
}

// New returns the scheduler of node `node` for plan p under the knobs of
// cfg (KnobHooks) on topo. The plan must outlive the scheduler and must not
// change.
func New(p *plan.Plan, cfg Config, topo Topology, node int) (*Scheduler, error) {
	return newScheduler(p, cfg, &KnobHooks{}, topo, node)
}

// NewFor returns the scheduler of node `node` for plan p under policy pol
// (its knobs and a fresh instance of its hooks) on topo.
func NewFor(p *plan.Plan, pol Policy, topo Topology, node int) (*Scheduler, error) {
	h := pol.Hooks()
	if h == nil {
		return nil, fmt.Errorf("scheduler: policy %s has no hooks", pol.Name())
	}
	return newScheduler(p, pol.Config(), h, topo, node)
}

func newScheduler(p *plan.Plan, cfg Config, hooks Hooks, topo Topology, node int) (*Scheduler, error) {
	if err := topo.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	if node < 0 || node >= topo.Nodes {
		return nil, fmt.Errorf("scheduler: node %d outside a %d-node topology", node, topo.Nodes)
	}
	s := &Scheduler{plan: p, cfg: cfg, topo: topo, node: int32(node), hooks: hooks}
	s.view.s = s
	s.knob, _ = hooks.(*KnobHooks)
	s.pinBud = topo.PinnedMem
	if cfg.Pinned > 0 && cfg.Pinned < s.pinBud {
		s.pinBud = cfg.Pinned
	}
	s.devBud = topo.DeviceMem
	if cfg.DevMem > 0 && cfg.DevMem < s.devBud {
		s.devBud = cfg.DevMem
	}
	s.devs = make([]device, topo.Devices)
	s.initResources()
	s.pipes = make([]pipe, len(p.Pipelines))
	for i := range p.Pipelines {
		pl := &p.Pipelines[i]
		ps := &s.pipes[i]
		ps.p, ps.idx, ps.aggOp, ps.sink = pl, int32(i), -1, pl.Sink().Kind
		ps.waiting = len(pl.After) + len(pl.Source.Inputs)
		ps.devs = make([]pipeDev, topo.Devices)
		for j, op := range pl.Ops {
			switch op.Kind {
			case plan.OpAggPartial:
				ps.aggOp = j
			case plan.OpFilter, plan.OpHashProbe:
				ps.dataDep = true
			}
			if op.Selectivity != 1 && op.Kind != plan.OpScan && !op.Kind.IsBreaker() {
				ps.dataDep = true
			}
		}
		switch {
		case ps.aggOp >= 0:
			// Units fold into the per-device state; the sink acts at the flush.
		case ps.sink.IsExchange() || ps.sink == plan.OpResult:
			ps.perUnitOut = true
			if ps.sink == plan.OpShuffle {
				ps.dataDep = true
			}
		default:
			ps.accumulate = true
			ps.finalize = pl.Source.Kind == plan.SourceScan &&
				(ps.sink == plan.OpSort || ps.sink == plan.OpTopK || ps.sink == plan.OpAggFinal)
		}
		if pl.Source.Kind == plan.SourceScan {
			cols, err := p.Tables[pl.Source.Table].ColumnIndexes(pl.Ops[0].Out)
			if err != nil {
				return nil, fmt.Errorf("scheduler: pipeline %d: %w", i, err)
			}
			ps.cols = sortedInts(cols)
		}
	}
	for i := range p.Pipelines {
		pl := &p.Pipelines[i]
		ps := &s.pipes[i]
		last := len(pl.Ops) - 1
		switch {
		case ps.aggOp >= 0:
			ps.unitOps = pl.Ops[:ps.aggOp+1]
			agg := &pl.Ops[ps.aggOp]
			ps.aggGroups, ps.aggWidth = agg.Groups, int64(agg.OutWidth)
		case ps.finalize || ps.sink == plan.OpResult:
			ps.unitOps = pl.Ops[:last]
		default:
			ps.unitOps = pl.Ops
		}
		if len(ps.unitOps) == 0 {
			// A unit's kernel runs these ops; an inputs pipeline holding
			// only its sink would give its units nothing to run.
			return nil, fmt.Errorf("scheduler: plan %s: pipeline %d (%s): no operator before its %s sink for its units to run",
				p.Name, i, pl.Name, pl.Ops[last].Kind)
		}
		addInput := func(in int) {
			for _, x := range ps.inputs {
				if int(x) == in {
					return
				}
			}
			ps.inputs = append(ps.inputs, int32(in))
			s.pipes[in].consumers++
		}
		for _, in := range pl.Source.Inputs {
			addInput(in)
		}
		for _, op := range pl.Ops {
			if op.Kind == plan.OpHashProbe {
				addInput(op.Build)
			}
		}
		for _, a := range pl.After {
			s.pipes[a].dependents = append(s.pipes[a].dependents, int32(i))
		}
		for _, a := range pl.Source.Inputs {
			s.pipes[a].dependents = append(s.pipes[a].dependents, int32(i))
		}
	}
	s.hooks.Init(&s.view)
	for i := range s.pipes {
		if s.pipes[i].waiting == 0 {
			s.activate(&s.pipes[i])
		}
	}
	return s, nil
}

func sortedInts(a []int) []int {
	b := append([]int(nil), a...)
	for i := 1; i < len(b); i++ {
		for j := i; j > 0 && b[j] < b[j-1]; j-- {
			b[j], b[j-1] = b[j-1], b[j]
		}
	}
	return b
}

// Done reports whether every pipeline has finished on every node.
func (s *Scheduler) Done() bool { return s.global == len(s.pipes) }

// Err is the first error the state machine hit (a completion it cannot
// accept), or nil.
func (s *Scheduler) Err() error { return s.err }

// PeakPinned is the most pinned host memory reserved at once on the node;
// PeakDevice the most device memory reserved at once on any of its devices.
func (s *Scheduler) PeakPinned() int64 { return s.pinPeak }

// PeakDevice: see PeakPinned.
func (s *Scheduler) PeakDevice() int64 {
	var m int64
	for i := range s.devs {
		m = max(m, s.devs[i].peak)
	}
	return m
}

// Budgets returns the pinned host budget of the node and the device budget
// of each device, as resolved from the topology and the knobs.
func (s *Scheduler) Budgets() (pinned, device int64) { return s.pinBud, s.devBud }

// Usage returns the pinned host bytes reserved now and the device bytes
// reserved now on device d.
func (s *Scheduler) Usage(d int) (pinned, device int64) { return s.pinUsed, s.devs[d].used }

// Tasks returns the number of tasks created so far on the node.
func (s *Scheduler) Tasks() int { return s.ntasks }

// Task returns the task with the given id (ids are 0..Tasks()-1).
func (s *Scheduler) Task(id TaskID) *Task {
	return &s.blocks[int(id)/taskBlock][int(id)%taskBlock]
}

// newTask allocates a zeroed task with the next id and queues it to start.
func (s *Scheduler) newTask(kind TaskKind, pipeIdx, dev int32) *Task {
	if s.ntasks%taskBlock == 0 {
		s.blocks = append(s.blocks, make([]Task, 0, taskBlock))
	}
	b := &s.blocks[len(s.blocks)-1]
	*b = append(*b, Task{})
	t := &(*b)[len(*b)-1]
	t.ID = TaskID(s.ntasks)
	if s.ntasks%64 == 0 {
		s.doneBits = append(s.doneBits, 0)
	}
	s.ntasks++
	t.Kind, t.Node, t.Device, t.Pipeline = kind, s.node, dev, pipeIdx
	t.Unit, t.Table, t.Chunk, t.File, t.Column, t.PeerDevice = -1, -1, -1, -1, -1, -1
	switch kind {
	case TaskH2D:
		t.Res = Resource{Kind: ResH2D, Node: s.node, Index: dev}
	case TaskD2H:
		t.Res = Resource{Kind: ResD2H, Node: s.node, Index: dev}
	case TaskKernel:
		t.Res = Resource{Kind: ResGPU, Node: s.node, Index: dev}
	case TaskMerge, TaskSync:
		t.Res = Resource{Kind: ResHost, Node: s.node, Index: 0}
	}
	s.ready = append(s.ready, t)
	return t
}

// setDeps records deps [first, first+n) as t's dependencies.
func (s *Scheduler) setDeps(t *Task, first TaskID, n int32) {
	if n <= 0 {
		return
	}
	if cap(s.deps)-len(s.deps) < int(n) {
		s.deps = make([]TaskID, 0, max(4096, int(n)))
	}
	start := len(s.deps)
	for i := int32(0); i < n; i++ {
		s.deps = append(s.deps, first+TaskID(i))
	}
	t.Deps = s.deps[start:len(s.deps):len(s.deps)]
}

// reservePinned reserves n bytes of the node's pinned budget for device
// dev, or records that dev waits for pinned memory.
func (s *Scheduler) reservePinned(dev int32, n int64) bool {
	if s.pinUsed+n > s.pinBud {
		s.devs[dev].pinWait = true
		return false
	}
	s.pinUsed += n
	s.pinPeak = max(s.pinPeak, s.pinUsed)
	return true
}

// freePinned returns n bytes to the node's pinned budget and wakes the
// devices waiting for it.
func (s *Scheduler) freePinned(n int64) {
	s.pinUsed -= n
	if n > 0 {
		for i := range s.devs {
			if s.devs[i].pinWait {
				s.devs[i].pinWait = false
				s.devs[i].dirty = true
			}
		}
	}
}

func (s *Scheduler) reserveDev(d int32, n int64) bool {
	dv := &s.devs[d]
	if dv.used+n > s.devBud {
		return false
	}
	dv.used += n
	dv.peak = max(dv.peak, dv.used)
	return true
}

// addDev charges device memory that arrives unreserved (exchange data from
// another node); it may exceed the budget (see the package limitations).
func (s *Scheduler) addDev(d int32, n int64) {
	dv := &s.devs[d]
	dv.used += n
	dv.peak = max(dv.peak, dv.used)
}

func (s *Scheduler) freeDev(d int32, n int64) {
	s.devs[d].used -= n
	if n > 0 {
		s.devs[d].dirty = true
	}
}

func (s *Scheduler) worker(dev int32) int { return int(s.node)*s.topo.Devices + int(dev) }
func (s *Scheduler) workers() int         { return s.topo.Nodes * s.topo.Devices }
