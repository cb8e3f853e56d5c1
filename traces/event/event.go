// Package event is the vocabulary of executed work that the scheduler
// emits and package traces records and analyzes: task and resource kinds,
// resources, and the Event of one executed task. It sits below both, so
// that traces needs nothing of the scheduler; the scheduler names these
// types as its own (aliases).
package event

import (
	"fmt"
	"time"

	"gostachio/plan"
)

// Time is a point in a run, in nanoseconds since the run started: virtual
// time in the simulator, monotonic time in the engine. The scheduler never
// reads a clock; it sees Time only in Completions and Backend.Now.
type Time int64

// String formats t as a duration since the run started ("1.5ms").
func (t Time) String() string {
	if t == 0 {
		return "0s"
	}
	return time.Duration(t).String()
}

// TaskKind is what a task does, and so which resource it occupies.
type TaskKind uint8

const (
	TaskInvalid TaskKind = iota
	// TaskRead reads Bytes at Offset of file File of table Table from the
	// SSD Res.Index of the node into a pinned host buffer. Meta reads (Meta
	// true) fetch file/chunk metadata (footer, chunk index) instead of data.
	TaskRead
	// TaskH2D copies Bytes from pinned host memory to device Device over
	// its PCIe link (Res.Index = Device).
	TaskH2D
	// TaskD2H copies Bytes from device Device to host memory.
	TaskD2H
	// TaskKernel runs the fused operators Ops on device Device over Rows
	// input rows / Bytes input bytes (engine CPU backend: a worker group).
	TaskKernel
	// TaskSend transfers Bytes from (Node, Device) to (Peer.Node,
	// PeerDevice) over NIC Res.Index of Node and NIC Peer.Index of
	// Peer.Node. A send to the same node models the intra-node path the backend chooses (the sim
	// profile decides: NVLink or NIC loopback).
	TaskSend
	// TaskMerge runs host-CPU work (Ops, usually a breaker: merging partial
	// aggregates, final sort / top-k) over Rows/Bytes on node Node.
	TaskMerge
	// TaskSync is a host round trip: the host waits until device Device has
	// drained its queue and reads back a small value (e.g. a filter's output
	// count) before it can size the next step. The backend charges its sync
	// latency (profile / real cudaStreamSynchronize). Policies with deferred
	// synchronization avoid most of them.
	TaskSync
	numTaskKinds
)

// NumTaskKinds is the number of task kinds (for arrays indexed by TaskKind).
const NumTaskKinds = int(numTaskKinds)

var taskKindNames = [...]string{
	TaskInvalid: "invalid", TaskRead: "read", TaskH2D: "h2d", TaskD2H: "d2h",
	TaskKernel: "kernel", TaskSend: "send", TaskMerge: "merge", TaskSync: "sync",
}

func (k TaskKind) String() string {
	if int(k) < len(taskKindNames) {
		return taskKindNames[k]
	}
	return fmt.Sprintf("TaskKind(%d)", uint8(k))
}

// ResourceKind is a kind of hardware resource a task occupies.
type ResourceKind uint8

const (
	ResNone   ResourceKind = iota
	ResNVMe                // one SSD; Index = SSD number on the node
	ResH2D                 // host-to-device direction of a GPU's PCIe link; Index = device
	ResD2H                 // device-to-host direction; Index = device
	ResGPU                 // a GPU's compute (engine: a CPU worker group); Index = device
	ResNICOut              // a NIC's egress; Index = NIC number on the node
	ResNICIn               // a NIC's ingress; Index = NIC number on the node
	ResHost                // the node's host CPU (merges, syncs); Index = 0
	numResourceKinds
)

// NumResourceKinds is the number of resource kinds.
const NumResourceKinds = int(numResourceKinds)

var resourceKindNames = [...]string{
	ResNone: "none", ResNVMe: "nvme", ResH2D: "h2d", ResD2H: "d2h", ResGPU: "gpu",
	ResNICOut: "nic-out", ResNICIn: "nic-in", ResHost: "host",
}

func (k ResourceKind) String() string {
	if int(k) < len(resourceKindNames) {
		return resourceKindNames[k]
	}
	return fmt.Sprintf("ResourceKind(%d)", uint8(k))
}

// Resource identifies one resource instance of the cluster.
type Resource struct {
	Kind  ResourceKind
	Node  int32
	Index int32
}

func (r Resource) String() string { return fmt.Sprintf("%s[%d.%d]", r.Kind, r.Node, r.Index) }

// TaskID identifies a task within its node's scheduler: tasks of one node
// are numbered 0, 1, 2, ... in creation order. (Node, ID) is unique in a run.
type TaskID int32

// Event is one executed task, as both backends report it.
type Event struct {
	Task         TaskID
	Kind         TaskKind
	Res          Resource
	Node, Device int32
	Pipeline     int32
	Unit         int32
	// Table and Chunk are the stored chunk a read covers, or the first
	// chunk of a scan unit's other tasks (-1 when not a scan unit's).
	Table, Chunk int32
	OpKind       plan.OpKind
	Meta         bool
	Start, End   Time
	// Bytes moved (transfers) or input bytes (kernels, merges); Rows the
	// output rows of a kernel / merge, rows moved otherwise.
	Bytes, Rows int64
}

// TraceSink receives events. Run records one Event per completed task, in
// completion order; backends may record extra events of their own.
// Record must not retain pointers into the scheduler.
type TraceSink interface {
	Record(e Event)
}
