package sim

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"gostachio/costmodel"
	"gostachio/plan"
	"gostachio/scheduler"
)

// LinkKind is the kind of a simulated link: the scheduler's resource kinds
// plus the ones only the simulator models (NVLink ports, switch up/down
// links).
type LinkKind uint8

const (
	LinkNVMe LinkKind = iota
	LinkH2D
	LinkD2H
	LinkGPU
	LinkNICOut
	LinkNICIn
	LinkHost
	LinkNVLinkOut
	LinkNVLinkIn
	LinkSwitchUp
	LinkSwitchDown
	numLinkKinds
)

var linkKindNames = [...]string{"nvme", "h2d", "d2h", "gpu", "nic-out", "nic-in", "host", "nvlink-out", "nvlink-in", "switch-up", "switch-down"}

func (k LinkKind) String() string {
	if int(k) < len(linkKindNames) {
		return linkKindNames[k]
	}
	return fmt.Sprintf("LinkKind(%d)", uint8(k))
}

// Unit is what a link's work is measured in: bytes for transfers, busy
// core-ns (GPU: device-ns) for compute.
func (k LinkKind) Unit() string {
	if k == LinkGPU || k == LinkHost {
		return "ns"
	}
	return "B"
}

// LinkInfo names one link of a cluster.
type LinkInfo struct {
	Kind  LinkKind
	Node  int
	Index int
}

// Cluster is N nodes of a Profile sharing one event queue and one network
// model: the simulator's scheduler.Backend. Every node has, per the
// profile, SSDs, a PCIe link per GPU and direction, GPU compute, NIC ports
// per direction, and a host CPU; nodes meet at a switch (full bisection, or
// per-node up/down links when oversubscribed). Device d is paired with SSD
// d%SSDs and NIC d%NICs, as scheduler.Topology says. With
// node.shared_machine the host and SSD links are built once (LinkInfo node
// 0) and every node's tasks share them.
//
// Task mapping (each task is one flow of the fluid model, Net):
//
//	read     NVMe[node][Res.Index]; latency nvme.latency; q += TaskRequests(bytes)
//	h2d/d2h  H2D|D2H[node][device]; latency pcie.latency
//	kernel   GPU[node][device] with size GPU.Work (device-ns), latency
//	         gpu.launch; kernels_on_host: Host[node], Host.Work, rate ≤
//	         kernel_threads cores, latency host.launch; a probe's working
//	         set (cost model cache term) is the input of the hash-build
//	         kernels of its table on the same node and device;
//	         gpu_scans_only: only scan units' kernels on the GPU, the
//	         others as kernels_on_host, and only scan units' h2d on PCIe
//	         (the other copies are views: no link, no time)
//	merge    Host[node], Host.Work core-ns, rate ≤ merge_threads, latency host.launch
//	sync     no link; latency sync_latency
//	send     NICOut[node][Res.Index] (+ SwitchUp[node], SwitchDown[peer]
//	         when oversubscribed) + NICIn[peer][Peer.Index], GPUDirect: +
//	         D2H of the sender's device and H2D of the receiver's; same
//	         node with intra path nvlink: NVLinkOut[dev] + NVLinkIn[peer dev];
//	         same device: no link; latency nic.latency / intra.latency;
//	         ordered_sends: one at a time per pair of nodes, in start
//	         order (a gate of capacity 1 per sending and receiving node)
//	         nic_port: a send that starts on an idle connection (not
//	         one that follows its pair's previous frame at once) and
//	         finds the other sends' windows filling its egress port's
//	         buffer waits nic_port.stall first (PortSpec)
//	         nic_line_rate: egress ports at that rate, and an ingress
//	         port while one send alone enters it; nic.bandwidth while
//	         two or more do
//	         net_cpu_cost c, between nodes: + Host[node] and Host[peer]
//	         with weight c each (one host, weight 2c, on a shared
//	         machine): the TCP stack's core-ns per byte (FlowSpec.Weights)
//
// Completions report Task.EstBytes / Task.EstRows as the output (the
// simulator has no data), and PartBytes nil (even exchange split).
type Cluster struct {
	prof  *Profile
	nodes int
	net   *Net
	topo  scheduler.Topology

	nvme, h2d, d2h, gpu, nicOut, nicIn, nvOut, nvIn [][]LinkID
	host, up, down                                  []LinkID
	info                                            []LinkInfo

	recs     []rec
	freeRecs []int32
	queued   []scheduler.Completion
	qhead    int
	calls    int
	links    []LinkID  // scratch
	weights  []float64 // scratch: a send's FlowSpec.Weights
	// tables: the rows and op of the hash-build kernels per node, device
	// and build pipeline — costmodel.TableBytes of them is the working set
	// of the probes of that table.
	tables map[tableKey]builtTable
	// hostScans: the scan pipelines a node with GPUScansOnly runs on the
	// host (plan.Pipeline.OnHost), splitScans those it splits (HostFrom);
	// SetPlacement.
	hostScans  map[int32]bool
	splitScans map[int32]int // pipeline: its HostFrom
	// gates admit read tasks (per node and SSD) and host kernels and
	// merges (per node), first come first served, where the profile
	// bounds how many run at once (costmodel.Storage.DeviceQD,
	// NodeSpec.CPUSlots); created on first use.
	gates map[gateKey]*gate
	// opKeys caches the fingerprints of the ops slices kernels run
	// (costmodel.OpKeys), by their first op, for profiled operators.
	opKeys map[*plan.Op][]string
	// exemptScale prices the kinds exempt from co-location
	// (colocationScale); nil: none.
	exemptScale func(plan.OpKind) float64
	// outputs, if set, gives kernels' and merges' real output sizes
	// (trace replay); otherwise completions report the estimates.
	outputs func(t *scheduler.Task) (bytes, rows int64, ok bool)
	// sendDelay holds sends back by that many ns before their latency,
	// by tag (BurstMakespan's staggered starts); nil otherwise.
	sendDelay map[uint64]int64
	// ports: the transfers moving through each lossy egress port
	// (Profile.NICPort), by its link; created on first use.
	ports map[LinkID]*portSends
	// startGated starts a flow a gate held back (gate.release).
	startGated func(FlowSpec)
	// analyticNet: sends move through the analytic network model
	// (NetAnalytic) instead of the fluid one.
	analyticNet bool
}

// The network models of a Cluster (SetNetwork; `sim --net`).
const (
	// NetFluid: every send is a flow of the fluid model, max-min fair
	// with every other flow on its links (the default; exact).
	NetFluid = "fluid"
	// NetAnalytic: sends between devices queue first come first served
	// at each link they cross and move at its full rate there
	// (FlowSpec.Analytic): the other tasks stay fluid, and sends share no
	// rate with them (GPUDirect sends and scan copies no longer slow each
	// other on PCIe). An approximation for large clusters: an all-to-all
	// exchange among D devices keeps ~D² transfers in flight, all in one
	// component of the fluid model, which every completion re-shares;
	// here a send costs O(links). Lossy ports' stalls (nic_port) are not
	// modelled. Its error against NetFluid is measured
	// by TestNetAnalyticError and printed by `bench sim`.
	NetAnalytic = "analytic"
)

// NetModels lists the network models SetNetwork accepts.
func NetModels() []string { return []string{NetFluid, NetAnalytic} }

// SetNetwork selects the network model of sends (NetFluid, NetAnalytic;
// "" is NetFluid). Call it before the run starts.
func (c *Cluster) SetNetwork(model string) error {
	switch model {
	case "", NetFluid:
		c.analyticNet = false
	case NetAnalytic:
		c.analyticNet = true
	default:
		return fmt.Errorf("sim: network model %q: want one of %s", model, strings.Join(NetModels(), ", "))
	}
	return nil
}

type tableKey struct{ node, device, pipeline int32 }

// builtTable is what the build kernels of one table put in it.
type builtTable struct {
	rows float64
	op   *plan.Op
}

// kernelWork is the compute work of kernel t on dev (its probes priced
// with the tables their builds made on the same node and device), and
// adds the rows reaching t's build, if it ends in one, to its pipeline's
// table.
func (c *Cluster) kernelWork(dev *costmodel.Device, t *scheduler.Task) float64 {
	if n := len(t.Ops); n > 0 && t.Ops[n-1].Kind == plan.OpHashBuild {
		// The rows reaching the build: the task's, through the
		// selectivities of the ops before it.
		rows := float64(t.Rows)
		for i := range t.Ops[:n-1] {
			if s := t.Ops[i].Selectivity; s > 0 && !math.IsNaN(s) {
				rows *= s
			}
		}
		k := tableKey{t.Node, t.Device, t.Pipeline}
		c.tables[k] = builtTable{rows: c.tables[k].rows + rows, op: &t.Ops[n-1]}
	}
	// The nodes of a shared machine run the same pipelines at once on its
	// caches: each one's working set competes with the others'.
	sharers := 1.0
	if c.prof.Node.SharedMachine {
		sharers = float64(c.nodes)
	}
	var keys []string
	if len(dev.Profiled) > 0 && len(t.Ops) > 0 {
		// A pipeline's tasks share its ops slice: fingerprint it once
		// (tasks running a prefix of it reuse the keys' prefix).
		if keys = c.opKeys[&t.Ops[0]]; len(keys) >= len(t.Ops) {
			keys = keys[:len(t.Ops)]
		} else {
			keys = costmodel.OpKeys(t.Ops)
			if c.opKeys == nil {
				c.opKeys = map[*plan.Op][]string{}
			}
			c.opKeys[&t.Ops[0]] = keys
		}
	}
	return dev.WorkKeyedBy(t.Ops, t.OpKind, t.Bytes, t.Rows, func(build int) float64 {
		bt := c.tables[tableKey{t.Node, t.Device, int32(build)}]
		if bt.op == nil {
			return 0
		}
		return costmodel.TableBytes(bt.op, bt.rows)
	}, sharers, keys, c.exemptScale)
}

// colocationScale is the factor of an op kind's price on a shared machine
// whose co-location loss it is exempt from (NodeSpec.ColocationExempt):
// Colocation for those kinds, 1 for the others; nil without exemptions.
func (c *Cluster) colocationScale() func(plan.OpKind) float64 {
	n := &c.prof.Node
	if !(n.SharedMachine && n.Colocation > 0 && n.Colocation < 1) || len(n.ColocationExempt) == 0 {
		return nil
	}
	// A factor per kind: the pricing of every kernel asks.
	var scale []float64
	for _, name := range n.ColocationExempt {
		if k, err := plan.ParseOpKind(name); err == nil {
			for int(k) >= len(scale) {
				scale = append(scale, 1)
			}
			scale[k] = n.Colocation
		}
	}
	return func(k plan.OpKind) float64 {
		if int(k) < len(scale) {
			return scale[k]
		}
		return 1
	}
}

// scanUnit reports whether t works on one unit of a scan (its table's
// chunks), not on exchanged or merged data.
func scanUnit(t *scheduler.Task) bool { return t.Table >= 0 && t.Unit >= 0 }

// SetPlacement takes the placement of p's scan pipelines (plan.Pipeline.
// OnHost, HostFrom): on a node with GPUScansOnly, an OnHost pipeline's
// uploads are views of host memory and its kernels run on the host, as
// the engine's hybrid GPU runs do. A split pipeline (HostFrom) uploads its
// units; each unit's kernel runs its first HostFrom ops on the GPU, copies
// the rows that pass back and runs the rest on the host (splitKernel).
// Other profiles ignore it. Call it before the run.
func (c *Cluster) SetPlacement(p *plan.Plan) {
	c.hostScans, c.splitScans = map[int32]bool{}, map[int32]int{}
	for i := range p.Pipelines {
		if p.Pipelines[i].OnHost {
			c.hostScans[int32(i)] = true
		} else if p.Pipelines[i].HostFrom > 0 {
			c.splitScans[int32(i)] = p.Pipelines[i].HostFrom
		}
	}
}

// splitKernel prices the kernel of a split pipeline's scan unit t (its
// first k ops on the GPU) as the engine's row path runs it: the host's
// work is the rest of the ops over the rows the GPU's share leaves
// (costmodel.Through), and that share and the copy of those rows back
// (d2h bandwidth) come before it, added to the flow's latency. The GPU and
// its D2H link are not held: one device's row path runs a unit at a time
// on a GPU that the scan units' uploads, not its kernels, keep busy.
func (c *Cluster) splitKernel(p *Profile, t *scheduler.Task, k int) (host scheduler.Task, before int64) {
	gpuPart := *t
	gpuPart.Ops = t.Ops[:k]
	host = runAfter(t, t.Ops[k:], gpuPart.Ops)
	ns := c.kernelWork(&p.GPU, &gpuPart)
	if rate := p.PCIe.D2H.PerNs(); rate > 0 {
		ns += float64(host.Bytes) / rate
	}
	before = p.GPU.Launch.Ns() + p.PCIe.Latency.Ns() + ceilNs(ns)
	return host, before
}

// runAfter is task t running ops over what leaves the ops before them
// (costmodel.Through from t's bytes and rows).
func runAfter(t *scheduler.Task, ops, before []plan.Op) scheduler.Task {
	out := *t
	b, r := costmodel.Through(before, float64(t.Bytes), float64(t.Rows))
	out.Ops, out.Bytes, out.Rows = ops, int64(b), int64(r)
	return out
}

// hostKernel prices host kernel t (a scan or inputs unit's share of the
// host, t.Ops) as the engine runs it: the ops up to its partial aggregate,
// then the fold of the rows that reach the aggregate into the device's
// state, which the engine does under the device's lock (engine's
// runData.fold), so one fold at a time per device and pipeline
// (foldGate). fold is 0 where t folds nothing (no partial aggregate, or not
// a unit: a flush's merge is a merge task).
func (c *Cluster) hostKernel(p *Profile, t *scheduler.Task) (pre, fold float64) {
	a := slices.IndexFunc(t.Ops, func(op plan.Op) bool { return op.Kind == plan.OpAggPartial })
	if a < 0 || t.Unit < 0 {
		return c.kernelWork(&p.Host, t), 0
	}
	pre = 0
	if a > 0 {
		head := *t
		head.Ops = t.Ops[:a]
		pre = c.kernelWork(&p.Host, &head)
	}
	tail := runAfter(t, t.Ops[a:], t.Ops[:a])
	return pre, c.kernelWork(&p.Host, &tail)
}

// foldGate is the lock of task t's device's partial aggregate state of its
// pipeline: one fold at a time.
func (c *Cluster) foldGate(t *scheduler.Task) *gate {
	k := gateKey{LinkHost, t.Node, t.Device, t.Pipeline + 1}
	g := c.gates[k]
	if g == nil {
		if c.gates == nil {
			c.gates = map[gateKey]*gate{}
		}
		g = &gate{capacity: 1}
		c.gates[k] = g
	}
	return g
}

// foldPhase is a host kernel's second flow: its fold, through the device's
// fold gate, on the node's host.
type foldPhase struct {
	size  float64
	limit float64
	gate  *gate
}

// gpuScanUnit: a scan unit that a GPUScansOnly node uploads to its GPU.
func (c *Cluster) gpuScanUnit(t *scheduler.Task) bool { return scanUnit(t) && !c.hostScans[t.Pipeline] }

// gpuKernel: a kernel that a GPUScansOnly node runs on its GPU.
func (c *Cluster) gpuKernel(t *scheduler.Task) bool {
	_, split := c.splitScans[t.Pipeline]
	return c.gpuScanUnit(t) && !split
}

// rec is the payload of one flow: the task it executes. It is kept small
// (a large cluster has millions of sends in flight): what only host
// kernels with a fold and sends through lossy ports need is in x.
type rec struct {
	task *scheduler.Task
	// gate the flow passed (nil: none) and its weight there.
	gate   *gate
	x      *recExtra
	weight int32
}

// recExtra is the rest of a rec, for the flows that need it.
type recExtra struct {
	// fold: the flow is a host kernel's first phase, and fold its second
	// (hostKernel), started when this one ends; the first phase's gate
	// stays held (the engine's kernel keeps its CPU slot while it waits
	// for the lock and folds). folding: the flow is that second phase,
	// passed foldGate, of a task that started at first.
	fold    *foldPhase
	folding *gate
	first   int64
	// port: a send through a lossy egress port (Profile.NICPort), its
	// LinkID + 1 (0: none), its flow, and when it moves (after a stall).
	port   LinkID
	flow   FlowID
	moving int64
}

// extra is rec r's recExtra, made on first use.
func (c *Cluster) extra(r int32) *recExtra {
	if c.recs[r].x == nil {
		c.recs[r].x = &recExtra{}
	}
	return c.recs[r].x
}

// gateKey names a gate: the kind of the resource it guards, its node
// and index.
type gateKey struct {
	kind      LinkKind
	node, idx int32
	// pipe is a fold gate's pipeline + 1 (foldGate); 0 for the others.
	pipe int32
}

// gate is a first-come-first-served admission to a resource: flows of
// total weight up to capacity run (one always may, however heavy); the
// others wait in arrival order.
type gate struct {
	capacity, used int
	waiting        []waitingFlow
	head           int
}

// waitingFlow is a flow a gate holds back: its spec (with its own copy of
// the links) and weight.
type waitingFlow struct {
	spec   FlowSpec
	weight int
}

// admit takes weight w if it fits now and nothing waits before it.
func (g *gate) admit(w int) bool {
	if g.used == 0 || (g.head == len(g.waiting) && g.used+w <= g.capacity) {
		g.used += w
		return true
	}
	return false
}

// release returns weight w and starts, in order, the waiting flows that
// now fit.
func (g *gate) release(w int, start func(FlowSpec)) {
	g.used -= w
	for g.head < len(g.waiting) {
		x := &g.waiting[g.head]
		if g.used != 0 && g.used+x.weight > g.capacity {
			return
		}
		g.used += x.weight
		start(x.spec)
		*x = waitingFlow{}
		g.head++
	}
	g.waiting, g.head = g.waiting[:0], 0
}

// gateOf is the gate task t must pass (nil: none) and its weight there.
func (c *Cluster) gateOf(t *scheduler.Task, spec *FlowSpec) (*gate, int) {
	nd := &c.prof.Node
	var k gateKey
	var capacity, w int
	switch {
	case t.Kind == scheduler.TaskRead && c.prof.NVMe.DeviceQD > 0:
		k, capacity, w = gateKey{LinkNVMe, t.Node, t.Res.Index, 0}, c.prof.NVMe.DeviceQD, max(spec.QD, 1)
	case (t.Kind == scheduler.TaskKernel || t.Kind == scheduler.TaskMerge) && nd.KernelsOnHost && nd.CPUSlots > 0:
		k, capacity, w = gateKey{LinkHost, t.Node, 0, 0}, nd.CPUSlots, 1
	case t.Kind == scheduler.TaskSend && nd.OrderedSends && t.Node != t.Peer.Node && len(spec.Links) > 0:
		// The pair's stream: keyed by the sending node and the receiving one.
		k, capacity, w = gateKey{LinkNICOut, t.Node, t.Peer.Node, 0}, 1, 1
	default:
		return nil, 0
	}
	g := c.gates[k]
	if g == nil {
		if c.gates == nil {
			c.gates = map[gateKey]*gate{}
		}
		g = &gate{capacity: capacity}
		c.gates[k] = g
	}
	return g, w
}

var _ scheduler.Backend = (*Cluster)(nil)

// MaxNodes bounds a simulated cluster: 16,384 nodes of a DGX profile hold
// about 1 GB before any task runs (measured on a 2-core VM, 2026-12-06);
// larger clusters exhaust memory in the cluster's links and schedulers.
const MaxNodes = 16384

// NewCluster builds nodes nodes (1 to MaxNodes) of profile p. p must be
// valid (ParseProfile validates) and is not modified.
func NewCluster(p *Profile, nodes int) (*Cluster, error) {
	if nodes < 1 || nodes > MaxNodes {
		return nil, fmt.Errorf("sim: %d nodes: the simulator builds clusters of 1 to %d nodes", nodes, MaxNodes)
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("sim: profile %s: %w", p.Name, err)
	}
	c := &Cluster{prof: p, nodes: nodes, net: NewNet(),
		tables: map[tableKey]builtTable{}}
	c.startGated = c.startHeld
	n := &p.Node
	c.topo = scheduler.Topology{Nodes: nodes, Devices: n.GPUs, SSDs: n.SSDs, NICs: n.NICs,
		DeviceMem: int64(n.DeviceMemory), PinnedMem: int64(n.PinnedMemory), Rates: p.Rates()}
	add := func(k LinkKind, node, idx int, capacity float64) LinkID {
		c.info = append(c.info, LinkInfo{k, node, idx})
		return c.net.AddLink(capacity)
	}
	per := func(k LinkKind, node, count int, capacity float64) []LinkID {
		ids := make([]LinkID, count)
		for i := range ids {
			ids[i] = add(k, node, i, capacity)
		}
		return ids
	}
	oversub := p.Switch.Oversubscription > 1
	for nd := 0; nd < nodes; nd++ {
		if n.SharedMachine && nd > 0 {
			c.nvme = append(c.nvme, c.nvme[0])
		} else {
			ssds := make([]LinkID, n.SSDs)
			for i := range ssds {
				c.info = append(c.info, LinkInfo{LinkNVMe, nd, i})
				ssds[i] = c.net.AddStorageLink(&p.NVMe)
			}
			c.nvme = append(c.nvme, ssds)
		}
		c.h2d = append(c.h2d, per(LinkH2D, nd, n.GPUs, p.PCIe.H2D.PerNs()))
		c.d2h = append(c.d2h, per(LinkD2H, nd, n.GPUs, p.PCIe.D2H.PerNs()))
		if !n.KernelsOnHost {
			c.gpu = append(c.gpu, per(LinkGPU, nd, n.GPUs, 1))
		}
		c.nicOut = append(c.nicOut, c.nicPorts(LinkNICOut, nd))
		c.nicIn = append(c.nicIn, c.nicPorts(LinkNICIn, nd))
		if p.Intra.Path == "nvlink" {
			c.nvOut = append(c.nvOut, per(LinkNVLinkOut, nd, n.GPUs, p.Intra.Bandwidth.PerNs()))
			c.nvIn = append(c.nvIn, per(LinkNVLinkIn, nd, n.GPUs, p.Intra.Bandwidth.PerNs()))
		}
		switch {
		case n.SharedMachine && nd > 0:
			c.host = append(c.host, c.host[0])
		case n.SharedMachine && n.Colocation > 0 && n.Colocation < 1:
			c.info = append(c.info, LinkInfo{LinkHost, nd, 0})
			c.host = append(c.host, c.net.AddSharedCoresLink(n.HostCores-n.CPUTax, n.Colocation, n.ColocationKernels))
			c.exemptScale = c.colocationScale()
		case n.SharedMachine:
			c.host = append(c.host, add(LinkHost, nd, 0, n.HostCores-n.CPUTax))
		default:
			c.host = append(c.host, add(LinkHost, nd, 0, n.HostCores))
		}
		if n.Corun > 0 && !(n.SharedMachine && nd > 0) {
			c.net.SetContention(c.host[nd], n.HostCores, n.Corun)
		}
		if p.NVMe.CPUSteal > 0 && !(n.SharedMachine && nd > 0) {
			// Reads slow the cores of the machine they are read on (on a
			// shared machine, once: its SSDs and cores are node 0's).
			c.net.SlowBy(c.host[nd], p.NVMe.CPUSteal, c.nvme[nd]...)
		}
		if oversub {
			bw := float64(n.NICs) * p.NIC.Bandwidth.PerNs() / p.Switch.Oversubscription
			c.up = append(c.up, add(LinkSwitchUp, nd, 0, bw))
			c.down = append(c.down, add(LinkSwitchDown, nd, 0, bw))
		}
	}
	return c, nil
}

// nicPorts adds node nd's NIC ports of kind k: with Profile.NICLineRate,
// egress ports at the line rate and ingress ports at it while one
// transfer enters them alone, nic.bandwidth while more do.
func (c *Cluster) nicPorts(k LinkKind, nd int) []LinkID {
	p := c.prof
	ids := make([]LinkID, p.Node.NICs)
	for i := range ids {
		c.info = append(c.info, LinkInfo{k, nd, i})
		switch {
		case p.NICLineRate > 0 && k == LinkNICOut:
			ids[i] = c.net.AddLink(p.NICLineRate.PerNs())
		case p.NICLineRate > 0:
			ids[i] = c.net.AddPortLink(p.NIC.Bandwidth.PerNs(), p.NICLineRate.PerNs())
		default:
			ids[i] = c.net.AddLink(p.NIC.Bandwidth.PerNs())
		}
	}
	return ids
}

// SetOutputs makes completed kernels and merges report fn's output sizes
// instead of Task.EstBytes / EstRows where fn answers ok (trace replay:
// real per-unit sizes). Call before the run starts.
func (c *Cluster) SetOutputs(fn func(t *scheduler.Task) (bytes, rows int64, ok bool)) {
	c.outputs = fn
}

// SetJitter makes every latency vary uniformly by ±frac, from seed (see
// Net.SetJitter). Call before the run starts.
func (c *Cluster) SetJitter(frac float64, seed uint64) { c.net.SetJitter(frac, seed) }

// Profile is the cluster's node profile.
func (c *Cluster) Profile() *Profile { return c.prof }

// Net exposes the fluid model (link statistics).
func (c *Cluster) Net() *Net { return c.net }

// Links describes every link, indexed by LinkID.
func (c *Cluster) Links() []LinkInfo { return c.info }

// Topology implements scheduler.Backend.
func (c *Cluster) Topology() scheduler.Topology { return c.topo }

// Now implements scheduler.Backend: the virtual time.
func (c *Cluster) Now() scheduler.Time { return scheduler.Time(c.net.Now()) }

func (c *Cluster) newRec(t *scheduler.Task) int32 {
	var i int32
	if k := len(c.freeRecs); k > 0 {
		i = c.freeRecs[k-1]
		c.freeRecs = c.freeRecs[:k-1]
	} else {
		c.recs = append(c.recs, rec{})
		i = int32(len(c.recs) - 1)
	}
	c.recs[i] = rec{task: t}
	return i
}

func (c *Cluster) check(t *scheduler.Task, node, idx int32, count int, what string) error {
	if node < 0 || int(node) >= c.nodes || idx < 0 || int(idx) >= count {
		return fmt.Errorf("sim: %s task %d names %s %d.%d outside the cluster (%d nodes, %d per node)", t.Kind, t.ID, what, node, idx, c.nodes, count)
	}
	return nil
}

// Start implements scheduler.Backend: it maps t to a flow (table on
// Cluster) starting now.
func (c *Cluster) Start(t *scheduler.Task) error {
	if c.net.inFlight >= MaxInFlight {
		return fmt.Errorf("%w: %d transfers and tasks in flight at once on %d nodes of %d devices (each shuffle moves data between every pair of devices); simulate fewer nodes or devices",
			ErrTooLarge, c.net.inFlight, c.nodes, c.prof.Node.GPUs)
	}
	p := c.prof
	nd := &p.Node
	spec := FlowSpec{}
	var fold *foldPhase
	ls := c.links[:0]
	node := t.Node
	switch t.Kind {
	case scheduler.TaskRead:
		if err := c.check(t, node, t.Res.Index, nd.SSDs, "ssd"); err != nil {
			return err
		}
		ls = append(ls, c.nvme[node][t.Res.Index])
		spec.Size = float64(t.Bytes)
		spec.Latency = p.NVMe.Latency.Ns()
		spec.QD = p.NVMe.TaskRequests(t.Bytes)
	case scheduler.TaskH2D, scheduler.TaskD2H:
		if err := c.check(t, node, t.Device, nd.GPUs, "device"); err != nil {
			return err
		}
		if nd.GPUScansOnly && !(t.Kind == scheduler.TaskH2D && c.gpuScanUnit(t)) {
			break // a view of host memory: no link, no time
		}
		if t.Kind == scheduler.TaskH2D {
			ls = append(ls, c.h2d[node][t.Device])
		} else {
			ls = append(ls, c.d2h[node][t.Device])
		}
		spec.Size = float64(t.Bytes)
		spec.Latency = p.PCIe.Latency.Ns()
	case scheduler.TaskKernel:
		if err := c.check(t, node, t.Device, nd.GPUs, "device"); err != nil {
			return err
		}
		if nd.KernelsOnHost || (nd.GPUScansOnly && !c.gpuKernel(t)) {
			ls = append(ls, c.host[node])
			spec.Latency = p.Host.Launch.Ns()
			spec.Limit = nd.KernelThreads
			host := *t
			if k, split := c.splitScans[t.Pipeline]; split && nd.GPUScansOnly && c.gpuScanUnit(t) && k < len(t.Ops) {
				var before int64
				host, before = c.splitKernel(p, t, k)
				spec.Latency += before
			}
			var foldWork float64
			spec.Size, foldWork = c.hostKernel(p, &host)
			if foldWork > 0 {
				fold = &foldPhase{size: foldWork, limit: spec.Limit, gate: c.foldGate(t)}
			}
		} else {
			ls = append(ls, c.gpu[node][t.Device])
			spec.Size = c.kernelWork(&p.GPU, t)
			spec.Latency = p.GPU.Launch.Ns()
		}
	case scheduler.TaskMerge:
		if err := c.check(t, node, 0, 1, "host"); err != nil {
			return err
		}
		ls = append(ls, c.host[node])
		spec.Size = p.Host.Work(t.Ops, t.OpKind, t.Bytes, t.Rows)
		spec.Latency = p.Host.Launch.Ns()
		spec.Limit = nd.MergeThreads
	case scheduler.TaskSync:
		if err := c.check(t, node, 0, 1, "host"); err != nil {
			return err
		}
		spec.Latency = p.SyncLatency.Ns()
	case scheduler.TaskSend:
		var err error
		if ls, spec, err = c.sendFlow(t, ls); err != nil {
			return err
		}
		spec.Analytic = c.analyticNet
	default:
		return fmt.Errorf("sim: task %d has kind %s, which the simulator cannot run", t.ID, t.Kind)
	}
	c.links = ls
	spec.Links = ls
	r := c.newRec(t)
	if fold != nil {
		c.extra(r).fold = fold
	}
	spec.Tag = r
	if g, w := c.gateOf(t, &spec); g != nil {
		c.recs[r].gate, c.recs[r].weight = g, int32(w)
		if !g.admit(w) {
			spec.Links = slices.Clone(ls)
			g.waiting = append(g.waiting, waitingFlow{spec, w})
			return nil
		}
	}
	port, lossy := c.lossyPort(t)
	if !lossy {
		c.net.Start(spec)
		return nil
	}
	// A transfer on an idle connection: it may find the port full.
	stall := c.stall(port)
	spec.Latency += stall
	c.joinPort(port, r, c.net.Start(spec), c.net.Now()+c.sendDelay[t.Tag]+stall)
	return nil
}

// startHeld starts a flow a gate held back. A send through a lossy port
// follows its pair's previous frame at once on its connection: it joins
// the port's transfers without a stall (PortSpec).
func (c *Cluster) startHeld(spec FlowSpec) {
	id := c.net.Start(spec)
	if t := c.recs[spec.Tag].task; t != nil {
		if port, lossy := c.lossyPort(t); lossy {
			c.joinPort(port, spec.Tag, id, c.net.Now())
		}
	}
}

// lossyPort is the egress port of send t between nodes when the profile
// makes ports lossy (Profile.NICPort).
func (c *Cluster) lossyPort(t *scheduler.Task) (LinkID, bool) {
	if c.prof.NICPort == nil || c.analyticNet || t.Kind != scheduler.TaskSend || t.Node == t.Peer.Node {
		return 0, false
	}
	return c.nicOut[t.Node][t.Res.Index], true
}

// startFold starts the fold of host kernel r (its first phase, started at
// first, just ended) through its device's fold gate; r's own gate passes
// to the fold.
func (c *Cluster) startFold(r rec, first int64) {
	f := r.x.fold
	n := c.newRec(r.task)
	c.recs[n].gate, c.recs[n].weight = r.gate, r.weight
	x := c.extra(n)
	x.folding, x.first = f.gate, first
	spec := FlowSpec{Links: []LinkID{c.host[r.task.Node]}, Size: f.size, Limit: f.limit, Tag: n}
	if !f.gate.admit(1) {
		f.gate.waiting = append(f.gate.waiting, waitingFlow{spec, 1})
		return
	}
	c.net.Start(spec)
}

// sendFlow builds the links and spec of a send (table on Cluster).
func (c *Cluster) sendFlow(t *scheduler.Task, ls []LinkID) ([]LinkID, FlowSpec, error) {
	p := c.prof
	nd := &p.Node
	var spec FlowSpec
	src, dst := t.Node, t.Peer.Node
	if err := c.check(t, src, t.Res.Index, nd.NICs, "nic"); err != nil {
		return ls, spec, err
	}
	if err := c.check(t, dst, t.Peer.Index, nd.NICs, "peer nic"); err != nil {
		return ls, spec, err
	}
	spec.Size = float64(t.Bytes)
	devOK := t.Device >= 0 && int(t.Device) < nd.GPUs && t.PeerDevice >= 0 && int(t.PeerDevice) < nd.GPUs
	if src == dst && devOK && t.Device == t.PeerDevice {
		return ls, spec, nil // a device sending to itself: nothing moves
	}
	if src == dst && p.Intra.Path == "nvlink" {
		if !devOK {
			return ls, spec, fmt.Errorf("sim: send task %d: devices %d -> %d outside the node's %d GPUs", t.ID, t.Device, t.PeerDevice, nd.GPUs)
		}
		ls = append(ls, c.nvOut[src][t.Device], c.nvIn[dst][t.PeerDevice])
		spec.Latency = p.Intra.Latency.Ns()
		return ls, spec, nil
	}
	ls = append(ls, c.nicOut[src][t.Res.Index])
	if len(c.up) > 0 && src != dst {
		ls = append(ls, c.up[src], c.down[dst])
	}
	ls = append(ls, c.nicIn[dst][t.Peer.Index])
	if p.PCIe.GPUDirectNIC && devOK {
		ls = append(ls, c.d2h[src][t.Device], c.h2d[dst][t.PeerDevice])
	}
	spec.Latency = p.NIC.Latency.Ns() + c.sendDelay[t.Tag]
	if cost := nd.NetCPUCost; cost > 0 && src != dst {
		// The network stack runs on the hosts' cores: the sender's and
		// the receiver's, one host twice over on a shared machine.
		w := c.weights[:0]
		for range ls {
			w = append(w, 1)
		}
		if c.host[src] == c.host[dst] {
			ls, w = append(ls, c.host[src]), append(w, 2*cost)
		} else {
			ls, w = append(ls, c.host[src], c.host[dst]), append(w, cost, cost)
		}
		c.weights = w
		spec.Weights = w
	}
	return ls, spec, nil
}

// Next implements scheduler.Backend: it advances virtual time to the next
// completion. A send with a matched receive yields two completions with the
// same End (the receive's on the following call).
func (c *Cluster) Next(ctx context.Context) (scheduler.Completion, error) {
	if c.qhead < len(c.queued) {
		x := c.queued[c.qhead]
		c.qhead++
		if c.qhead == len(c.queued) {
			c.queued, c.qhead = c.queued[:0], 0
		}
		return x, nil
	}
	c.calls++
	if c.calls&1023 == 0 {
		if err := ctx.Err(); err != nil {
			return scheduler.Completion{}, err
		}
	}
	var r rec
	var start, end int64
	for {
		tag, s, e, ok := c.net.Step()
		if !ok {
			if c.net.Overflowed() {
				return scheduler.Completion{}, fmt.Errorf("%w: profile %s prices a task at more than that (a bandwidth too low or a latency too high for the data?)",
					ErrTimeRange, c.prof.Name)
			}
			return scheduler.Completion{}, scheduler.ErrIdle
		}
		c.leavePort(tag)
		r, start, end = c.recs[tag], s, e
		c.recs[tag] = rec{}
		c.freeRecs = append(c.freeRecs, tag)
		if r.x == nil || r.x.fold == nil {
			break
		}
		c.startFold(r, start)
	}
	if r.gate != nil {
		r.gate.release(int(r.weight), c.startGated)
	}
	if r.x != nil && r.x.folding != nil {
		r.x.folding.release(1, c.startGated)
		start = r.x.first
	}
	t := r.task
	comp := scheduler.Completion{Task: t, Start: scheduler.Time(start), End: scheduler.Time(end)}
	switch t.Kind {
	case scheduler.TaskKernel, scheduler.TaskMerge:
		comp.OutBytes, comp.OutRows = t.EstBytes, t.EstRows
		if c.outputs != nil {
			if b, r, ok := c.outputs(t); ok {
				comp.OutBytes, comp.OutRows = b, r
			}
		}
	}
	return comp, nil
}
