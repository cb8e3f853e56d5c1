package sim

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"gostachio/costmodel"
	"gostachio/plan"
)

//go:embed profiles/*.yaml
var profileFS embed.FS

// Profile is the hardware of one node and how nodes connect: what the
// simulator instantiates N times to build a Cluster. Profiles are YAML
// files (sim/profiles/NAME.yaml, embedded; or any path); every number in the
// shipped files names its source in a comment. Unknown keys are errors that
// name their line.
type Profile struct {
	Name        string   `yaml:"name"`
	Description string   `yaml:"description"`
	Node        NodeSpec `yaml:"node"`
	// NVMe is one SSD (every SSD of a node is alike).
	NVMe costmodel.Storage `yaml:"nvme"`
	// PCIe is one GPU's link, per direction.
	PCIe PCIeSpec `yaml:"pcie"`
	// NIC is one NIC port, per direction (egress and ingress are separate
	// links of this bandwidth).
	NIC costmodel.Transfer `yaml:"nic"`
	// NICLineRate, when positive, is the rate of a NIC port (per
	// direction) where its transfers do not converge from several
	// senders: every egress port, and an ingress port one transfer alone
	// enters. NIC.Bandwidth is then the rate of an ingress port that two or
	// more transfers enter. TCP flows from several senders converging on a
	// drop-tail port share it unevenly and retransmit, and an all-to-all
	// exchange ends when its slowest port does; one sender's flows share
	// its own queue without loss. On the emulated cluster of this
	// machine, bursts moved at 1.03 of the link's payload rate between 2
	// workers (one transfer per port) and at 0.77–0.87 on 3 and 4 (all to
	// all), and q5's broadcast of 3 x 411 KiB from one worker at 0.93–1.0
	// (the 2-core development VM, 2026-11). 0: NIC.Bandwidth everywhere.
	NICLineRate costmodel.Rate `yaml:"nic_line_rate,omitempty"`
	// NICPort, when given, makes every node's NIC egress port a lossy
	// drop-tail queue that TCP connections share (PortSpec); absent, the
	// fabric is lossless, as RDMA's is.
	NICPort *PortSpec `yaml:"nic_port,omitempty"`
	// Switch connects the nodes.
	Switch SwitchSpec `yaml:"switch"`
	// Intra is the path of sends between devices of one node.
	Intra IntraSpec `yaml:"intra_node"`
	// SyncLatency is what one host round trip (TaskSync) costs.
	SyncLatency costmodel.Duration `yaml:"sync_latency"`
	// GPU prices kernels; Host prices merges (and kernels when
	// Node.KernelsOnHost), per core.
	GPU  costmodel.Device `yaml:"gpu"`
	Host costmodel.Device `yaml:"host"`
	// Provenance, in calibrated profiles, names the hardware and engine
	// version the numbers were measured on (LoadProfile warns when they
	// differ from this machine's).
	Provenance *costmodel.Provenance `yaml:"provenance,omitempty"`
}

// NodeSpec is the shape of one node.
type NodeSpec struct {
	GPUs int `yaml:"gpus"`
	SSDs int `yaml:"ssds"`
	NICs int `yaml:"nics"`
	// HostCores is the host CPU's capacity for merges (busy-ns per ns).
	HostCores float64 `yaml:"host_cores"`
	// MergeThreads is the most cores one merge task uses.
	MergeThreads float64 `yaml:"merge_threads"`
	// KernelsOnHost runs "device" kernels on the host CPU (no GPU: the
	// devbox profile), priced by Host, KernelThreads cores each, sharing the
	// host's cores with merges.
	KernelsOnHost bool    `yaml:"kernels_on_host"`
	KernelThreads float64 `yaml:"kernel_threads"`
	// GPUScansOnly mirrors the engine's GPU backend (engine/gpu): only
	// the kernels of scan units run on the GPU and only their h2d copies
	// cross PCIe; the kernels of pipelines fed by an exchange or a merge
	// run on the host (priced by Host, KernelThreads cores each) and their
	// copies are views, free. Not with KernelsOnHost.
	GPUScansOnly bool `yaml:"gpu_scans_only,omitempty"`
	// CPUSlots, with KernelsOnHost, is how many kernels and merges a node
	// runs at once (the CPU engine's GOMAXPROCS slots): a task that finds
	// them taken waits for one, first come first served, where with 0
	// every task starts at once and they share the cores (processor
	// sharing), so none finishes early and nothing downstream can start.
	CPUSlots     int             `yaml:"cpu_slots,omitempty"`
	DeviceMemory costmodel.Bytes `yaml:"device_memory"`
	PinnedMemory costmodel.Bytes `yaml:"pinned_memory"`
	// SharedMachine makes every node a process of one machine (an emulated
	// cluster: `gostachio cluster`): host_cores and the SSDs are that
	// machine's, built once and shared by all nodes, so a node waiting on
	// the network leaves its cores and disk to the others (max-min fair
	// over all nodes' tasks) as the operating system does; its caches are
	// shared too, so a kernel's working set counts once per node against
	// the cost terms' cache sizes. GPUs, PCIe links and NICs stay per node.
	SharedMachine bool `yaml:"shared_machine"`
	// Corun is what the host's cores take from each other's kernels when
	// they compute at once (shared caches and memory bandwidth): with j
	// jobs on the host, each runs at 1/(1 + corun·(min(j, host_cores) −
	// 1)/(host_cores − 1)) of its price's speed, 1/(1 + corun) with every
	// core busy. `gostachio calibrate --micro` measures it: the plans'
	// leading kernels timed alone and beside the same kernel on another
	// chunk on every other core. On a shared machine it is the machine's,
	// as node 0's cores are; Colocation's loss (measured against one
	// process with every core busy) comes on top of it. 0: none.
	Corun float64 `yaml:"corun,omitempty"`
	// Colocation, with SharedMachine, is the share of the host's
	// throughput left when ColocationKernels kernels run on its host_cores
	// at once (the workers' co-location efficiency that `gostachio cluster
	// bench-sim` measures): the host keeps its full host_cores while no
	// more flows than cores are running on it, and loses throughput
	// linearly with the flows past that, down to Colocation at
	// ColocationKernels (and no further). 0: no loss.
	Colocation        float64 `yaml:"colocation,omitempty"`
	ColocationKernels int     `yaml:"colocation_kernels,omitempty"`
	// ColocationExempt names the operator kinds (plan.OpKind names) that
	// lose nothing to co-location: their price inside a kernel is
	// multiplied by Colocation, so that at ColocationKernels kernels at
	// once, where the host runs at Colocation of its cores, they run at
	// their one-process speed (with fewer kernels at once, faster than
	// it). `gostachio cluster bench-sim` exempts the aggregates: on 4
	// workers of 2 cores their thread CPU time per priced ns was what it
	// is in one process (query --op-times), while filters, builds, probes,
	// projections and shuffles took 1.3-1.8x it.
	ColocationExempt []string `yaml:"colocation_exempt,omitempty,flow"`
	// CPUTax, with SharedMachine, is the cores the worker processes take
	// beside the work the model prices while a query runs: their runtimes
	// (the collector, idle threads spinning for work), the exchange's
	// encoding, decoding and system calls past what net_cpu_cost prices.
	// The machine's host link has host_cores − cpu_tax cores. `gostachio
	// cluster bench-sim` measures it on queries it does not validate: the
	// workers' process CPU time less one process's on the same queries,
	// per second of the cluster's runs. 0: none.
	CPUTax float64 `yaml:"cpu_tax,omitempty"`
	// OrderedSends makes the sends from one node to another share one
	// ordered stream, as the engine's TCP data plane does (one connection
	// per pair of workers, frames written whole, in turn): a send's bytes
	// start moving when those of the sends started before it on that pair
	// have arrived, first come first served. Sends to other nodes and
	// from other nodes share the NIC links with it as before (max-min
	// fair). false: every send is a flow of its own from its start, as
	// with a queue pair per exchange over RDMA or a connection per send.
	OrderedSends bool `yaml:"ordered_sends,omitempty"`
	// NetCPUCost is the host CPU time the network stack spends per byte
	// a node sends, and again per byte it receives (ns of one core per
	// byte): where TCP runs on the cores the kernels run on — copies,
	// checksums, interrupts, and on an emulated cluster the veths, the
	// bridge and the shaper — a send of r bytes/ns also takes
	// NetCPUCost·r cores from the sender's host and as much from the
	// receiver's (from the one host twice on a shared machine), and
	// shares them with the kernels (FlowSpec.Weights): a busy host slows
	// the network, and the network slows the kernels. `gostachio cluster
	// bench-sim` measures it on its emulated links. 0: the network costs
	// the cores nothing (RDMA, offloads).
	NetCPUCost float64 `yaml:"net_cpu_cost,omitempty"`
}

// PCIeSpec is one GPU's PCIe link.
type PCIeSpec struct {
	H2D     costmodel.Rate     `yaml:"h2d"`
	D2H     costmodel.Rate     `yaml:"d2h"`
	Latency costmodel.Duration `yaml:"latency"`
	// GPUDirectNIC: network sends read from and write to GPU memory
	// directly, so they also cross the sender's D2H and the receiver's H2D
	// link (and share them with scan copies).
	GPUDirectNIC bool `yaml:"gpudirect_nic"`
}

// SwitchSpec is the network between nodes.
type SwitchSpec struct {
	// Oversubscription 1 (or 0) is full bisection: only NIC ports limit.
	// s > 1 gives every node an uplink and a downlink of (NICs x NIC
	// bandwidth)/s that all its cross-node traffic shares.
	Oversubscription float64 `yaml:"oversubscription"`
}

// IntraSpec is the path between devices of one node.
type IntraSpec struct {
	// Path is "nvlink" (a per-device link out and in of Bandwidth) or "nic"
	// (loopback through the NICs, like a cross-node send).
	Path      string             `yaml:"path"`
	Bandwidth costmodel.Rate     `yaml:"bandwidth"`
	Latency   costmodel.Duration `yaml:"latency"`
}

// ErrUnknownProfile is returned by LoadProfile for a name that is neither a
// shipped profile nor a readable file.
var ErrUnknownProfile = errors.New("sim: unknown profile")

// ProfileNames lists the shipped profiles.
func ProfileNames() []string {
	ents, _ := profileFS.ReadDir("profiles")
	var out []string
	for _, e := range ents {
		out = append(out, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(out)
	return out
}

// LocalProfile returns the name of the shipped profile of the CPU engine
// (node.kernels_on_host) calibrated on a machine like this one (its
// provenance's hostname, CPU, cores and engine match: no WarnProvenance
// line), the first by name; fallback where none is.
func LocalProfile(fallback string) string {
	here := costmodel.HostProvenance()
	for _, name := range ProfileNames() {
		p, err := loadProfile(name)
		if err != nil || p.Provenance == nil || !p.Node.KernelsOnHost {
			continue
		}
		if len(p.Provenance.Mismatch(here)) == 0 {
			return name
		}
	}
	return fallback
}

// LoadProfile returns a shipped profile by name ("dgx-a100") or, if
// nameOrPath contains a path separator or ends in .yaml/.yml, the profile
// in that file. A profile whose provenance names other hardware or another
// engine version than this machine's loads, with a warning on stderr
// (LoadProfileLog chooses the writer).
func LoadProfile(nameOrPath string) (*Profile, error) {
	return LoadProfileLog(nameOrPath, os.Stderr)
}

// LoadProfileLog is LoadProfile with provenance warnings written to log
// (nil: none).
func LoadProfileLog(nameOrPath string, log io.Writer) (*Profile, error) {
	p, err := loadProfile(nameOrPath)
	if err == nil && log != nil {
		WarnProvenance(p, log)
	}
	return p, err
}

// WarnProvenance writes one line to w if p's provenance differs from this
// machine and engine (costmodel.Provenance.Mismatch); profiles without
// provenance (the shipped what-if profiles) never warn.
func WarnProvenance(p *Profile, w io.Writer) {
	if p.Provenance == nil {
		return
	}
	if d := p.Provenance.Mismatch(costmodel.HostProvenance()); len(d) > 0 {
		fmt.Fprintf(w, "warning: profile %s was calibrated elsewhere: %s; its predictions may not hold here\n", p.Name, strings.Join(d, ", "))
	}
}

func loadProfile(nameOrPath string) (*Profile, error) {
	if strings.ContainsRune(nameOrPath, os.PathSeparator) || strings.HasSuffix(nameOrPath, ".yaml") || strings.HasSuffix(nameOrPath, ".yml") {
		data, err := os.ReadFile(nameOrPath)
		if err != nil {
			return nil, fmt.Errorf("sim: profile %s: %w", nameOrPath, err)
		}
		return ParseProfile(nameOrPath, data)
	}
	data, err := profileFS.ReadFile("profiles/" + nameOrPath + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("%w %q (shipped: %s; or give a path to a .yaml file)", ErrUnknownProfile, nameOrPath, strings.Join(ProfileNames(), ", "))
	}
	return ParseProfile(nameOrPath+".yaml", data)
}

// ParseProfile decodes and validates a profile; src names it in errors.
// Unknown keys are errors naming their line.
func ParseProfile(src string, data []byte) (*Profile, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var p Profile
	if err := dec.Decode(&p); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("sim: profile %s: empty", src)
		}
		return nil, fmt.Errorf("sim: profile %s: %w", src, err)
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("sim: profile %s: %w", src, withLine(data, err))
	}
	return &p, nil
}

// fieldError is a Validate error about one field, named by its keys'
// path ("nic.bandwidth"), so that ParseProfile can give its line.
type fieldError struct {
	path string
	msg  string
}

func (e *fieldError) Error() string { return e.path + " " + e.msg }

// withLine prefixes a fieldError with the line of its field in data
// (the profile's text); other errors, and fields data lacks, pass as
// they are.
func withLine(data []byte, err error) error {
	var fe *fieldError
	if !errors.As(err, &fe) {
		return err
	}
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return err
	}
	n := doc.Content[0]
	for _, key := range strings.Split(fe.path, ".") {
		var next *yaml.Node
		for i := 0; n.Kind == yaml.MappingNode && i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				next = n.Content[i+1]
			}
		}
		if next == nil {
			return err
		}
		n = next
	}
	return fmt.Errorf("line %d: %w", n.Line, err)
}

// positiveRate refuses a rate that is not a finite positive number.
func positiveRate(path string, r costmodel.Rate) error {
	if !(r > 0) || math.IsInf(float64(r), 0) {
		return &fieldError{path, fmt.Sprintf("%g B/s must be positive and finite", float64(r))}
	}
	if r < MinRate || r > MaxRate {
		return &fieldError{path, fmt.Sprintf("%s outside [%s, %s]", r.FormatBytes(), MinRate.FormatBytes(), MaxRate.FormatBytes())}
	}
	return nil
}

// The ranges a profile's figures must lie in: what any real device has,
// with margins of many orders of magnitude, and what keeps the simulated
// clock (int64 ns, MaxTime) far from its end on any dataset the planner
// sizes.
const (
	MinRate costmodel.Rate = 1    // 1 B/s
	MaxRate costmodel.Rate = 1e15 // 1 PB/s
	// MaxLatency bounds every latency and fixed cost.
	MaxLatency = costmodel.Duration(3600e9) // 1 h
	// MaxMemory bounds device and pinned memory.
	MaxMemory = costmodel.Bytes(1 << 60) // 1 EiB
)

// latencyInRange refuses a duration outside [0, MaxLatency].
func latencyInRange(path string, d costmodel.Duration) error {
	if d < 0 || d > MaxLatency {
		return &fieldError{path, fmt.Sprintf("%s outside [0s, %s]", d.Format(), MaxLatency.Format())}
	}
	return nil
}

// Validate reports a profile the simulator cannot build.
func (p *Profile) Validate() error {
	n := &p.Node
	for _, k := range n.ColocationExempt {
		if _, err := plan.ParseOpKind(k); err != nil {
			return fmt.Errorf("node.colocation_exempt: %w", err)
		}
	}
	switch {
	case p.Name == "":
		return fmt.Errorf("name is empty")
	case n.GPUs < 1 || n.SSDs < 1 || n.NICs < 1:
		return fmt.Errorf("node needs at least one gpu, ssd and nic (gpus %d, ssds %d, nics %d)", n.GPUs, n.SSDs, n.NICs)
	case n.HostCores <= 0:
		return fmt.Errorf("node.host_cores must be positive")
	case !(n.Corun >= 0) || n.Corun > 10:
		return fmt.Errorf("node.corun %g outside [0, 10]", n.Corun)
	case n.Corun > 0 && n.HostCores <= 1:
		return fmt.Errorf("node.corun needs host_cores above 1 (%g): it is what cores computing at once take from each other", n.HostCores)
	case n.Colocation < 0 || n.Colocation > 1:
		return fmt.Errorf("node.colocation %g outside [0, 1]", n.Colocation)
	case n.Colocation > 0 && float64(n.ColocationKernels) <= n.HostCores:
		return fmt.Errorf("node.colocation_kernels %d must exceed host_cores %g (the load at which colocation was measured)", n.ColocationKernels, n.HostCores)
	case len(n.ColocationExempt) > 0 && !(n.Colocation > 0):
		return fmt.Errorf("node.colocation_exempt needs node.colocation")
	case n.Colocation > 0 && !n.SharedMachine:
		return fmt.Errorf("node.colocation needs node.shared_machine")
	case !(n.CPUTax >= 0) || n.CPUTax >= n.HostCores:
		return fmt.Errorf("node.cpu_tax %g outside [0, host_cores %g)", n.CPUTax, n.HostCores)
	case n.CPUTax > 0 && !n.SharedMachine:
		return fmt.Errorf("node.cpu_tax needs node.shared_machine")
	case !(n.NetCPUCost >= 0) || math.IsInf(n.NetCPUCost, 0):
		return fmt.Errorf("node.net_cpu_cost %g must be finite and not negative", n.NetCPUCost)
	case n.MergeThreads < 0 || n.KernelThreads < 0:
		return fmt.Errorf("node.merge_threads and node.kernel_threads must not be negative")
	case n.GPUScansOnly && (n.KernelsOnHost || n.KernelThreads <= 0):
		return fmt.Errorf("node.gpu_scans_only needs kernels on the GPU (no kernels_on_host) and a positive kernel_threads for the host's kernels")
	case n.CPUSlots < 0 || (n.CPUSlots > 0 && !n.KernelsOnHost):
		return fmt.Errorf("node.cpu_slots %d: want 0, or a positive count with kernels_on_host", n.CPUSlots)
	case n.DeviceMemory <= 0:
		return &fieldError{"node.device_memory", "must be positive"}
	case n.PinnedMemory <= 0:
		return &fieldError{"node.pinned_memory", "must be positive"}
	case n.DeviceMemory > MaxMemory:
		return &fieldError{"node.device_memory", fmt.Sprintf("%s above %s", n.DeviceMemory.Format(), MaxMemory.Format())}
	case n.PinnedMemory > MaxMemory:
		return &fieldError{"node.pinned_memory", fmt.Sprintf("%s above %s", n.PinnedMemory.Format(), MaxMemory.Format())}
	}
	for _, d := range []struct {
		path string
		d    costmodel.Duration
	}{{"nvme.latency", p.NVMe.Latency}, {"pcie.latency", p.PCIe.Latency}, {"nic.latency", p.NIC.Latency},
		{"intra_node.latency", p.Intra.Latency}, {"sync_latency", p.SyncLatency}, {"gpu.launch", p.GPU.Launch}, {"host.launch", p.Host.Launch}} {
		if err := latencyInRange(d.path, d.d); err != nil {
			return err
		}
	}
	for _, r := range []struct {
		path string
		r    costmodel.Rate
	}{{"nvme.bandwidth", p.NVMe.Bandwidth}, {"pcie.h2d", p.PCIe.H2D}, {"pcie.d2h", p.PCIe.D2H}, {"nic.bandwidth", p.NIC.Bandwidth}} {
		if err := positiveRate(r.path, r.r); err != nil {
			return err
		}
	}
	switch {
	case p.NICLineRate != 0 && positiveRate("nic_line_rate", p.NICLineRate) != nil:
		return positiveRate("nic_line_rate", p.NICLineRate)
	case p.NICLineRate != 0 && !(p.NICLineRate >= p.NIC.Bandwidth):
		return fmt.Errorf("nic_line_rate %g below nic.bandwidth %g: a port that transfers do not converge on moves at least as fast as one they do", float64(p.NICLineRate), float64(p.NIC.Bandwidth))
	case p.Switch.Oversubscription < 0:
		return fmt.Errorf("switch.oversubscription must not be negative")
	}
	switch p.Intra.Path {
	case "nic":
	case "nvlink":
		if err := positiveRate("intra_node.bandwidth", p.Intra.Bandwidth); err != nil {
			return fmt.Errorf("%w for path nvlink", err)
		}
	default:
		return fmt.Errorf("intra_node.path %q: want nvlink or nic", p.Intra.Path)
	}
	if err := p.NVMe.Validate(); err != nil {
		return fmt.Errorf("nvme: %w", err)
	}
	if err := p.NICPort.validate(); err != nil {
		return fmt.Errorf("nic_port: %w", err)
	}
	return nil
}
