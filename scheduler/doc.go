// Package scheduler is the overlap scheduler: a pure, deterministic state
// machine that expands a plan.Plan into tasks on resources (NVMe reads, PCIe
// copies, kernels, NIC transfers, host merges and syncs), decides what starts
// when under a Policy and memory budgets, and grows the task graph as
// completions report what only execution knows. It has no goroutines, no I/O
// and no clock: time enters only through Completions and Backend.Now, and
// the same completion order always yields the same tasks.
//
// The same driver loop, Run, drives the discrete-event simulator (sim/) and
// the real engine (engine/):
//
//	for !done {
//		for _, t := range sched.Ready(now) { backend.Start(t) }
//		c := backend.Next(ctx)
//		sched.Complete(c)
//	}
//
// One Scheduler runs per node; Run owns one per node of the backend's
// Topology, routes every completion to its task's node, hands exchange data
// to the receiving node, and releases a pipeline's dependents once it has
// finished on every node.
//
// # Expansion
//
// A pipeline starts when the pipelines it waits for have finished. A scan
// pipeline's surviving chunks (min/max pruning) are grouped into units of
// about Config.Chunk projected bytes and dealt round-robin to the workers
// (node, device). Each unit passes four stages on its device:
//
//	read   metadata reads (per chunk, or one per table and node with
//	       metadata caching), then data reads: one per projected column per
//	       chunk, or one per run of adjacent columns with reader combining;
//	       on the device's paired SSD, or round-robin over all SSDs
//	       (multi-path). Reserves the unit's pinned host buffer.
//	h2d    one copy of the projected bytes. Reserves the unit's device
//	       footprint (input + estimated output). Frees the pinned buffer.
//	kernel the pipeline's streaming operators, fused. Frees the input.
//	out    a result's d2h, or an exchange's sends (shuffle: one per worker
//	       with data, sizes from Completion.PartBytes; broadcast: to all;
//	       gather: to worker 0). Units that aggregate or build skip it:
//	       their output stays on the device.
//
// A stage starts a unit only while the policy admits it and the memory
// fits. Under the knobs (KnobHooks) a stage admits a unit while it has
// fewer than its limit in flight plus queued behind it (Depth; adaptive
// regulation moves each limit within [1, Depth]) and the device has fewer
// than Window units in flight. Host syncs (TaskSync) follow every stage under StageSync, and
// every data-dependent kernel with a per-unit output unless Defer, which
// instead syncs once per device at the end of the pipeline. When a device's
// units are done, the pipeline flushes there: a finalize kernel (sort, top-k,
// final aggregate over the accumulated output; for a partial aggregate
// whose sink is an exchange, the kernel that emits its groups and splits
// them by the sink), the exchange or d2h of the partial aggregate state, the
// deferred sync. A result pipeline ends with a
// host merge of its parts. A pipeline's retained output (hash table,
// received partitions, final state) is freed when every pipeline reading it
// has finished.
//
// # Policies
//
// Every decision above that a policy may make differently is a method of
// Hooks: unit size and dealing, admission, the order of stages and the
// priority of pipelines, SSD and NIC placement, syncs, buffer sizes and
// exchange batching, told of every completion. KnobHooks makes them from
// a Config's knobs; package scheduler/policies holds policies that make
// some of them otherwise, one file each, registered by name (Register).
// Hooks see the topology with each resource's rates and the live state
// through a read-only View, and stay deterministic (docs/policies.md).
//
// # Limitations
//
//   - Exchange data from another node is charged to the receiving device
//     when it lands, without a reservation, so with several nodes the device
//     budget can be exceeded (within a node, sends reserve the destination
//     first). A send's completion delivers its data: receives and
//     cross-process barriers are the distributed exchange's work.
//   - A unit never splits a stored chunk; a chunk larger than half the
//     pinned budget still makes a unit of its own, and one that does not fit
//     at all ends the run with ErrStuck.
//   - Tight device budgets with intra-node exchanges can leave every device
//     waiting for another's memory: reported as ErrStuck, never a hang.
package scheduler
