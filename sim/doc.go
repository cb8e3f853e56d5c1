// Package sim is the discrete-event backend of gostachio: a cluster of N
// nodes of a hardware Profile (sim/profiles/*.yaml) that executes the
// scheduler's tasks in virtual time (Cluster implements scheduler.Backend,
// so scheduler.Run drives it exactly as it drives the engine; each node's
// scheduler takes a pass per event of its own, as a worker's RunNode loop
// does).
//
// Model. Every task is one flow of a fluid, flow-level model (SimGrid's):
// a flow crosses up to eight links (an SSD, a PCIe direction, a GPU's
// compute, NIC ports, switch links, the host CPU), waits its latency, then
// receives its max-min fair share of every link it crosses (progressive
// filling; weighted where a unit of its rate uses more or less than a
// unit of a link, as a send uses a host's cores for its TCP stack:
// node.net_cpu_cost), recomputed only when flows join or leave and only
// over the connected component they touch, once per instant. An SSD's capacity
// follows its queue-depth curve, and with nvme.completion batch it reports
// a read done only when it runs out of work (every read of a busy period
// at its end, as a virtio disk does); compute links are measured in
// busy-ns (GPU: 1 device; host: cores, with per-flow core limits; on a
// shared machine less node.cpu_tax, what the worker processes take beside
// the priced work). Where a profile
// bounds admission (nvme.device_qd: the reader's ring; node.cpu_slots: the
// CPU engine's slots), flows past the bound wait first come first served
// before they join (Cluster's gates), as the engine queues them, instead
// of all sharing at once. Costs come from
// package costmodel. All nodes share one event queue (a typed binary heap
// ordered by time, then scheduling order) and one network; the only
// randomness is optional latency jitter from an explicit seed.
//
// Large clusters. An all-to-all exchange among D devices keeps ~D² sends
// in flight in one component of the fluid model, which every completion
// re-shares; RunConfig.Net = NetAnalytic (`sim --net analytic`) takes sends
// out of the fluid model instead: each link serves them first come first
// served at its full rate (FlowSpec.Analytic), O(links) per send, an
// approximation whose error against the fluid model TestNetAnalyticError
// measures (docs/model.md).
//
// Outputs: a Report (makespan, per-resource utilization and achieved
// bandwidth, the bound max over links of work/capacity, overlap efficiency
// bound/makespan) and, optionally, a Chrome/Perfetto trace (package traces).
// RunSim is the `gostachio sim` command.
package sim
