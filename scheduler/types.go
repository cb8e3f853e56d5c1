package scheduler

import (
	"context"
	"errors"
	"fmt"
	"gostachio/internal/units"

	"gostachio/plan"
	"gostachio/traces/event"
)

// The vocabulary of executed work (kinds, resources, events) lives in
// package event, below both the scheduler and traces; these are its names
// here.
type (
	Time         = event.Time
	TaskKind     = event.TaskKind
	ResourceKind = event.ResourceKind
	Resource     = event.Resource
	TaskID       = event.TaskID
	Event        = event.Event
	TraceSink    = event.TraceSink
)

const (
	TaskInvalid = event.TaskInvalid
	TaskRead    = event.TaskRead
	TaskH2D     = event.TaskH2D
	TaskD2H     = event.TaskD2H
	TaskKernel  = event.TaskKernel
	TaskSend    = event.TaskSend
	TaskMerge   = event.TaskMerge
	TaskSync    = event.TaskSync

	NumTaskKinds = event.NumTaskKinds

	ResNone   = event.ResNone
	ResNVMe   = event.ResNVMe
	ResH2D    = event.ResH2D
	ResD2H    = event.ResD2H
	ResGPU    = event.ResGPU
	ResNICOut = event.ResNICOut
	ResNICIn  = event.ResNICIn
	ResHost   = event.ResHost

	NumResourceKinds = event.NumResourceKinds
)

// Task is one unit of work on one resource. The scheduler creates and owns
// every Task; a pointer handed to Backend.Start stays valid and unchanged
// until Run returns (tasks are never moved or reused within a run). Backends
// must treat a Task as read-only.
type Task struct {
	// (The small fields are kept together: a run on a large cluster holds
	// millions of tasks.)
	ID   TaskID
	Kind TaskKind
	// Meta marks a metadata read.
	Meta bool
	// OpKind is the main operator of a kernel or merge (see Ops).
	OpKind plan.OpKind
	// Res is the resource the task occupies (see TaskKind).
	Res Resource
	// Peer is, for TaskSend, the receiver's NIC ingress; ResNone
	// otherwise.
	Peer Resource
	// Node and Device are the worker the task serves: the device whose
	// unit of data is read, copied, computed or sent. Device is -1 for
	// node-wide host work (merges, metadata).
	Node, Device int32
	// PeerDevice is the other end's device of a send.
	PeerDevice int32
	// Pipeline is the plan pipeline index; Unit the unit's sequence number
	// within that pipeline on this node (-1 for pipeline-wide tasks).
	Pipeline, Unit int32
	// Table, Chunk, Chunks: the stored chunks [Chunk, Chunk+Chunks) of
	// plan.Tables[Table] this task's unit covers (-1/0 when not a scan unit).
	Table, Chunk, Chunks int32
	// Parts is the number of destination workers of an exchange kernel
	// (its Completion.PartBytes has this length); 0 otherwise.
	Parts int32
	// Read tasks: File of the table, Offset in it, Column the first column
	// covered and Columns how many table columns the span covers (a
	// combined read covers several; gaps read through count in Bytes).
	File            int32
	Column, Columns int32
	Offset          int64
	// Ops are the operators a kernel or merge runs (a sub-slice of the
	// plan's pipeline ops; shared, read-only). OpKind (above) is the main
	// one: the pipeline breaker if Ops contains it, else the last op.
	Ops []plan.Op
	// Bytes is what a transfer moves, or a kernel / merge's input bytes.
	// Rows is the input rows of a kernel / merge (rows moved otherwise).
	Bytes, Rows int64
	// EstBytes, EstRows are the scheduler's estimate of the output of a
	// kernel / merge (from plan selectivities and widths): what it reserved
	// memory for, and what a backend without real data should report.
	EstBytes, EstRows int64
	// Tag identifies a TaskSend within its run (its node and ID); 0
	// otherwise.
	Tag uint64
	// Deps are the tasks (same node) that completed before this one could
	// start: informational for traces and tests; the scheduler enforces
	// them. Shared storage: do not append to it.
	Deps []TaskID
}

// Completion reports a finished task: what only execution knows.
type Completion struct {
	// Task is the pointer given to Backend.Start.
	Task *Task
	// Start and End are when the task began occupying its resource and when
	// it finished (Start >= the time Start was called).
	Start, End Time
	// OutBytes and OutRows are the real output of a kernel / merge. A backend without real data reports
	// Task.EstBytes / Task.EstRows.
	OutBytes, OutRows int64
	// PartBytes, for an exchange kernel (Task.Parts > 0), is the output
	// bytes per destination worker; nil means "split OutBytes evenly". The
	// scheduler reads it during Complete only; the backend keeps ownership.
	PartBytes []int64
	// Err is a failure of the task; Run stops and returns it.
	Err error
}

// Topology is the shape of the cluster as the scheduler needs it. Device d
// is paired with SSD d%SSDs and NIC d%NICs (the paper's "nearest" pairing).
type Topology struct {
	Nodes   int // nodes in the cluster (>= 1)
	Devices int // compute devices (GPUs) per node (>= 1)
	SSDs    int // NVMe drives per node (>= 1)
	NICs    int // NICs per node (>= 1)
	// DeviceMem is the usable memory of one device; PinnedMem the pinned
	// host memory of one node. Budgets (Config) may only lower them.
	DeviceMem, PinnedMem int64
	// Rates is the speed of one resource of each kind, indexed by
	// ResourceKind, as far as the backend knows it (zero: unknown): one
	// SSD (ResNVMe), one device's copy link per direction (ResH2D,
	// ResD2H), one device's streaming compute, a scan kernel's byte rate
	// (ResGPU), one NIC port per direction (ResNICOut, ResNICIn), and a
	// host round trip's latency (ResHost). The scheduler does not use
	// them; policies read them through the View.
	Rates [NumResourceKinds]Rate
}

// Validate reports a topology the scheduler cannot run on.
func (t Topology) Validate() error {
	if t.Nodes < 1 || t.Devices < 1 || t.SSDs < 1 || t.NICs < 1 {
		return fmt.Errorf("scheduler: topology needs at least one node, device, SSD and NIC: %+v", t)
	}
	if t.DeviceMem <= 0 || t.PinnedMem <= 0 {
		return fmt.Errorf("scheduler: topology needs positive device and pinned memory (device %s, pinned %s)",
			units.FormatBytes(t.DeviceMem), units.FormatBytes(t.PinnedMem))
	}
	for k, r := range t.Rates {
		if r.Bandwidth < 0 || r.Bandwidth != r.Bandwidth || r.Latency < 0 {
			return fmt.Errorf("scheduler: topology rate of %s: bandwidth %g B/s, latency %d ns: want finite, not negative", ResourceKind(k), r.Bandwidth, r.Latency)
		}
	}
	return nil
}

// Backend executes tasks: the simulator or the engine.
type Backend interface {
	// Topology is the cluster the backend runs; Run asks once, first.
	Topology() Topology
	// Now is the backend's current time (virtual or since the run began).
	Now() Time
	// Start begins executing t. It must not block on the task's work and
	// must not call back into the scheduler; the task's completion is
	// returned later by Next. An error means t could not be started at all
	// (Run stops and returns it).
	Start(t *Task) error
	// Next blocks until the next started task completes and returns its
	// completion (sim: pops the next event and advances virtual time).
	// Completions of one run are returned in nondecreasing End order. It
	// returns ErrIdle if no started task is outstanding, and ctx.Err() if
	// ctx is done first.
	Next(ctx context.Context) (Completion, error)
}

// OutputReleaser is implemented by backends that hold a pipeline's output
// as real data (the engine): the driver calls ReleaseOutput once every
// pipeline reading the output of pipeline p on node has finished
// everywhere, so the data can be dropped. It must not block on task work.
type OutputReleaser interface {
	ReleaseOutput(node, p int32)
}

// ErrIdle is returned by Backend.Next when nothing is in flight.
var ErrIdle = errors.New("scheduler: backend has no task in flight")

// ErrStuck is returned when tasks remain but none can start and none is in
// flight: typically a single unit larger than the memory budget.
var ErrStuck = errors.New("scheduler: no task can start within the memory budget")

// Policy is a scheduling policy: a name, the resolved knob values and the
// hooks that make its decisions (docs/policies.md). Build one with
// NewPolicy (registered policies plus --set overrides) or wrap a Config
// with PolicyOf.
type Policy interface {
	Name() string
	// Config returns the policy's knobs (a copy; already validated).
	Config() Config
	// Hooks returns a fresh instance of the policy's decisions for one
	// node's scheduler (each node's hooks keep their own state).
	Hooks() Hooks
}

// Result summarizes a run.
type Result struct {
	// Makespan is the End of the last completion.
	Makespan Time
	// Tasks counts completed tasks; ByKind and BytesByKind break them down.
	Tasks       int64
	ByKind      [NumTaskKinds]int64
	BytesByKind [NumTaskKinds]int64
	// PeakPinned is the most pinned host memory reserved on any node;
	// PeakDevice the most device memory reserved on any device.
	PeakPinned, PeakDevice int64
	// ResultRows and ResultBytes are the output of the final pipeline.
	ResultRows, ResultBytes int64
}
