// Package traces is the one event model both backends report in, its
// writers and readers (Perfetto-loadable Chrome trace JSON, CSV for
// pandas/DuckDB), and the metrics defined once over it: makespan,
// per-resource busy time, utilization and bandwidth, bound and overlap
// efficiency, the starvation report and the critical path.
package traces

import (
	"fmt"

	"gostachio/traces/event"
)

// Event is one executed task of one run, as the simulator and the engine
// both report it. Times are nanoseconds since the run started.
type Event struct {
	// Run identifies the run (e.g. "q6/overlap/rep2"); one trace file may
	// hold several runs.
	Run string
	// Node and Device are the worker the task served (Device -1: node-wide
	// host work).
	Node, Device int32
	// Res is the resource the task occupied (kind, node, index).
	Res event.Resource
	// Kind is the task kind (read, h2d, kernel, ...); Op the main
	// operator of a kernel or merge ("agg-partial", "hash-probe", ...; ""
	// for transfers); Meta marks a metadata read.
	Kind event.TaskKind
	Op   string
	Meta bool
	// Pipeline, Unit: the plan pipeline and the unit within it (-1: a
	// pipeline-wide task). Table and Chunk: the stored chunk a scan unit's
	// task covers (-1 otherwise). Task is the task id within its node.
	Pipeline, Unit, Table, Chunk int32
	Task                         int32
	Start, End                   int64
	// Bytes moved (transfers) or input bytes (kernels, merges); Rows the
	// output rows of a kernel / merge, rows moved otherwise.
	Bytes, Rows int64
}

// Duration is End - Start.
func (e *Event) Duration() int64 { return e.End - e.Start }

// ResourceName is the resource as text: "nvme[0.1]" (kind[node.index]).
func (e *Event) ResourceName() string { return e.Res.String() }

// FromScheduler converts a scheduler event of run run.
func FromScheduler(run string, e event.Event) Event {
	op := ""
	if e.Kind == event.TaskKernel || e.Kind == event.TaskMerge || e.Kind == event.TaskSync {
		op = e.OpKind.String()
	}
	return Event{Run: run, Node: e.Node, Device: e.Device, Res: e.Res, Kind: e.Kind, Op: op, Meta: e.Meta,
		Pipeline: e.Pipeline, Unit: e.Unit, Table: e.Table, Chunk: e.Chunk, Task: int32(e.Task),
		Start: int64(e.Start), End: int64(e.End), Bytes: e.Bytes, Rows: e.Rows}
}

// Recorder is a event.TraceSink that keeps the events of one run.
type Recorder struct {
	Run    string
	Events []Event
}

var _ event.TraceSink = (*Recorder)(nil)

// Record implements event.TraceSink.
func (r *Recorder) Record(e event.Event) { r.Events = append(r.Events, FromScheduler(r.Run, e)) }

// Meta describes where a trace came from; every writer records it and
// every figure drawn from the trace names it.
type Meta struct {
	Title   string `json:"title"`
	Backend string `json:"backend"` // "sim" or "engine"
	// Machine is the host the run was measured on (engine) and Profile the
	// hardware profile simulated (sim) or calibrated against.
	Machine string `json:"machine,omitempty"`
	Profile string `json:"profile,omitempty"`
}

func (m Meta) String() string {
	switch {
	case m.Backend == "sim" && m.Profile != "":
		return fmt.Sprintf("simulated on profile %s", m.Profile)
	case m.Machine != "":
		return fmt.Sprintf("measured on %s", m.Machine)
	}
	return m.Backend
}
