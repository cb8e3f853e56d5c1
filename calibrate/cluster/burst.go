package cluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"gostachio/costmodel"
	ecluster "gostachio/engine/cluster"
	"gostachio/internal/stats"
	"gostachio/sim"
)

// The fabric's efficiency on a query's exchanges (sim nic.bandwidth). A
// shaped link carries a long TCP flow at its payload rate, but a query's
// shuffle is short and many-flowed: every worker sends to every other at
// once, three flows converge on each port, and a flow that starts into a
// full port buffer loses packets and time (the 2-core development VM, 2026-11: q5 at 100
// Mbit/s moved its busiest egress at 62–81% of the payload rate while it
// had a send in flight). MeasureBurst times that pattern on the emulated
// fabric, outside any query: Nodes processes in the cluster's namespaces,
// each sending Frames frames of FrameBytes to every other through the
// engine's data plane (Streams sends in flight per peer, as a worker's
// exchange) and receiving as many, all starting at one instant; a round
// ends when the last frame is acknowledged. FitFabricEfficiency then finds
// the share of the link's payload rate at which the simulator, on the
// profile the queries are simulated with, takes as long for the same
// burst: the fabric's efficiency is calibrated from a micro-benchmark, as
// the network's CPU cost and the co-location are, never from the queries.

// BurstOptions configure MeasureBurst.
type BurstOptions struct {
	// Exe is this binary (the peers run `Exe cluster burst-peer`).
	Exe string
	// Nodes namespaces joined as a --netns cluster, shaped as Link.
	Nodes int
	Link  ecluster.Link
	// Frames of FrameBytes each worker sends to each other in a round,
	// Streams of them in flight per peer (defaults: DefaultBurstFrames of
	// 384 KiB, 4 in flight).
	Frames     int
	FrameBytes int64
	Streams    int
	// Stagger, when positive, starts each ordered pair's frames at its own
	// offset in [0, Stagger), drawn once from Seed for every round
	// (BurstResult.Starts): the shape of an exchange whose sends start as
	// a scan produces them. 0: all pairs start together.
	Stagger time.Duration
	Seed    uint64
	// Rounds timed (default 7) after Warmup untimed ones (bench-sim and
	// bench-fabric run 2: the peers' connections are fresh, as a worker's
	// are not after its first queries).
	Rounds, Warmup int
}

// DefaultBurstFrames is a burst's frames per pair of workers: 7 of 384
// KiB, 2.6 MiB, what a query moves from one worker to another at SF1 on 4
// workers (the 654 frames of q3, q5, q9 and q18 logged on the 2-core development VM, 2026-11: 118
// MiB, 2.5 MiB per query and ordered pair) in the byte-weighted median
// frame.
const DefaultBurstFrames = 7

// BurstResult is the measurement.
type BurstResult struct {
	// Seconds are the timed rounds' makespans, Median their median.
	Seconds []float64 `json:"rounds_s"`
	Median  float64   `json:"median_s"`
	// PortBytes is what each worker sent in a round; Rate is PortBytes
	// over the median: each port's egress rate over the whole burst.
	PortBytes int64   `json:"port_bytes"`
	Rate      float64 `json:"port_bytes_per_s"`
	// BusyCores is the machine's busy CPU time (every process, /proc/stat)
	// over the timed rounds' wall time: how many of its cores the bursts
	// kept busy.
	BusyCores float64 `json:"busy_cores"`
	// Starts are the pairs' offsets, ns, [src][dst] (BurstOptions.Stagger;
	// nil: none).
	Starts [][]int64 `json:"starts_ns,omitempty"`
	// The shape measured (defaults filled in).
	Nodes      int   `json:"nodes"`
	Frames     int   `json:"frames"`
	FrameBytes int64 `json:"frame_bytes"`
	Streams    int   `json:"streams"`
}

// MeasureBurst times all-to-all bursts on a fresh emulated cluster
// network (root and iproute2 needed).
func MeasureBurst(ctx context.Context, o BurstOptions) (BurstResult, error) {
	var res BurstResult
	if o.Link.Rate <= 0 || o.Nodes < 2 {
		return res, fmt.Errorf("cluster: burst: need a link rate and 2 or more nodes")
	}
	if o.Warmup < 0 || o.Frames < 0 || o.Rounds < 0 || o.Streams < 0 || o.FrameBytes < 0 || o.Stagger < 0 {
		return res, fmt.Errorf("cluster: burst: negative size (%d warm-up rounds, %d rounds, %d frames of %d bytes, %d in flight)",
			o.Warmup, o.Rounds, o.Frames, o.FrameBytes, o.Streams)
	}
	if o.Frames == 0 {
		o.Frames = DefaultBurstFrames
	}
	if o.Rounds == 0 {
		o.Rounds = 7
	}
	if o.Streams <= 0 {
		o.Streams = 4
	}
	if o.FrameBytes <= 0 {
		o.FrameBytes = 384 << 10
	}
	if o.Stagger > 0 {
		res.Starts = burstStarts(o.Nodes, o.Stagger, o.Seed)
	}
	id, err := ecluster.NewNetnsID()
	if err != nil {
		return res, err
	}
	nn, err := ecluster.NewNetns(id, o.Nodes, o.Link)
	if err != nil {
		return res, err
	}
	defer nn.Close()
	const port = 29600
	var addrs []string
	for _, a := range nn.Addrs {
		addrs = append(addrs, net.JoinHostPort(a, strconv.Itoa(port)))
	}
	peers := make([]*burstProc, o.Nodes)
	defer func() {
		for _, p := range peers {
			if p != nil {
				p.stop()
			}
		}
	}()
	for r := range o.Nodes {
		cmd := nn.Exec(r, o.Exe, "cluster", "burst-peer", "--rank", strconv.Itoa(r), "--peers", strings.Join(addrs, ","),
			"--frames", strconv.Itoa(o.Frames), "--frame", strconv.FormatInt(o.FrameBytes, 10), "--streams", strconv.Itoa(o.Streams))
		if peers[r], err = startBurstProc(cmd); err != nil {
			return res, fmt.Errorf("cluster: burst peer %d: %w", r, err)
		}
	}
	for r, p := range peers {
		if l, err := p.line(ctx, 30*time.Second); err != nil || l != "ready" {
			return res, fmt.Errorf("cluster: burst peer %d: not ready: %q %v", r, l, err)
		}
	}
	var busy, wall int64 // the machine's busy CPU and the wall time of the timed rounds
	for round := range o.Warmup + o.Rounds {
		// A start an instant ahead, the same for all: the peers' clocks
		// are this machine's.
		t0 := time.Now().Add(20 * time.Millisecond).UnixNano()
		for r, p := range peers {
			line := fmt.Sprintf("go %d", t0)
			if res.Starts != nil {
				offs := make([]string, o.Nodes)
				for d, ns := range res.Starts[r] {
					offs[d] = strconv.FormatInt(ns, 10)
				}
				line += " " + strings.Join(offs, ",")
			}
			if _, err := fmt.Fprintln(p.stdin, line); err != nil {
				return res, fmt.Errorf("cluster: burst peer %d: %w (%s)", r, err, p.errText())
			}
		}
		time.Sleep(time.Until(time.Unix(0, t0)))
		busy0, err := readBusyNs()
		if err != nil {
			return res, err
		}
		var end int64
		for r, p := range peers {
			l, err := p.line(ctx, 60*time.Second)
			if err != nil {
				return res, fmt.Errorf("cluster: burst peer %d, round %d: %w", r, round, err)
			}
			var pr ecluster.BurstPeerRound
			if err := json.Unmarshal([]byte(l), &pr); err != nil || pr.End <= 0 {
				return res, fmt.Errorf("cluster: burst peer %d, round %d: unreadable %q", r, round, l)
			}
			end = max(end, pr.End)
		}
		busy1, err := readBusyNs()
		if err != nil {
			return res, err
		}
		if round >= o.Warmup {
			res.Seconds = append(res.Seconds, float64(end-t0)/1e9)
			busy += busy1 - busy0
			wall += time.Now().UnixNano() - t0
		}
	}
	if wall > 0 {
		res.BusyCores = float64(busy) / float64(wall)
	}
	for r, p := range peers {
		if err := p.finish(); err != nil {
			return res, fmt.Errorf("cluster: burst peer %d: %w", r, err)
		}
		peers[r] = nil
	}
	res.Median = stats.Median(res.Seconds)
	res.PortBytes = int64(o.Nodes-1) * int64(o.Frames) * ecluster.BenchFrameBytes(o.FrameBytes)
	res.Rate = float64(res.PortBytes) / res.Median
	res.Nodes, res.Frames, res.FrameBytes, res.Streams = o.Nodes, o.Frames, o.FrameBytes, o.Streams
	return res, nil
}

// FabricFit is FitFabricEfficiency's answer.
type FabricFit struct {
	// Efficiency is the share of the NIC bandwidth fitted.
	Efficiency float64 `json:"efficiency"`
	// SimFull is the simulated burst at the full bandwidth and LinkBound
	// the same burst with the links alone (no node.net_cpu_cost), in
	// seconds: SimFull well above LinkBound means the simulated burst is
	// held back by the hosts' cores, not the links.
	SimFull   float64 `json:"sim_full_s"`
	LinkBound float64 `json:"link_bound_s"`
	// HostBound: SimFull exceeds LinkBound by more than hostBoundRatio,
	// so the burst does not tell the links' efficiency apart from the
	// cores' (Efficiency is then 1).
	HostBound bool `json:"host_bound,omitempty"`
}

// hostBoundRatio is how far the simulated burst may exceed its time with
// the links alone and still count as held by the links. Past it, a
// NIC bandwidth fitted to the measurement would be set by noise: the
// simulated time does not change with the bandwidth until that falls to
// the rate the cores allow (at 10 Gbit/s here, a 3.4x gap: two bursts
// that the simulator at the full rate matched within 1% and missed by
// 10% fitted 1.0 and 0.27).
const hostBoundRatio = 1.25

// FitFabricEfficiency is the share e of prof's NIC bandwidth at which the
// simulator's all-to-all burst of b's shape (sim.BurstMakespan) takes
// b.Median: the simulated time grows as e falls, so e is found by
// bisection to 0.1%. e is 1 when the simulator at the full bandwidth is
// already as slow as the measurement or slower (the fabric cannot be
// faster than its link), never below 0.05, and 1 when the simulated
// burst is held by the hosts' cores, not the links (FabricFit.HostBound).
func FitFabricEfficiency(ctx context.Context, prof *sim.Profile, b BurstResult) (FabricFit, error) {
	var fit FabricFit
	if b.Median <= 0 || b.Nodes < 2 {
		return fit, fmt.Errorf("cluster: fabric efficiency: no burst measured")
	}
	p := *prof
	full := p.NIC.Bandwidth
	frame := ecluster.BenchFrameBytes(b.FrameBytes)
	burst := func(p *sim.Profile) (float64, error) {
		ns, err := sim.BurstMakespan(ctx, p, b.Nodes, b.Frames, frame, b.Starts)
		return float64(ns) / 1e9, err
	}
	at := func(e float64) (float64, error) {
		p.NIC.Bandwidth = full * costmodel.Rate(e)
		return burst(&p)
	}
	links := p
	links.Node.NetCPUCost = 0
	var err error
	if fit.LinkBound, err = burst(&links); err != nil {
		return fit, err
	}
	if fit.SimFull, err = at(1); err != nil {
		return fit, err
	}
	fit.HostBound = fit.SimFull > hostBoundRatio*fit.LinkBound
	if fit.SimFull >= b.Median || fit.HostBound {
		fit.Efficiency = 1
		return fit, nil
	}
	lo, hi := 0.05, 1.0 // at lo: slower than measured (or the floor); at hi: faster
	if t, err := at(lo); err != nil || t <= b.Median {
		fit.Efficiency = lo
		return fit, err
	}
	for hi-lo > 1e-3 {
		mid := (lo + hi) / 2
		t, err := at(mid)
		if err != nil {
			return fit, err
		}
		if t >= b.Median {
			lo = mid
		} else {
			hi = mid
		}
	}
	fit.Efficiency = (lo + hi) / 2
	return fit, nil
}

// describe says what the fit found, against a NIC of bandwidth full.
func (fit FabricFit) describe(full costmodel.Rate) string {
	s := fmt.Sprintf("%.4g s at the NIC bandwidth %s (with the links alone: %.4g s)", fit.SimFull, full, fit.LinkBound)
	if fit.HostBound {
		return s + "; held by the hosts' cores, not the links: the fabric's efficiency is not measurable here, 1 kept"
	}
	return s + fmt.Sprintf("; as long as measured at %.3f of it", fit.Efficiency)
}

// burstStarts draws each ordered pair's start offset uniformly from [0,
// stagger) on a PCG stream of seed (0 on the diagonal): the same
// arguments give the same offsets.
func burstStarts(nodes int, stagger time.Duration, seed uint64) [][]int64 {
	rng := rand.New(rand.NewPCG(seed, 0xb0757))
	starts := make([][]int64, nodes)
	for src := range starts {
		starts[src] = make([]int64, nodes)
		for dst := range starts[src] {
			if dst != src {
				starts[src][dst] = rng.Int64N(int64(stagger))
			}
		}
	}
	return starts
}

// burstProc is one burst peer as the coordinator sees it.
type burstProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	serr  bytes.Buffer
	mu    sync.Mutex
}

func startBurstProc(cmd *exec.Cmd) (*burstProc, error) {
	p := &burstProc{cmd: cmd, lines: make(chan string, 4)}
	cmd.Stderr = lockedWriter{&p.mu, &p.serr}
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	return p, nil
}

// line is the peer's next line of output, within d.
func (p *burstProc) line(ctx context.Context, d time.Duration) (string, error) {
	select {
	case <-ctx.Done():
		return "", context.Cause(ctx)
	case l, ok := <-p.lines:
		if !ok {
			return "", fmt.Errorf("exited: %s", p.errText())
		}
		return l, nil
	case <-time.After(d):
		return "", fmt.Errorf("silent for %v: %s", d, p.errText())
	}
}

func (p *burstProc) errText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := strings.TrimSpace(p.serr.String()); s != "" {
		return s
	}
	return "no error output"
}

// finish ends the peer (stdin closed) and reports how it exited.
func (p *burstProc) finish() error {
	p.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("%w: %s", err, p.errText())
		}
		return nil
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-done
		return errors.New("did not exit when told to")
	}
}

// stop kills a peer left running by an error.
func (p *burstProc) stop() {
	p.stdin.Close()
	p.cmd.Process.Kill()
	p.cmd.Wait()
}

// lockedWriter writes to w under mu (a peer's stderr, read while it runs).
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

var _ io.Writer = lockedWriter{}

// Write writes b to w, holding mu.
func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// FabricBenchOptions configure BenchFabric.
type FabricBenchOptions struct {
	BurstOptions
	// Profile, when set, is a simulator profile of the cluster (as
	// bench-sim derives: one node per worker, the link's NIC); the fabric's
	// efficiency is fitted against it (FitFabricEfficiency).
	Profile string
}

// FabricBenchResult is BenchFabric's measurement.
type FabricBenchResult struct {
	Burst BurstResult `json:"burst"`
	Link  string      `json:"link"`
	// PayloadShare is each port's rate over the burst against the link's
	// TCP payload rate (TCPPayloadShare).
	PayloadShare float64 `json:"payload_share"`
	// Fit is FitFabricEfficiency's against Profile (in bench-sim's rows:
	// against the derived profile at the full payload rate).
	Fit     *FabricFit `json:"fit,omitempty"`
	Profile string     `json:"profile,omitempty"`
	// Pooled, in bench-sim's rows with --fabric-from: the fit to this
	// burst's rounds pooled with earlier launches' (LoadFabricRounds),
	// the one the derived profile carries.
	Pooled *PooledFabricFit `json:"pooled,omitempty"`
}

// PooledFabricFit is the fabric's share fitted to pooled burst rounds.
type PooledFabricFit struct {
	Rounds   int       `json:"rounds"`
	Launches int       `json:"launches"`
	Median   float64   `json:"median_s"`
	Fit      FabricFit `json:"fit"`
}

// BenchFabric measures all-to-all bursts on an emulated cluster network
// (MeasureBurst) and prints what each port moved against the link's
// payload rate and, given a profile, the efficiency the simulator needs to
// take as long.
func BenchFabric(ctx context.Context, o FabricBenchOptions, w io.Writer) (FabricBenchResult, error) {
	var res FabricBenchResult
	var prof *sim.Profile
	if o.Profile != "" {
		var err error
		if prof, err = sim.LoadProfile(o.Profile); err != nil {
			return res, fmt.Errorf("cluster: bench-fabric: %w", err)
		}
	}
	b, err := MeasureBurst(ctx, o.BurstOptions)
	if err != nil {
		return res, err
	}
	res.Burst, res.Link = b, o.Link.String()
	res.PayloadShare = b.Rate / (float64(o.Link.Rate) / 8 * TCPPayloadShare)
	fmt.Fprintf(w, "all-to-all bursts on %d workers over --link %s: %d frames of %d KiB to each peer, %d in flight per peer; %d rounds after %d untimed\n",
		b.Nodes, o.Link, b.Frames, b.FrameBytes>>10, b.Streams, len(b.Seconds), o.Warmup)
	fmt.Fprintf(w, "round makespan: median %.4g s (%.4g–%.4g); each port sent %.2f MiB at %.2f MB/s, %.3f of the link's TCP payload rate; %.2f cores busy\n",
		b.Median, slices.Min(b.Seconds), slices.Max(b.Seconds), float64(b.PortBytes)/(1<<20), b.Rate/1e6, res.PayloadShare, b.BusyCores)
	if prof != nil {
		fit, err := FitFabricEfficiency(ctx, prof, b)
		if err != nil {
			return res, err
		}
		res.Fit, res.Profile = &fit, o.Profile
		fmt.Fprintf(w, "the simulator on %s: %s\n", o.Profile, fit.describe(prof.NIC.Bandwidth))
	}
	return res, nil
}

// FabricSweepPoint is one size of BenchFabricSweep: the burst moved
// PairBytes from every worker to every other.
type FabricSweepPoint struct {
	PairBytes int64 `json:"pair_bytes"`
	FabricBenchResult
}

// PairFrames splits a burst of pairBytes from one worker to another into
// the fewest frames of at most maxFrame bytes, all of one size:
// ceil(pairBytes/maxFrame) frames of ceil(pairBytes/frames) bytes.
// pairBytes and maxFrame must be positive.
func PairFrames(pairBytes, maxFrame int64) (frames int, frameBytes int64) {
	n := (pairBytes + maxFrame - 1) / maxFrame
	return int(n), (pairBytes + n - 1) / n
}

// BenchFabricSweep runs BenchFabric once per size of sizes (the bytes each
// worker sends to each other in a burst, split by PairFrames into frames
// of at most o.FrameBytes; o.Frames is ignored) and prints a table of the
// bursts' share of the link by size: where a port's buffer is smaller
// than what converges on it at once, TCP loses packets and the share
// falls off a cliff (the 2-core development VM, 2026-11).
func BenchFabricSweep(ctx context.Context, o FabricBenchOptions, sizes []int64, w io.Writer) ([]FabricSweepPoint, error) {
	if len(sizes) == 0 {
		return nil, fmt.Errorf("cluster: bench-fabric: no burst sizes")
	}
	for _, s := range sizes {
		if s <= 0 {
			return nil, fmt.Errorf("cluster: bench-fabric: burst size %d bytes must be positive", s)
		}
	}
	maxFrame := o.FrameBytes
	if maxFrame <= 0 {
		maxFrame = 384 << 10
	}
	var out []FabricSweepPoint
	for _, s := range sizes {
		p := o
		p.Frames, p.FrameBytes = PairFrames(s, maxFrame)
		res, err := BenchFabric(ctx, p, w)
		if err != nil {
			return out, fmt.Errorf("cluster: bench-fabric: bursts of %d bytes per pair: %w", s, err)
		}
		out = append(out, FabricSweepPoint{PairBytes: int64(res.Burst.Frames) * ecluster.BenchFrameBytes(res.Burst.FrameBytes), FabricBenchResult: res})
	}
	fmt.Fprintf(w, "\nbursts on --link %s by the bytes each worker sends to each other:\n", o.Link)
	fmt.Fprintf(w, "%12s %8s %12s %14s", "per pair", "frames", "makespan s", "payload share")
	if o.Profile != "" {
		fmt.Fprintf(w, " %11s", "efficiency")
	}
	fmt.Fprintln(w)
	for _, p := range out {
		fmt.Fprintf(w, "%9.0f KiB %8d %12.4g %14.3f", float64(p.PairBytes)/1024, p.Burst.Frames, p.Burst.Median, p.PayloadShare)
		if p.Fit != nil {
			fmt.Fprintf(w, " %11.3f", p.Fit.Efficiency)
		}
		fmt.Fprintln(w)
	}
	return out, nil
}

// RefitFabric fits bursts measured before (bench-fabric --json outputs:
// one result or a --pair-bytes sweep's points, in files) against the
// simulator profile at path, as BenchFabric does live, and prints each:
// one set of measurements, priced against another model.
func RefitFabric(ctx context.Context, path string, files []string, w io.Writer) ([]FabricSweepPoint, error) {
	prof, err := sim.LoadProfile(path)
	if err != nil {
		return nil, fmt.Errorf("cluster: bench-fabric: %w", err)
	}
	var out []FabricSweepPoint
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("cluster: bench-fabric: %w", err)
		}
		var pts []FabricSweepPoint
		if err := json.Unmarshal(b, &pts); err != nil {
			var one FabricBenchResult
			if err1 := json.Unmarshal(b, &one); err1 != nil {
				return nil, fmt.Errorf("cluster: bench-fabric: %s: not a bench-fabric --json output: %v", f, err1)
			}
			pts = []FabricSweepPoint{{PairBytes: int64(one.Burst.Frames) * ecluster.BenchFrameBytes(one.Burst.FrameBytes), FabricBenchResult: one}}
		}
		for _, p := range pts {
			if p.Burst.Nodes < 2 || !(p.Burst.Median > 0) {
				return nil, fmt.Errorf("cluster: bench-fabric: %s: a burst without its nodes or makespan", f)
			}
			fit, err := FitFabricEfficiency(ctx, prof, p.Burst)
			if err != nil {
				return nil, fmt.Errorf("cluster: bench-fabric: %s: %w", f, err)
			}
			p.Fit, p.Profile = &fit, path
			fmt.Fprintf(w, "%s: %d x %d KiB per pair on %d workers over --link %s, %.4g s: %s\n",
				f, p.Burst.Frames, p.Burst.FrameBytes>>10, p.Burst.Nodes, p.Link, p.Burst.Median, fit.describe(prof.NIC.Bandwidth))
			out = append(out, p)
		}
	}
	return out, nil
}
