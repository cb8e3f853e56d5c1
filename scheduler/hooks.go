package scheduler

import "gostachio/plan"

// Stage is one of the per-unit stages a unit passes on its device, in
// order: read (NVMe into pinned host memory), h2d (to the device), kernel
// (the pipeline's fused streaming operators), out (a result's d2h or an
// exchange's sends). Units of a pipeline reading earlier outputs start at
// the kernel: their data is already on the device.
type Stage int8

const (
	StageRead Stage = iota
	StageH2D
	StageKernel
	StageOut
	NumStages
)

func (s Stage) String() string {
	switch s {
	case StageRead:
		return "read"
	case StageH2D:
		return "h2d"
	case StageKernel:
		return "kernel"
	case StageOut:
		return "out"
	}
	return "stage?"
}

// Hooks are a policy's decisions: every choice the state machine makes that
// a policy may want to make differently is one method here, and the state
// machine does the rest (the task graph, dependencies, memory accounting,
// exchanges, flushes). KnobHooks implements every hook from the knobs of a
// Config; a policy embeds it and overrides the hooks it decides itself.
//
// The state machine calls the hooks of one node's Scheduler from one
// goroutine, in an order fixed by the completions it was fed, so a policy
// is deterministic as long as its hooks depend only on their arguments,
// the View and the policy's own state (no clock, no I/O, no randomness, no
// goroutines, no global state). The View is read-only and valid only during
// the call; a hook must not keep it.
type Hooks interface {
	// Init is called once, before any other hook, when the node's
	// scheduler is built: a policy sizes its per-device state here.
	Init(v *View)

	// UnitBytes sizes units: the target projected bytes of one unit of
	// scan pipeline p (stored chunks are grouped up to it; a unit never
	// splits a stored chunk). 0: one stored chunk per unit. Every node
	// asks with the same arguments and must get the same answer, or two
	// nodes would deal the same chunks differently.
	UnitBytes(v *View, p int) int64
	// Deal places a scan's units on workers: the worker (node·Devices +
	// device) of the i-th unplaced unit of pipeline p, in [0,
	// v.Workers()). Like UnitBytes it must depend only on the plan and
	// its arguments: every node deals every unit and keeps its own.
	Deal(v *View, p, i int) int

	// Admit decides whether device d starts unit u at stage st now. The
	// scheduler asks only when a unit waits for st; memory is checked
	// after (a unit admitted here may still wait for its buffers).
	// Returning false stops the stage on this device for this pass.
	Admit(v *View, d int, st Stage, u UnitInfo) bool
	// Order is the order in which device d's pass serves its stages (each
	// stage starts what Admit allows before the next is served); the end
	// of pipelines (flush steps) always comes first. The returned slice
	// is read before the next call and not kept.
	Order(v *View, d int) []Stage
	// Priority ranks pipeline p when it starts: its units go before
	// those of pipelines of lower priority in every queue of every device
	// (equal priorities keep their order of arrival).
	Priority(v *View, p int) int

	// SSD places a read of bytes bytes for device d (d < 0: a node-wide
	// metadata read) on one of the node's SSDs, in [0, SSDs).
	SSD(v *View, d int, bytes int64) int
	// NIC places device d's sends on one of the node's NICs, in [0, NICs).
	NIC(v *View, d int) int

	// Sync reports whether stage st of every unit of pipeline p ends
	// with a host round trip (TaskSync) before the unit moves on.
	Sync(v *View, p int, st Stage) bool
	// FlushSync reports whether pipeline p ends on each device with one
	// host round trip (the deferred synchronization of its units).
	FlushSync(v *View, p int) bool
	// Buffer sizes the buffer reserved for unit u at stage st: pinned
	// host memory at StageRead (its reads), device memory for its input
	// at StageH2D. slot is the largest such buffer of the pipeline (a
	// fixed-size slot that any unit fits).
	Buffer(v *View, st Stage, u UnitInfo, slot int64) int64
	// MsgBytes is the exchange batching of pipeline p: each device
	// buffers what its units shuffle or gather per destination and sends
	// a buffer once it holds this many bytes (the rest at the pipeline's
	// end). 0: one message per unit and destination.
	MsgBytes(v *View, p int) int64

	// Completed is told of every completion of a task of the node, after
	// the scheduler has updated the live state (a policy that learns from
	// completions updates itself here).
	Completed(v *View, c *Completion)
	// Queued is told that a unit of device d finished stage st and waits
	// for the next one.
	Queued(v *View, d int, st Stage)
	// Passed ends every pass of device d. It returns true to ask for
	// another pass (it changed something Admit reads).
	Passed(v *View, d int) bool
}

// UnitInfo is what Admit and Buffer see of a unit.
type UnitInfo struct {
	// Pipeline is the unit's pipeline, Seq its sequence number within the
	// pipeline on this node.
	Pipeline, Seq int
	// Bytes is its projected input bytes, ReadBytes what its reads move
	// (combined reads include the gaps they read through), Out its
	// estimated (after the kernel: real) per-unit output.
	Bytes, ReadBytes, Out int64
	// Rows is its input rows.
	Rows int64
}

// PipeInfo is what a policy sees of one pipeline on the node.
type PipeInfo struct {
	// Scan: the pipeline reads a table (its units pass every stage);
	// otherwise it reads earlier pipelines' outputs.
	Scan bool
	// Sink is the pipeline breaker's kind.
	Sink plan.OpKind
	// PerUnitOut: its units have an out stage (an exchange or a result
	// without aggregation); otherwise they fold into a per-device state or
	// accumulate on the device.
	PerUnitOut bool
	// DataDep: a unit's output size depends on the data (filters,
	// probes, shuffles).
	DataDep bool
	// Started: the pipeline's units exist; Done: it finished on this
	// node.
	Started, Done bool
	// Units is the node's units of the pipeline, Left those not done yet.
	Units, Left int
	// Dependents is how many pipelines wait for it (After or Inputs).
	Dependents int
}

// Rate is the speed of one resource as the backend knows it before
// running: Bandwidth in bytes per second and the fixed Latency of one
// task. Zero fields are unknown.
type Rate struct {
	Bandwidth float64
	Latency   Time
}

// Observed is what a node's completions taught about one resource: Tasks
// tasks done moving Bytes bytes, Busy the time the resource had at least
// one of them in flight (approximately: the union of the completed tasks'
// intervals, taken in completion order), Time the sum of their durations.
type Observed struct {
	Tasks, Bytes int64
	Busy, Time   Time
}

// Rate is the achieved throughput in bytes per second while the resource
// was busy (0 before any completion).
func (o Observed) Rate() float64 {
	if o.Busy <= 0 {
		return 0
	}
	return float64(o.Bytes) * 1e9 / float64(o.Busy)
}

// Mean is the mean duration of one task (0 before any completion).
func (o Observed) Mean() Time {
	if o.Tasks == 0 {
		return 0
	}
	return o.Time / Time(o.Tasks)
}
