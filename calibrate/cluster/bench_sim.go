package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"gostachio/costmodel"
	"gostachio/dataset"
	"gostachio/engine"
	ecluster "gostachio/engine/cluster"
	"gostachio/internal/diskref"
	"gostachio/internal/stats"
	"gostachio/sim"
)

// Simulator against the emulated cluster (`gostachio cluster bench-sim`):
// each query runs Reps times on a --netns cluster with shaped links, and
// once in the simulator on a profile derived from a calibrated one for the
// same topology. The engine's median comes with its distribution-free 95%
// interval (stats.MedianRankCI), so an error can be read against the
// engine's own spread.

// SimBenchOptions configure BenchSim.
type SimBenchOptions struct {
	// Exe is this binary (workers and `sim` run from it).
	Exe string
	// Nodes, Link, Devices (per worker) and Data describe the cluster;
	// each of Queries runs Reps times (the median counts).
	Nodes   int
	Link    ecluster.Link
	Devices int
	Data    string
	Queries []string
	Reps    int
	// Warmup runs of each query come first on the same workers and are
	// not counted: a worker's first runs grow its heap onto memory never
	// touched (a page fault per 4 KiB), which the simulator does not model.
	Warmup int
	// Order is how the runs are laid out: OrderInterleaved (the default)
	// runs Warmup+Reps rounds in one launch, each round every query once
	// in an order drawn from Seed (BenchSimOrder); OrderGrouped runs each
	// query's runs back to back in a launch of its own.
	Order string
	Seed  uint64
	// Profile is the calibrated profile (.yaml) the simulated one derives
	// from; ProfileOut is where the derived one is written.
	Profile, ProfileOut string
	// Latency is the simulated NIC latency when the link's delay is not
	// emulated (no netem): the measured one-way latency of the veth path.
	Latency time.Duration
	// Cores is this machine's CPU count shared by the workers (0:
	// runtime.NumCPU).
	Cores int
	// Colocation is the share of the cores' single-process speed the
	// workers get together (0: measured first, MeasureColocation; 1: the
	// cores as one process gets them).
	Colocation float64
	// ColocationDuration and ColocationRounds size that measurement
	// (0: 1 s and 18 rounds). Rounds of one launch spread from 0.45 to
	// 0.95 here; on 12 launches the median of 18 put 35 of 48 cases within
	// 10% where the median of their first 6 put 25 (the 2-core development VM, 2026-11).
	ColocationDuration time.Duration
	ColocationRounds   int
	// ColocationFrom are earlier launches' --json outputs whose
	// co-location rounds are pooled with this launch's own: the profile's
	// co-location is the median of them all (LoadColocationRounds). Not
	// with a given Colocation.
	ColocationFrom []string
	// FabricFrom are earlier launches' --json outputs whose all-to-all
	// burst rounds, on the same link and of the same shape, are pooled with
	// this launch's own: the fabric's share is fitted to the median of them
	// all (LoadFabricRounds). Not with a given FabricEfficiency.
	FabricFrom []string
	// ColocationExempt are the kinds the derived profile exempts from the
	// co-location loss (Derivation.ColocationExempt; nil: none).
	ColocationExempt []string
	// NetCPUCost is what the network stack takes from the cores, ns of
	// one core per byte at each end (sim node.net_cpu_cost; 0: measured
	// first on the link, MeasureNetCPU; negative: none).
	NetCPUCost float64
	// NetCPUDuration is the long run of that measurement.
	NetCPUDuration time.Duration
	// NetCPUFrom picks which of the measurement's figures prices the
	// network: NetCPUSoftirq (default: the machine's interrupt time while
	// the stream runs) or NetCPUBusy (its whole busy time). Both are
	// printed and kept in the rows. With the disk rescale, 19 launches
	// at 10 and 1 Gbit/s put 73 of 76 cases within 10% priced with the
	// interrupt figure and 70 with the busy one; the busy figure
	// over-predicted q3 and q5 at 10 Gbit/s by about 6%, where the
	// stack's CPU comes out of idle time (the 2-core development VM, 2026-11).
	NetCPUFrom string
	// CPUTax is the cores the workers take beside the model while a query
	// runs (Derivation.CPUTax; 0: measured first on TaxQueries,
	// MeasureCPUTax; negative: none).
	CPUTax float64
	// TaxQueries are the queries the tax is measured on (default
	// DefaultTaxQueries); none may be one the launch validates.
	TaxQueries []string
	// FabricEfficiency is the share of the link's payload rate a port
	// moves in a query's all-to-all exchanges (Derivation.FabricEfficiency;
	// 0: measured first with all-to-all bursts, MeasureBurst, and fitted to
	// the derived profile, FitFabricEfficiency; 1: the full rate).
	FabricEfficiency float64
	// RescaleCPU has rank 0 time the CPU reference after every query
	// (the worker's --cpu-reference-every, References) and scales the simulator's host
	// prices by the mean of the timed runs' references over the profile's
	// host.reference (sim --cpu-slowdown), as `validate --rescale-cpu`
	// does: this machine's CPU runs at two speeds, holding one for
	// seconds, and the engine's medians move with the share of slow time.
	RescaleCPU bool
	// RescaleDisk has rank 0 time the disk reference after every query
	// (the worker's --disk-reference-every, References, shaped by the derived profile's
	// storage model) and scales the simulator's NVMe bandwidth by the
	// timed runs' references' throughput over that model's
	// (diskref.ModelBps; sim --disk-speedup), as `validate
	// --rescale-disk` does: the workers read the dataset from this
	// machine's virtio disk, whose speed moves by the hour.
	RescaleDisk bool
}

// The run layouts of SimBenchOptions.Order.
const (
	OrderInterleaved = "interleaved"
	OrderGrouped     = "grouped"
)

// DefaultColocationRounds is bench-sim's co-location rounds when none
// are given (SimBenchOptions.ColocationRounds).
const DefaultColocationRounds = 18

// SimBenchRow is one query's comparison.
type SimBenchRow struct {
	Query  string    `json:"query"`
	Engine []float64 `json:"engine_s"` // the timed runs, in the order they ran
	// CI is the engine's median with its 95% median-rank interval
	// (stats.MedianRankCI; from 6 runs on).
	CI    stats.MedianInterval `json:"engine_median_ci95"`
	Sim   float64              `json:"sim_s"`
	Error float64              `json:"error"` // (sim - median engine) / median engine
	// ErrorLo and ErrorHi are the error against the interval's ends,
	// (sim − CI.Hi)/CI.Hi and (sim − CI.Lo)/CI.Lo: the range the error
	// could take for any engine median the runs cannot rule out. InCI is
	// whether Sim lies inside the interval (the runs cannot tell the
	// simulated time from the engine's).
	ErrorLo float64 `json:"error_ci95_lo"`
	ErrorHi float64 `json:"error_ci95_hi"`
	InCI    bool    `json:"sim_in_ci95"`
	SentMiB float64 `json:"sent_mib"`
	// With SimBenchOptions.RescaleCPU: CPURatio is the CPU reference
	// beside the engine over its time at calibration, and Sim is priced
	// with the host's prices scaled by it. With RescaleDisk: DiskRatio is
	// the disk reference's throughput beside the engine over the
	// profile's model of it, and Sim is priced with the NVMe bandwidth
	// scaled by it. With either, SimUnscaled is priced with neither;
	// with both, SimCPUOnly and SimDiskOnly with one each, so that one
	// launch's runs are priced all four ways.
	CPURatio    float64 `json:"cpu_ratio,omitempty"`
	DiskRatio   float64 `json:"disk_ratio,omitempty"`
	SimUnscaled float64 `json:"sim_unscaled_s,omitempty"`
	SimCPUOnly  float64 `json:"sim_cpu_only_s,omitempty"`
	SimDiskOnly float64 `json:"sim_disk_only_s,omitempty"`
	// Colocation and NetCPUCost are the derived profile's (measured or
	// given; 1 and 0: none).
	Colocation float64 `json:"colocation"`
	NetCPUCost float64 `json:"net_cpu_cost"`
	// NetCPUBusy and NetCPUSoftirq are the network CPU measurement's two
	// figures (MeasureNetCPU: Cost and SoftirqCost; 0: not measured), one
	// of which is NetCPUCost (SimBenchOptions.NetCPUFrom), so that the
	// launch's runs can be priced with the other offline.
	NetCPUBusy    float64 `json:"net_cpu_cost_busy,omitempty"`
	NetCPUSoftirq float64 `json:"net_cpu_cost_softirq,omitempty"`
	// CPUTax is the derived profile's node.cpu_tax (0: none), CPUTaxRuns
	// its measurement when measured, and SimNoTax the query simulated
	// without it, so that one set of engine runs is priced both ways.
	CPUTax     float64       `json:"cpu_tax,omitempty"`
	CPUTaxRuns *CPUTaxResult `json:"cpu_tax_runs,omitempty"`
	SimNoTax   float64       `json:"sim_no_tax_s,omitempty"`
	// ColocationRatios are the co-location measurement's rounds, each
	// together / alone (Colocation is their median), so that a launch's
	// rows can be re-priced offline with another estimator; empty when
	// --colocation gave it.
	ColocationRatios []float64 `json:"colocation_ratios,omitempty"`
	// ColocationPooled is how many rounds, of how many launches,
	// Colocation is the median of when --colocation-from pooled earlier
	// launches' with ColocationRatios (0: this launch's alone).
	ColocationPooled         int `json:"colocation_pooled_rounds,omitempty"`
	ColocationPooledLaunches int `json:"colocation_pooled_launches,omitempty"`
	// ColocationOwn and SimOwnColocation, when the co-location was
	// pooled: this launch's own measurement and the query simulated at
	// it, so that one set of engine runs is priced both ways.
	ColocationOwn    float64 `json:"colocation_own,omitempty"`
	SimOwnColocation float64 `json:"sim_own_colocation_s,omitempty"`
	// ColocationExempt are the operator kinds the derived profile exempts
	// from the co-location loss (node.colocation_exempt; empty: none).
	ColocationExempt []string `json:"colocation_exempt,omitempty"`
	// FabricEfficiency is the derived profile's (1: the full payload
	// rate). Fabric is its measurement when bench-sim made one, and
	// SimFullLink the query simulated at the full rate, so that one set of
	// engine runs is priced both ways.
	FabricEfficiency float64            `json:"fabric_efficiency,omitempty"`
	Fabric           *FabricBenchResult `json:"fabric,omitempty"`
	SimFullLink      float64            `json:"sim_full_link_s,omitempty"`
	// FabricOwn and SimOwnFabric, when --fabric-from pooled the bursts
	// (Fabric.Pooled): this launch's own share and the query simulated at
	// it.
	FabricOwn    float64 `json:"fabric_own,omitempty"`
	SimOwnFabric float64 `json:"sim_own_fabric_s,omitempty"`
	// ColocationLoop is set in rows of earlier versions whose co-location
	// came from the queries' operators, with the hash loop's beside it;
	// LoadColocationRounds does not pool such rows. 0 in the rows written
	// now.
	ColocationLoop float64 `json:"colocation_loop,omitempty"`
	// Launch numbers the launch of BenchSimLaunches the row comes from
	// (from 1; 0: a single launch).
	Launch int `json:"launch,omitempty"`
	// Link is the --link the cluster ran on (Link.String), Nodes and
	// Devices its shape, so that pooled rows can be checked to come from
	// one configuration (LoadLaunches).
	Link    string `json:"link,omitempty"`
	Nodes   int    `json:"nodes,omitempty"`
	Devices int    `json:"devices,omitempty"`
}

// The figures of the network CPU measurement bench-sim can price with
// (SimBenchOptions.NetCPUFrom).
const (
	NetCPUBusy    = "busy"
	NetCPUSoftirq = "softirq"
)

// BenchSimOrder returns the query list of an interleaved launch: rounds
// rounds, each running every query once, in an order drawn afresh for
// every round from seed (Fisher–Yates on a PCG stream). Run back to back
// in blocks, two identical systems can look up to 38% apart on a noisy
// machine (Abedi & Brecht, ICPE'17, REFERENCES.md); interleaved in random
// order, a drift of the machine reaches every query alike and no query
// always follows the same other one. The same arguments give the same
// list.
func BenchSimOrder(queries []string, rounds int, seed uint64) []string {
	rng := rand.New(rand.NewPCG(seed, 0x6265_6e63_682d_7369)) // "bench-si"
	out := make([]string, 0, rounds*len(queries))
	round := slices.Clone(queries)
	for range rounds {
		rng.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
		out = append(out, round...)
	}
	return out
}

// workerResult is what bench-sim reads of a worker's result (`gostachio
// worker --format json`): the query, its time and the bytes it sent, and
// the references rank 0 timed after it (References; 0: none).
type workerResult struct {
	Query              string  `json:"query"`
	Seconds            float64 `json:"seconds"`
	SentBytes          int64   `json:"sent_bytes"`
	ReferenceNs        int64   `json:"cpu_reference_ns"`
	DiskReferenceNs    int64   `json:"disk_reference_ns"`
	DiskReferenceBytes int64   `json:"disk_reference_bytes"`
}

// diskReading is one disk reference: the bytes it read and the
// nanoseconds they took.
type diskReading struct {
	bytes, ns int64
}

// launchRefs are the references rank 0 timed after a launch's timed runs
// (none where 0): CPU reference times (cpu_reference_ns) and disk
// references (disk_reference_bytes read in disk_reference_ns).
type launchRefs struct {
	cpu  []int64
	disk []diskReading
}

// timedRuns checks that the results of a launch answer its query list one
// for one and returns each query's timed seconds, in order, past its first
// warmup runs, with the bytes it sent, and appends to refs the references
// timed after those runs.
func timedRuns(list []string, res []workerResult, warmup int, times map[string][]float64, sent map[string]float64, refs *launchRefs) error {
	if len(res) != len(list) {
		return fmt.Errorf("%d results for %d runs", len(res), len(list))
	}
	seen := make(map[string]int)
	for i, q := range list {
		if !strings.EqualFold(res[i].Query, q) {
			return fmt.Errorf("result %d is of %q, not of %q", i+1, res[i].Query, q)
		}
		if seen[q]++; seen[q] <= warmup {
			continue
		}
		times[q] = append(times[q], res[i].Seconds)
		sent[q] = float64(res[i].SentBytes) / (1 << 20)
		if r := res[i].ReferenceNs; r > 0 {
			refs.cpu = append(refs.cpu, r)
		}
		if r := res[i]; r.DiskReferenceNs > 0 && r.DiskReferenceBytes > 0 {
			refs.disk = append(refs.disk, diskReading{bytes: r.DiskReferenceBytes, ns: r.DiskReferenceNs})
		}
	}
	return nil
}

// simBenchRow compares the simulated time sim with the engine's runs.
func simBenchRow(q string, engine []float64, sim, sentMiB float64) SimBenchRow {
	ci := stats.MedianRankCI(engine, 0.95)
	return SimBenchRow{Query: q, Engine: engine, CI: ci, Sim: sim, SentMiB: sentMiB,
		Error:   (sim - ci.Median) / ci.Median,
		ErrorLo: (sim - ci.Hi) / ci.Hi, ErrorHi: (sim - ci.Lo) / ci.Lo,
		InCI: ci.OK && ci.Lo <= sim && sim <= ci.Hi}
}

// TCPPayloadShare is the share of a shaped link's rate that carries TCP
// payload: tc counts whole Ethernet frames, and a full frame at the veths'
// MTU of 1500 carries 1448 payload bytes in 1514 (Ethernet 14, IPv4 20,
// TCP with timestamps 32). The simulator's NIC moves payload bytes, so a
// link of R bit/s is a NIC of R/8 × 1448/1514 bytes/s. Measured here over
// the --netns path at 100 Mbit/s: iperf3 96.0 Mbit/s with one stream, and
// 92.3–97.6 Mbit/s out of each of 4 namespaces sending to the 3 others at
// once (the 2-core development VM, 2026-11).
const TCPPayloadShare = 1448.0 / 1514

// Derivation describes the emulated cluster DeriveProfile derives a
// profile for.
type Derivation struct {
	// Nodes workers of Devices devices each, on this machine's Cores.
	Nodes, Devices, Cores int
	// Link shapes every worker's port; Latency is the NIC latency where
	// the link's delay is not emulated (0: the delay crossed twice).
	Link    ecluster.Link
	Latency time.Duration
	// Colocation is the share of the cores' single-process throughput the
	// workers' Nodes·Devices kernels get when they all run at once
	// (MeasureColocation), in (0, 1]; 1: none lost.
	Colocation float64
	// NetCPUCost is the CPU the TCP stack takes per byte at each end, ns
	// of a core (MeasureNetCPU); 0: none.
	NetCPUCost float64
	// CPUTax is the cores the workers take beside the model while a query
	// runs (MeasureCPUTax), written as node.cpu_tax; 0: none.
	CPUTax float64
	// FabricEfficiency is the share of the link's TCP payload rate a
	// port moves during a query's all-to-all exchanges
	// (FitFabricEfficiency), in (0, 1]; 0 or 1: all of it.
	FabricEfficiency float64
	// ColocationExempt are the operator kinds that lose nothing to
	// co-location (node.colocation_exempt, with the colocation lines).
	ColocationExempt []string
}

// DefaultColocationExempt are the kinds bench-sim exempts from the
// co-location loss: on 4 workers of this 2-core machine at 1 Gbit/s
// (q3, q5, q9, q18 x8, the last 4 runs each; query --op-times), the
// partial and final aggregates' thread CPU time per priced ns was 0.88 and
// 1.11, against 0.90 and 1.23 in one process: no loss, where filters,
// builds, probes, projections and shuffles took 1.3-1.8x their
// one-process CPU.
var DefaultColocationExempt = []string{"agg-partial", "agg-final"}

// DeriveProfile derives from the profile src (YAML) the profile of an
// emulated cluster of this machine, and returns it as YAML written from the
// typed profile (sim.MarshalProfile), headed by comments that say where
// each derived value comes from. Every node gets d.Devices devices and the
// link's NIC bandwidth (its TCP payload rate, TCPPayloadShare, times
// d.FabricEfficiency) and latency, and the nodes are marked
// node.shared_machine with host_cores the machine's d.Cores (capped by the
// profile's): the workers are processes of this machine sharing its cores
// and its disk, which the simulator then shares among the nodes' tasks as
// the operating system does (a worker waiting on the network leaves its
// share to the others). d.Colocation becomes node.colocation with
// node.colocation_kernels = nodes·devices where more kernels than cores
// run: the simulated host keeps its full cores while no more kernels than
// cores run and loses throughput only past that (sim.NodeSpec.Colocation).
// The engine's TCP data plane sends the frames from one worker to another
// in turn over one connection, so the nodes get node.ordered_sends.
// d.NetCPUCost becomes node.net_cpu_cost, d.CPUTax node.cpu_tax. The
// link's ports become nic_line_rate and, where two TCP windows can fill a
// port's queue, nic_port (lossyPort). src's node.corun (what cores
// computing at once take from each other in one process) is left out: the
// co-location measured at launch stands for all that the workers lose
// sharing the machine. With both, the simulator over-predicted the 1
// Gbit/s launches of 2026-11-26 on the 2-core development VM (q3 +14% and
// +26%, 3 of 8 cases within 10%, against 6 of 8 for the same runs without
// corun). Deriving a derived profile again with the same d gives the same
// bytes.
func DeriveProfile(src []byte, d Derivation) ([]byte, error) {
	p, notes, err := deriveProfile(src, d)
	if err != nil {
		return nil, err
	}
	return sim.MarshalProfile(p, strings.Join(notes, "\n"))
}

// deriveProfile is DeriveProfile's typed profile and the notes of its
// header, one per derived value.
func deriveProfile(src []byte, d Derivation) (*sim.Profile, []string, error) {
	nodes, devices, cores, link, efficiency, netCost := d.Nodes, d.Devices, d.Cores, d.Link, d.Colocation, d.NetCPUCost
	if nodes < 1 || devices < 1 || cores < 1 || link.Rate <= 0 {
		return nil, nil, fmt.Errorf("cluster: derive profile: need nodes, devices, cores >= 1 and a link rate")
	}
	if !(efficiency > 0 && efficiency <= 1) {
		return nil, nil, fmt.Errorf("cluster: derive profile: co-location efficiency %v outside (0, 1]", efficiency)
	}
	if !(netCost >= 0) || math.IsInf(netCost, 0) {
		return nil, nil, fmt.Errorf("cluster: derive profile: network CPU cost %v ns/B: want a finite number, 0 or more", netCost)
	}
	if !(d.CPUTax >= 0) || d.CPUTax >= float64(cores) {
		return nil, nil, fmt.Errorf("cluster: derive profile: cpu tax %v cores: want 0 or more, under the machine's %d", d.CPUTax, cores)
	}
	fabric := d.FabricEfficiency
	if fabric == 0 {
		fabric = 1
	}
	if !(fabric > 0 && fabric <= 1) {
		return nil, nil, fmt.Errorf("cluster: derive profile: fabric efficiency %v outside (0, 1]", d.FabricEfficiency)
	}
	p, err := sim.ParseProfile("the source profile", src)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: derive profile: %w", err)
	}
	var notes []string
	note := func(format string, args ...any) { notes = append(notes, fmt.Sprintf(format, args...)) }
	note("Derived by `gostachio cluster bench-sim` for %d emulated workers of %d device(s) on this machine, over --link %s.", nodes, devices, link)
	if !strings.HasPrefix(p.Name, "netns-") {
		p.Name = "netns-" + p.Name
	}
	n := &p.Node
	n.GPUs = devices
	n.HostCores = min(n.HostCores, float64(cores))
	note("node.host_cores %g: this machine's %d cores, shared by the %d workers (node.shared_machine)", n.HostCores, cores, nodes)
	n.SharedMachine = true
	n.OrderedSends = true
	note("node.ordered_sends: the engine's TCP data plane, one connection per pair of workers, frames in turn")
	// Noted whether or not src has one, so that deriving a derived
	// profile again gives the same bytes.
	note("node.corun left out: the co-location measured on this machine stands for all the workers lose sharing it")
	n.Corun = 0
	n.NetCPUCost = netCost
	if netCost > 0 {
		note("node.net_cpu_cost %s: the TCP stack's CPU, ns of a core per byte at each end, measured over --link %s", strconv.FormatFloat(netCost, 'g', 4, 64), link)
	}
	n.CPUTax = d.CPUTax
	if d.CPUTax > 0 {
		note("node.cpu_tax %s: measured, the workers' CPU time less one process's on the same queries, per second of their runs", strconv.FormatFloat(d.CPUTax, 'g', 4, 64))
	}
	n.Colocation, n.ColocationKernels, n.ColocationExempt = 0, 0, nil
	if k := nodes * devices; efficiency < 1 && float64(k) > n.HostCores {
		n.Colocation, n.ColocationKernels = efficiency, k
		note("node.colocation %s at node.colocation_kernels %d: measured, %d threads of work in %d processes did this share of one process's throughput",
			strconv.FormatFloat(efficiency, 'g', 4, 64), k, k, nodes)
		if len(d.ColocationExempt) > 0 {
			n.ColocationExempt = append([]string(nil), d.ColocationExempt...)
			note("node.colocation_exempt [%s]: kinds whose thread CPU on the emulated cluster was their one-process CPU", strings.Join(d.ColocationExempt, ", "))
		}
	}
	payload := float64(link.Rate) / 8 * TCPPayloadShare
	p.NIC.Bandwidth = costmodel.Rate(math.Round(payload * fabric))
	why := "nic.bandwidth: the TCP payload rate of --link " + link.String() + " (x 1448/1514)"
	if fabric < 1 {
		why += fmt.Sprintf(" x %.3f, the share of it a port moved in all-to-all bursts", fabric)
	}
	note("%s", why)
	lat := d.Latency
	if link.Delay > 0 && d.Latency == 0 {
		lat = 2 * link.Delay
		note("nic.latency: the --link delay on both veths")
	} else {
		note("nic.latency: measured on the veth path (the delay is not emulated)")
	}
	p.NIC.Latency = costmodel.Duration(lat.Nanoseconds())
	p.NICLineRate = costmodel.Rate(math.Round(payload))
	note("nic_line_rate is the TCP payload rate of --link %s: every egress port, and an ingress port one transfer enters alone (nic.bandwidth: more)", link)
	p.NICPort = nil
	if port, why, ok := lossyPort(link, nodes); ok {
		p.NICPort = port
		note("%s", why)
	}
	return p, notes, nil
}

// BenchSim runs the comparison and prints a table on w (notices on log).
// Its steps, in order: check the options (checkSimBench), measure what
// the machine does to the workers (measureMachine), derive the profile and
// fit the fabric to it (deriveProfiles), run the queries on the cluster
// (runLaunches), rescale by the references timed beside them (rescaleRefs),
// simulate each query (simulateRows) and print the table (printSimBench).
func BenchSim(ctx context.Context, o SimBenchOptions, w, log io.Writer) ([]SimBenchRow, error) {
	b, err := checkSimBench(o)
	if err != nil {
		return nil, err
	}
	defer b.removeVariants()
	if err := b.measureMachine(ctx, w, log); err != nil {
		return nil, err
	}
	if err := b.deriveProfiles(ctx, w, log); err != nil {
		return nil, err
	}
	times, sent, refs, err := b.runLaunches(ctx, log)
	if err != nil {
		return nil, err
	}
	ratio, err := b.rescaleRefs(refs, w)
	if err != nil {
		return nil, err
	}
	rows, err := b.simulateRows(ctx, times, sent, ratio)
	if err != nil {
		return rows, err
	}
	printSimBench(w, b.o, rows)
	return rows, nil
}

// simBench is one BenchSim as its steps fill it in.
type simBench struct {
	// o are the options, defaults filled in and, once measured, the
	// co-location, network cost, cpu tax and fabric efficiency.
	o SimBenchOptions
	// src is the calibrated profile's YAML; launches the run lists, one
	// per launch of the cluster.
	src      []byte
	launches [][]string

	// measureMachine's: the co-location's rounds (ratios; pool, when
	// pooled, and own, this launch's own median then), the network CPU
	// measurement's two figures, and the tax's runs.
	ratios             []float64
	pool               PooledColocation
	own                float64
	netBusy, netSoftir float64
	taxRuns            *CPUTaxResult

	// deriveProfiles': the derivation written to o.ProfileOut and that
	// profile parsed; the bursts (nil where the efficiency was given) and
	// this launch's own share when pooled; and the variant profiles the
	// runs are priced with too (temporary files, "" where not needed).
	deriv     Derivation
	derived   *sim.Profile
	fabric    *FabricBenchResult
	ownFabric float64
	variants  struct{ fullLink, noTax, ownFabric, ownColocation string }
}

// checkSimBench checks o and fills in its defaults, reads the calibrated
// profile and lays out the runs: every mistake in the options is an
// error before the minutes of measurement that follow.
func checkSimBench(o SimBenchOptions) (*simBench, error) {
	if o.Reps < 1 {
		o.Reps = 3
	}
	if o.Warmup < 0 {
		return nil, fmt.Errorf("cluster: bench-sim: --warmup %d: want 0 or more untimed runs", o.Warmup)
	}
	if o.Devices < 1 {
		o.Devices = 1
	}
	switch o.NetCPUFrom {
	case "":
		o.NetCPUFrom = NetCPUSoftirq
	case NetCPUBusy, NetCPUSoftirq:
	default:
		return nil, fmt.Errorf("cluster: bench-sim: --net-cpu-from %q: want %s or %s", o.NetCPUFrom, NetCPUBusy, NetCPUSoftirq)
	}
	listed := map[string]bool{}
	for _, q := range o.Queries {
		if listed[q] {
			return nil, fmt.Errorf("cluster: bench-sim: --query lists %s twice", q)
		}
		listed[q] = true
	}
	if len(o.TaxQueries) == 0 {
		o.TaxQueries = DefaultTaxQueries
	}
	if o.CPUTax == 0 {
		for _, q := range o.TaxQueries {
			if listed[q] {
				return nil, fmt.Errorf("cluster: bench-sim: --tax-queries lists %s, which --query validates: measure the tax on other queries", q)
			}
		}
	}
	b := &simBench{}
	switch o.Order {
	case "", OrderInterleaved:
		b.launches = [][]string{BenchSimOrder(o.Queries, o.Warmup+o.Reps, o.Seed)}
	case OrderGrouped:
		for _, q := range o.Queries {
			b.launches = append(b.launches, slices.Repeat([]string{q}, o.Warmup+o.Reps))
		}
	default:
		return nil, fmt.Errorf("cluster: bench-sim: --order %q: want %s or %s", o.Order, OrderInterleaved, OrderGrouped)
	}
	if !(o.FabricEfficiency >= 0 && o.FabricEfficiency <= 1) {
		return nil, fmt.Errorf("cluster: bench-sim: --fabric-efficiency %v: want a share in (0, 1], or 0 to measure it", o.FabricEfficiency)
	}
	if o.ColocationDuration <= 0 {
		o.ColocationDuration = time.Second
	}
	if o.ColocationRounds <= 0 {
		o.ColocationRounds = DefaultColocationRounds
	}
	if o.Cores < 1 {
		o.Cores = runtime.NumCPU()
	}
	var err error
	if b.src, err = os.ReadFile(o.Profile); err != nil {
		return nil, fmt.Errorf("cluster: bench-sim: %w", err)
	}
	if o.RescaleDisk {
		if err := checkDiskReference(o.Data, o.Profile, b.src); err != nil {
			return nil, err
		}
	}
	if len(o.FabricFrom) > 0 && o.FabricEfficiency != 0 {
		return nil, fmt.Errorf("cluster: bench-sim: --fabric-from pools measured bursts: not with --fabric-efficiency")
	}
	if len(o.ColocationFrom) > 0 {
		if o.Colocation != 0 {
			return nil, fmt.Errorf("cluster: bench-sim: --colocation-from pools measured rounds: not with --colocation")
		}
		if b.pool, err = LoadColocationRounds(o.ColocationFrom, o.Nodes, o.Devices); err != nil {
			return nil, err
		}
	}
	b.o = o
	return b, nil
}

// measureMachine measures, where the options do not give them, what
// sharing this machine takes from the workers beside the simulator's
// model of one node: the co-location (MeasureColocation, pooled with
// earlier launches' rounds), the TCP stack's CPU per byte (MeasureNetCPU)
// and the workers' own CPU beside the model (MeasureCPUTax). They are
// micro-benchmarks and runs of other queries, made before the queries the
// launch validates, so that nothing in the profile is fitted to them.
func (b *simBench) measureMachine(ctx context.Context, w, log io.Writer) error {
	o := &b.o
	if o.Colocation == 0 {
		fmt.Fprintf(log, "bench-sim: measuring co-location on the loop, %d rounds of 1 and %d processes (about %v)\n", o.ColocationRounds, o.Nodes, (2 * time.Duration(o.ColocationRounds) * o.ColocationDuration).Round(time.Second))
		c, err := MeasureColocation(ctx, ColocationOptions{Exe: o.Exe, Nodes: o.Nodes, Duration: o.ColocationDuration, Rounds: o.ColocationRounds, Threads: o.Devices})
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "co-location (loop): %d processes of %d threads did %.3f of one process's work on every core (median of %d rounds' ratios, %s)\n",
			o.Nodes, o.Devices, c.Efficiency, len(c.Alone), roundRange(c))
		o.Colocation = min(c.Efficiency, 1)
		b.ratios = roundRatios(c)
		if len(b.pool.Ratios) > 0 {
			b.own = o.Colocation
			b.pool = b.pool.With(b.ratios)
			o.Colocation = b.pool.Efficiency()
			fmt.Fprintf(w, "co-location (loop, pooled): %.3f, the median of %d rounds of %d launches (this one's and --colocation-from's)\n", o.Colocation, len(b.pool.Ratios), b.pool.Launches)
		}
	}
	if o.Colocation < 1 && len(o.ColocationExempt) > 0 {
		fmt.Fprintf(w, "co-location exempt (node.colocation_exempt): %s, priced to lose none of it\n", strings.Join(o.ColocationExempt, ", "))
	}
	if o.NetCPUCost == 0 {
		d := o.NetCPUDuration
		if d <= 0 {
			d = 3 * time.Second
		}
		fmt.Fprintf(log, "bench-sim: measuring the network's CPU cost over --link %s (3 rounds, about %v)\n", o.Link, (3 * (2*d + d/3)).Round(time.Second))
		nc, err := MeasureNetCPU(ctx, NetCPUOptions{Exe: o.Exe, Link: o.Link, Duration: d})
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "network CPU: %.3g ns of a core per byte at each end (median of %d rounds: %s), of which interrupts %.3g (%s), streaming %.1f MB/s over --link %s; priced: %s\n",
			nc.Cost, len(nc.Rounds), costRange(nc.Rounds), nc.SoftirqCost, costRange(nc.SoftirqRounds), nc.Rate/1e6, o.Link, o.NetCPUFrom)
		b.netBusy, b.netSoftir = nc.Cost, nc.SoftirqCost
		o.NetCPUCost = nc.Cost
		if o.NetCPUFrom == NetCPUSoftirq {
			o.NetCPUCost = nc.SoftirqCost
			if !(o.NetCPUCost > 0) {
				o.NetCPUCost = -1 // measured at 0: none
			}
		}
	}
	if o.CPUTax == 0 {
		fmt.Fprintf(log, "bench-sim: measuring the workers' CPU beside the model on %s, on %d workers and in one process\n", strings.Join(o.TaxQueries, ","), o.Nodes)
		t, err := MeasureCPUTax(ctx, CPUTaxOptions{Exe: o.Exe, Data: o.Data, Nodes: o.Nodes, Devices: o.Devices, Link: o.Link, Queries: o.TaxQueries}, log)
		if err != nil {
			return fmt.Errorf("cluster: bench-sim: %w", err)
		}
		fmt.Fprintf(w, "cpu tax: the workers used %s beyond one process's CPU on the same queries, per second of their runs; the simulated machine has that much less of its %d cores\n", t.describe(), o.Cores)
		b.taxRuns = &t
		o.CPUTax = t.Tax
		if !(o.CPUTax > 0) {
			o.CPUTax = -1 // measured at 0: none
		}
	}
	return nil
}

// deriveProfiles derives the simulated profile from the calibrated one
// and writes it to o.ProfileOut, and writes the variants the same runs are
// priced with beside it (the link's full rate, no cpu tax, this launch's
// own co-location and fabric share where those were pooled). The fabric's
// efficiency is fitted here, where not given: it is the share of the
// NIC's bandwidth at which the derived profile at the full rate takes as
// long for the measured all-to-all bursts (MeasureBurst,
// FitFabricEfficiency), so it needs that profile first.
func (b *simBench) deriveProfiles(ctx context.Context, w, log io.Writer) error {
	o := &b.o
	b.deriv = Derivation{Nodes: o.Nodes, Devices: o.Devices, Cores: o.Cores, Link: o.Link, Latency: o.Latency,
		Colocation: o.Colocation, NetCPUCost: max(o.NetCPUCost, 0), CPUTax: max(o.CPUTax, 0), FabricEfficiency: 1, ColocationExempt: o.ColocationExempt}
	prof, derived, err := writeDerivedProfile(b.src, *o, b.deriv)
	if err != nil {
		return err
	}
	if bytes.Contains(prof, []byte("# corun:")) {
		fmt.Fprintln(w, "kernels beside kernels (node.corun): left out, the co-location stands for all the workers lose sharing the machine")
	}
	if o.FabricEfficiency == 0 {
		if err := b.fitFabric(ctx, derived, w, log); err != nil {
			return err
		}
	}
	if o.FabricEfficiency < 1 {
		if b.variants.fullLink, err = writeTempProfile("gostachio-full-link-*.yaml", prof); err != nil {
			return err
		}
		b.deriv.FabricEfficiency = o.FabricEfficiency
		if prof, derived, err = writeDerivedProfile(b.src, *o, b.deriv); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Dir(o.ProfileOut), 0o755); err != nil {
		return fmt.Errorf("cluster: bench-sim: %w", err)
	}
	if err := os.WriteFile(o.ProfileOut, append(prof, '\n'), 0o644); err != nil {
		return fmt.Errorf("cluster: bench-sim: %w", err)
	}
	b.derived = derived
	if b.deriv.CPUTax > 0 {
		nd := b.deriv
		nd.CPUTax = 0
		if b.variants.noTax, err = variantProfile(b.src, *o, nd, "gostachio-no-tax-*.yaml"); err != nil {
			return err
		}
	}
	if b.ownFabric > 0 {
		fd := b.deriv
		fd.FabricEfficiency = b.ownFabric
		if b.variants.ownFabric, err = variantProfile(b.src, *o, fd, "gostachio-own-fabric-*.yaml"); err != nil {
			return err
		}
	}
	if b.own > 0 {
		od := b.deriv
		od.Colocation = b.own
		if b.variants.ownColocation, err = variantProfile(b.src, *o, od, "gostachio-own-colocation-*.yaml"); err != nil {
			return err
		}
	}
	if o.RescaleCPU && derived.Host.Reference <= 0 {
		return fmt.Errorf("cluster: bench-sim --rescale-cpu: profile %s has no host.reference (the CPU reference's time at calibration): recalibrate it with this version", o.Profile)
	}
	return nil
}

// fitFabric times all-to-all bursts on the cluster's network and fits
// the fabric's efficiency to them against derived, the profile at the
// link's full rate (pooled with earlier launches' bursts where
// o.FabricFrom names them): a query's shuffle moves less than a long
// flow does, and the bursts say how much less without running a query.
func (b *simBench) fitFabric(ctx context.Context, derived *sim.Profile, w, log io.Writer) error {
	o := &b.o
	fmt.Fprintf(log, "bench-sim: timing all-to-all bursts on %d workers over --link %s\n", o.Nodes, o.Link)
	burst, err := MeasureBurst(ctx, BurstOptions{Exe: o.Exe, Nodes: o.Nodes, Link: o.Link, Warmup: 2})
	if err != nil {
		return err
	}
	fit, err := FitFabricEfficiency(ctx, derived, burst)
	if err != nil {
		return err
	}
	b.fabric = &FabricBenchResult{Burst: burst, Link: o.Link.String(), PayloadShare: burst.Rate / (float64(o.Link.Rate) / 8 * TCPPayloadShare), Fit: &fit}
	fmt.Fprintf(w, "fabric: all-to-all bursts of %d x %d KiB per pair took %.4g s (median of %d rounds, %.4g–%.4g), each port %.2f MB/s, %.3f of the payload rate, %.2f cores busy; simulated %s\n",
		burst.Frames, burst.FrameBytes>>10, burst.Median, len(burst.Seconds), slices.Min(burst.Seconds), slices.Max(burst.Seconds), burst.Rate/1e6, b.fabric.PayloadShare, burst.BusyCores, fit.describe(derived.NIC.Bandwidth))
	o.FabricEfficiency = fit.Efficiency
	if len(o.FabricFrom) == 0 {
		return nil
	}
	fp, err := LoadFabricRounds(o.FabricFrom, o.Link, burst.Nodes, burst.Frames, burst.FrameBytes, burst.Streams)
	if err != nil {
		return err
	}
	pooled := fp.With(burst)
	pfit, err := FitFabricEfficiency(ctx, derived, pooled)
	if err != nil {
		return err
	}
	b.fabric.Pooled = &PooledFabricFit{Rounds: len(pooled.Seconds), Launches: fp.Launches + 1, Median: pooled.Median, Fit: pfit}
	fmt.Fprintf(w, "fabric (pooled): %.4g s, the median of %d rounds of %d launches (this one's and --fabric-from's; %d files of another link or burst skipped); simulated %s\n",
		pooled.Median, len(pooled.Seconds), fp.Launches+1, fp.Skipped, pfit.describe(derived.NIC.Bandwidth))
	b.ownFabric, o.FabricEfficiency = fit.Efficiency, pfit.Efficiency
	return nil
}

// removeVariants removes the variant profiles deriveProfiles wrote.
func (b *simBench) removeVariants() {
	for _, p := range []string{b.variants.fullLink, b.variants.noTax, b.variants.ownFabric, b.variants.ownColocation} {
		if p != "" {
			os.Remove(p)
		}
	}
}

// runLaunches runs the launches' queries on a --netns cluster (the
// dataset verified first, once, so that the runs need not check their
// answers) and collects each query's timed runs, in seconds, the MiB it
// sent and the references rank 0 timed after them. The workers time the
// references between the queries, not before or after the launch: the
// machine's speed moves within minutes.
func (b *simBench) runLaunches(ctx context.Context, log io.Writer) (times map[string][]float64, sent map[string]float64, refs launchRefs, err error) {
	o := &b.o
	ds, err := dataset.Open(o.Data)
	if err != nil {
		return nil, nil, refs, fmt.Errorf("cluster: bench-sim: %w", err)
	}
	if err := engine.VerifyOnce(ctx, ds, log); err != nil {
		return nil, nil, refs, fmt.Errorf("cluster: bench-sim: %w", err)
	}
	times, sent = make(map[string][]float64), make(map[string]float64)
	for _, list := range b.launches {
		fmt.Fprintf(log, "bench-sim: %d runs on %d workers (%s, ...)\n", len(list), o.Nodes, strings.Join(list[:min(len(list), 4)], ", "))
		var stdout bytes.Buffer
		args := []string{"--data", o.Data, "--query", strings.Join(list, ","), "--devices", strconv.Itoa(o.Devices), "--format", "json", "--no-verify"}
		if o.RescaleCPU {
			args = append(args, "--cpu-reference-every", "1")
		}
		if o.RescaleDisk {
			args = append(args, "--disk-reference-every", "1", "--disk-reference-profile", o.ProfileOut)
		}
		err := ecluster.Launch(ctx, ecluster.LaunchOptions{Nodes: o.Nodes, Exe: o.Exe, Netns: true, Link: o.Link, Args: args}, &stdout, log)
		if err != nil {
			return nil, nil, refs, fmt.Errorf("cluster: bench-sim %s on the cluster: %w", list[0], err)
		}
		var res []workerResult
		if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
			return nil, nil, refs, fmt.Errorf("cluster: bench-sim %s: unreadable results (%v): %.200s", list[0], err, stdout.Bytes())
		}
		if err := timedRuns(list, res, o.Warmup, times, sent, &refs); err != nil {
			return nil, nil, refs, fmt.Errorf("cluster: bench-sim: results of the launch: %w", err)
		}
	}
	return times, sent, refs, nil
}

// rescaleRefs is how the references timed beside the runs rescale the
// simulated machine (--rescale-cpu, --rescale-disk): the CPU reference's
// mean over its time at calibration, the disk reference's throughput over
// the profile's model of it. This machine's CPU and disk speeds move by
// the hour, and the engine's times with them.
func (b *simBench) rescaleRefs(refs launchRefs, w io.Writer) (rescale, error) {
	o, derived := &b.o, b.derived
	var ratio rescale
	if o.RescaleCPU {
		if len(refs.cpu) == 0 {
			return ratio, fmt.Errorf("cluster: bench-sim --rescale-cpu: rank 0 timed no CPU reference")
		}
		mean := meanNs(refs.cpu)
		ratio.cpu = mean / float64(derived.Host.Reference)
		fmt.Fprintf(w, "CPU reference beside the engine: %.3f ms (mean of %d, one after each timed run) vs %.3f ms at calibration: x%.3f, the simulator's host prices scaled by it\n",
			mean/1e6, len(refs.cpu), float64(derived.Host.Reference)/1e6, ratio.cpu)
	}
	if o.RescaleDisk {
		if len(refs.disk) == 0 {
			return ratio, fmt.Errorf("cluster: bench-sim --rescale-disk: rank 0 timed no disk reference")
		}
		// The reads' bytes over their time, as validate's total bytes
		// over total time.
		var bytes, ns float64
		for _, d := range refs.disk {
			bytes, ns = bytes+float64(d.bytes), ns+float64(d.ns)
		}
		measured := bytes / ns * 1e9
		model := diskref.ModelBps(&derived.NVMe)
		ratio.disk = measured / model
		fmt.Fprintf(w, "disk reference beside the engine: %.3f GB/s (%d reads of %d MiB, one after each timed run) vs %.3f GB/s in the profile's storage model: x%.3f, the simulator's disk bandwidth scaled by it\n",
			measured/1e9, len(refs.disk), int64(bytes)/int64(len(refs.disk))>>20, model/1e9, ratio.disk)
	}
	return ratio, nil
}

// simulateRows simulates each query on the derived profile, rescaled by
// ratio, and compares it with the engine's runs; each row also carries the
// query priced on the variants and without the rescaling, so that one set
// of engine runs is priced every way the launch measured.
func (b *simBench) simulateRows(ctx context.Context, times map[string][]float64, sent map[string]float64, ratio rescale) ([]SimBenchRow, error) {
	o := &b.o
	var rows []SimBenchRow
	for _, q := range o.Queries {
		sec, err := simMakespan(ctx, *o, o.ProfileOut, q, ratio)
		if err != nil {
			return rows, err
		}
		row := simBenchRow(q, times[q], sec, sent[q])
		row.Colocation, row.NetCPUCost = o.Colocation, max(o.NetCPUCost, 0)
		row.NetCPUBusy, row.NetCPUSoftirq = b.netBusy, b.netSoftir
		row.CPUTax, row.CPUTaxRuns = b.deriv.CPUTax, b.taxRuns
		if b.variants.noTax != "" {
			if row.SimNoTax, err = simMakespan(ctx, *o, b.variants.noTax, q, ratio); err != nil {
				return rows, err
			}
		}
		if o.Colocation < 1 {
			row.ColocationExempt = o.ColocationExempt
		}
		row.FabricEfficiency, row.Fabric = o.FabricEfficiency, b.fabric
		if len(b.pool.Ratios) > 0 {
			row.ColocationPooled, row.ColocationPooledLaunches = len(b.pool.Ratios), b.pool.Launches
		}
		if b.variants.ownFabric != "" {
			row.FabricOwn = b.ownFabric
			if row.SimOwnFabric, err = simMakespan(ctx, *o, b.variants.ownFabric, q, ratio); err != nil {
				return rows, err
			}
		}
		if b.variants.ownColocation != "" {
			row.ColocationOwn = b.own
			if row.SimOwnColocation, err = simMakespan(ctx, *o, b.variants.ownColocation, q, ratio); err != nil {
				return rows, err
			}
		}
		if b.variants.fullLink != "" {
			if row.SimFullLink, err = simMakespan(ctx, *o, b.variants.fullLink, q, ratio); err != nil {
				return rows, err
			}
		}
		row.Link, row.Nodes, row.Devices = o.Link.String(), o.Nodes, o.Devices
		row.ColocationRatios = b.ratios
		if o.RescaleCPU || o.RescaleDisk {
			if row.SimUnscaled, err = simMakespan(ctx, *o, o.ProfileOut, q, rescale{}); err != nil {
				return rows, err
			}
			row.CPURatio, row.DiskRatio = ratio.cpu, ratio.disk
		}
		if o.RescaleCPU && o.RescaleDisk {
			if row.SimCPUOnly, err = simMakespan(ctx, *o, o.ProfileOut, q, rescale{cpu: ratio.cpu}); err != nil {
				return rows, err
			}
			if row.SimDiskOnly, err = simMakespan(ctx, *o, o.ProfileOut, q, rescale{disk: ratio.disk}); err != nil {
				return rows, err
			}
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// checkDiskReference says, before the launch's minutes of measurement,
// whether the dataset at data holds the disk reference in the requests of
// the profile src (read from path) that bench-sim derives its own from.
func checkDiskReference(data, path string, src []byte) error {
	p, err := sim.ParseProfile(path, src)
	if err != nil {
		return fmt.Errorf("cluster: bench-sim: %w", err)
	}
	ds, err := dataset.Open(data)
	if err != nil {
		return fmt.Errorf("cluster: bench-sim: %w", err)
	}
	if _, _, err := diskref.File(ds, &p.NVMe, diskref.Bytes); err != nil {
		return fmt.Errorf("cluster: bench-sim --rescale-disk: %w; --rescale-disk=false prices the disk as calibrated", err)
	}
	return nil
}

// writeTempProfile writes prof to a new temporary file named by pattern
// and returns its path (removed again on error).
func writeTempProfile(pattern string, prof []byte) (string, error) {
	f, err := os.CreateTemp("", pattern)
	if err != nil {
		return "", fmt.Errorf("cluster: bench-sim: %w", err)
	}
	_, err = f.Write(append(prof, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("cluster: bench-sim: %w", err)
	}
	return f.Name(), nil
}

// variantProfile writes the profile derived from src with d to a temporary
// file named after pattern (os.CreateTemp's) and returns its path, which the
// caller removes.
func variantProfile(src []byte, o SimBenchOptions, d Derivation, pattern string) (string, error) {
	p, _, err := writeDerivedProfile(src, o, d)
	if err != nil {
		return "", err
	}
	return writeTempProfile(pattern, p)
}

// writeDerivedProfile writes bench-sim's profile for d as YAML
// (DeriveProfile, with a first header line naming o.Profile), and parses
// it as it would be read from o.ProfileOut. It is the one place bench-sim
// makes a profile's text; the callers write it to files.
func writeDerivedProfile(src []byte, o SimBenchOptions, d Derivation) ([]byte, *sim.Profile, error) {
	p, notes, err := deriveProfile(src, d)
	if err != nil {
		return nil, nil, err
	}
	notes = append([]string{"Source profile: " + o.Profile}, notes...)
	prof, err := sim.MarshalProfile(p, strings.Join(notes, "\n"))
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: bench-sim: derived profile: %w", err)
	}
	if p, err = sim.ParseProfile(o.ProfileOut, prof); err != nil {
		return nil, nil, fmt.Errorf("cluster: bench-sim: derived profile: %w", err)
	}
	return prof, p, nil
}

// rescale is how a launch's references rescale the simulated machine:
// the host's prices times cpu (sim --cpu-slowdown) and the disk's
// bandwidth times disk (sim --disk-speedup); 0 leaves that part as
// profiled.
type rescale struct {
	cpu, disk float64
}

// meanNs is the mean of ns (not empty).
func meanNs(ns []int64) float64 {
	var sum float64
	for _, n := range ns {
		sum += float64(n)
	}
	return sum / float64(len(ns))
}

// simMakespan runs `gostachio sim` on profile for query q, rescaled by r,
// and returns its makespan in seconds.
func simMakespan(ctx context.Context, o SimBenchOptions, profile, q string, r rescale) (float64, error) {
	args := []string{"sim", "--profile", profile, "--nodes", strconv.Itoa(o.Nodes),
		"--data", o.Data, "--query", q, "--policy", "overlap", "--json"}
	if r.cpu != 0 {
		args = append(args, "--cpu-slowdown", strconv.FormatFloat(r.cpu, 'g', -1, 64))
	}
	if r.disk != 0 {
		args = append(args, "--disk-speedup", strconv.FormatFloat(r.disk, 'g', -1, 64))
	}
	cmd := exec.CommandContext(ctx, o.Exe, args...)
	var serr bytes.Buffer
	cmd.Stderr = &serr
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("cluster: bench-sim %s: sim: %v: %s", q, err, strings.TrimSpace(serr.String()))
	}
	var rep struct {
		Makespan int64 `json:"makespan_ns"`
	}
	if err := json.Unmarshal(out, &rep); err != nil || rep.Makespan <= 0 {
		return 0, fmt.Errorf("cluster: bench-sim %s: unreadable sim report (%v)", q, err)
	}
	return float64(rep.Makespan) / 1e9, nil
}

// costRange is the spread of the rounds of a network CPU measurement.
func costRange(c []float64) string {
	if len(c) == 0 {
		return "none"
	}
	return fmt.Sprintf("%.3g–%.3g", slices.Min(c), slices.Max(c))
}

// roundRange is the spread of a co-location measurement, "lo–hi": each
// round's together/alone ratio. The simulated times scale with the
// efficiency, so this spread is the simulated side's own noise.
func roundRange(c ColocationResult) string {
	r := roundRatios(c)
	if len(r) == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.3f–%.3f", slices.Min(r), slices.Max(r))
}

// roundRatios are each round's together / alone, rounds whose process
// alone made no progress left out.
func roundRatios(c ColocationResult) []float64 {
	var r []float64
	for i := range min(len(c.Alone), len(c.Together)) {
		if c.Alone[i] > 0 {
			r = append(r, c.Together[i]/c.Alone[i])
		}
	}
	return r
}

// printSimBench writes BenchSim's table.
func printSimBench(w io.Writer, o SimBenchOptions, rows []SimBenchRow) {
	order := o.Order
	if order == "" {
		order = OrderInterleaved
	}
	fmt.Fprintf(w, "%d workers, --netns --link %s, --devices %d, %s, engine median of %d runs after %d warm-up (%s, seed %d); sim profile %s\n",
		o.Nodes, o.Link, o.Devices, o.Data, o.Reps, o.Warmup, order, o.Seed, o.ProfileOut)
	fmt.Fprintf(w, "%-6s %10s %17s %10s %8s %17s %10s\n", "query", "engine s", "95% interval", "sim s", "error", "error over it", "sent MiB")
	var abs []float64
	inside, known := 0, 0
	for _, r := range rows {
		iv, over := "(too few runs)", ""
		if r.CI.OK {
			known++
			iv = fmt.Sprintf("%.3f–%.3f", r.CI.Lo, r.CI.Hi)
			over = fmt.Sprintf("%+.1f..%+.1f%%", 100*r.ErrorLo, 100*r.ErrorHi)
			if r.InCI {
				inside++
				over += " in"
			}
		}
		fmt.Fprintf(w, "%-6s %10.3f %17s %10.3f %+7.1f%% %17s %10.1f\n", r.Query, r.CI.Median, iv, r.Sim, 100*r.Error, over, r.SentMiB)
		abs = append(abs, max(r.Error, -r.Error))
	}
	fmt.Fprintf(w, "median |error| %.1f%%", 100*stats.Median(abs))
	if known > 0 {
		fmt.Fprintf(w, "; simulated time inside the engine's 95%% interval for %d of %d queries", inside, known)
	}
	fmt.Fprintln(w)
	printRepriced(w, "unscaled (host prices and disk as calibrated)", rows, func(r SimBenchRow) float64 { return r.SimUnscaled })
	printRepriced(w, "CPU rescaled alone", rows, func(r SimBenchRow) float64 { return r.SimCPUOnly })
	printRepriced(w, "disk rescaled alone", rows, func(r SimBenchRow) float64 { return r.SimDiskOnly })
	printRepriced(w, "at the link's full payload rate (no fabric efficiency)", rows, func(r SimBenchRow) float64 { return r.SimFullLink })
	printRepriced(w, "without the cpu tax", rows, func(r SimBenchRow) float64 { return r.SimNoTax })
	if len(rows) > 0 && rows[0].ColocationOwn > 0 {
		printRepriced(w, fmt.Sprintf("at this launch's own co-location (%.3f, not pooled)", rows[0].ColocationOwn), rows, func(r SimBenchRow) float64 { return r.SimOwnColocation })
	}
	if len(rows) > 0 && rows[0].FabricOwn > 0 {
		printRepriced(w, fmt.Sprintf("at this launch's own fabric share (%.3f, not pooled)", rows[0].FabricOwn), rows, func(r SimBenchRow) float64 { return r.SimOwnFabric })
	}
}

// printRepriced prints the rows' errors with the simulated times sim
// gives instead, when the first row has one.
func printRepriced(w io.Writer, what string, rows []SimBenchRow, sim func(SimBenchRow) float64) {
	if len(rows) == 0 || !(sim(rows[0]) > 0) {
		return
	}
	var abs []float64
	var parts []string
	for _, r := range rows {
		e := (sim(r) - r.CI.Median) / r.CI.Median
		abs = append(abs, max(e, -e))
		parts = append(parts, fmt.Sprintf("%s %.3f s (%+.1f%%)", r.Query, sim(r), 100*e))
	}
	fmt.Fprintf(w, "%s: median |error| %.1f%%: %s\n", what, 100*stats.Median(abs), strings.Join(parts, ", "))
}
