package cluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gostachio/engine"
	"gostachio/internal/stats"
	"gostachio/kernels/cpu"
	"gostachio/plan"
)

// Co-location efficiency (`gostachio cluster bench-sim`, before deriving
// the simulated profile): how much of this machine's compute N worker
// processes get when they share it, against one process alone. The
// simulator shares a machine's cores max-min fairly among its nodes
// (node.shared_machine) but prices each kernel at its single-process
// speed; N processes of the engine, each with its own heap, threads and
// caches, do not get that speed back. Measured here: 4 processes running
// the kernel loop below on 2 vCPUs of a paravirtualized guest did 39-51%
// of the work of one process with the same threads in total (context
// switches between 8 runnable threads, each heap faulting in its own
// memory, caches shared four ways).
//
// The measurement is a micro-benchmark like those of `calibrate --micro`:
// one hash build and probe loop (no query, no dataset), run by one process
// and then by N at once, alternating, Rounds times each.

// ColocationOptions configure MeasureColocation.
type ColocationOptions struct {
	// Exe is this binary (the peers run `Exe cluster colocate-peer`).
	Exe string
	// Nodes processes share the machine in the second measurement.
	Nodes int
	// Duration of each measurement; Rounds of each, alternating.
	Duration time.Duration
	Rounds   int
	// Threads is how many kernel loops each of the Nodes processes runs
	// at once: a worker's devices, the most kernels it runs together
	// (0: GOMAXPROCS). The process alone runs GOMAXPROCS loops, as the
	// single-process engine runs a device per core.
	Threads int
	// Work is what the processes run (ColocationWork; zero: the loop).
	Work ColocationWork
}

// ColocationWork is the work of a co-location measurement: the hash
// build-and-probe loop (Data empty), or the leading operators of Queries'
// scan pipelines over the first chunks of their tables in Data.
type ColocationWork struct {
	Data    string
	Queries []string
	// Catalog builds the plans of Queries (not passed to the peers: each
	// peer's own).
	Catalog plan.Catalog
}

// String names the work ("loop", or "queries q3,q5").
func (w ColocationWork) String() string {
	if w.Data == "" {
		return "loop"
	}
	return "queries " + strings.Join(w.Queries, ",")
}

// peerArgs are the colocate-peer flags that select w.
func (w ColocationWork) peerArgs() []string {
	if w.Data == "" {
		return nil
	}
	return []string{"--data", w.Data, "--queries", strings.Join(w.Queries, ",")}
}

// ColocationResult is the measurement: kernel-loop iterations per second,
// of one process alone and summed over Nodes processes at once, per round,
// and the efficiency (colocationEfficiency).
type ColocationResult struct {
	Nodes      int       `json:"nodes"`
	Alone      []float64 `json:"alone_per_s"`
	Together   []float64 `json:"together_per_s"`
	Efficiency float64   `json:"efficiency"`
}

// MeasureColocation runs the kernel loop in one process, then in o.Nodes
// processes started together, o.Rounds times each, and returns the
// efficiency (colocationEfficiency).
func MeasureColocation(ctx context.Context, o ColocationOptions) (ColocationResult, error) {
	if o.Nodes < 1 || o.Duration <= 0 {
		return ColocationResult{}, fmt.Errorf("cluster: co-location: need nodes >= 1 and a duration")
	}
	if o.Rounds < 1 {
		o.Rounds = 3
	}
	res := ColocationResult{Nodes: o.Nodes}
	counts := []int{1, o.Nodes}
	if o.Nodes == 1 {
		counts = counts[:1]
	}
	for range o.Rounds {
		for _, n := range counts {
			threads := 0 // the peer's GOMAXPROCS
			if n > 1 {
				threads = o.Threads
			}
			rate, err := colocateRound(ctx, o.Exe, n, threads, o.Duration, o.Work)
			if err != nil {
				return res, err
			}
			if n == 1 {
				res.Alone = append(res.Alone, rate)
			} else {
				res.Together = append(res.Together, rate)
			}
		}
	}
	if o.Nodes == 1 {
		res.Together = res.Alone
	}
	eff, ok := colocationEfficiency(res.Alone, res.Together)
	if !ok {
		return res, fmt.Errorf("cluster: co-location: the kernel loop made no progress alone")
	}
	res.Efficiency = eff
	return res, nil
}

// colocationEfficiency is the median over rounds of together_i / alone_i:
// each round's processes against the process alone just before them.
// This machine's CPU holds one of two speeds for seconds at a time, so a
// round's two windows mostly share a speed where the medians of all the
// windows alone and all the windows together may not (one launch measured
// 0.43 that way from rounds of 0.43–0.54, where others measured
// 0.56–0.65). ok is false when a round made no progress alone.
func colocationEfficiency(alone, together []float64) (eff float64, ok bool) {
	n := min(len(alone), len(together))
	if n == 0 {
		return 0, false
	}
	r := make([]float64, n)
	for i := range n {
		if !(alone[i] > 0) {
			return 0, false
		}
		r[i] = together[i] / alone[i]
	}
	return stats.Median(r), true
}

// colocateRound starts n peers of threads kernel loops each (0: their
// GOMAXPROCS), lets them all set up, starts them at once and returns their
// summed iterations per second.
func colocateRound(ctx context.Context, exe string, n, threads int, d time.Duration, work ColocationWork) (float64, error) {
	ctx, cancel := context.WithCancel(ctx)
	type peer struct {
		cmd  *exec.Cmd
		in   io.WriteCloser
		out  *bufio.Reader
		errb bytes.Buffer
	}
	peers := make([]*peer, n)
	// On an early return the peers still wait for stdin: killed first.
	defer func() {
		cancel()
		for _, p := range peers {
			if p != nil {
				p.cmd.Wait()
			}
		}
	}()
	for i := range peers {
		args := append([]string{"cluster", "colocate-peer", "--duration", d.String(), "--threads", strconv.Itoa(threads)}, work.peerArgs()...)
		p := &peer{cmd: exec.CommandContext(ctx, exe, args...)}
		p.cmd.Stderr = &p.errb
		in, err := p.cmd.StdinPipe()
		if err != nil {
			return 0, err
		}
		out, err := p.cmd.StdoutPipe()
		if err != nil {
			return 0, err
		}
		if err := p.cmd.Start(); err != nil {
			return 0, fmt.Errorf("cluster: co-location peer: %w", err)
		}
		p.in, p.out = in, bufio.NewReader(out)
		peers[i] = p
	}
	failed := func(p *peer, err error) error {
		return fmt.Errorf("cluster: co-location peer: %v %s", err, strings.TrimSpace(p.errb.String()))
	}
	for _, p := range peers {
		if line, err := p.out.ReadString('\n'); err != nil || strings.TrimSpace(line) != "ready" {
			return 0, failed(p, fmt.Errorf("not ready (%q, %v)", line, err))
		}
	}
	for _, p := range peers {
		p.in.Close()
	}
	var total float64
	for _, p := range peers {
		var r colocateReport
		if err := json.NewDecoder(p.out).Decode(&r); err != nil || r.Seconds <= 0 {
			return 0, failed(p, fmt.Errorf("unreadable report (%v)", err))
		}
		total += float64(r.Iterations) / r.Seconds
	}
	return total, nil
}

// colocateReport is one peer's count: kernel-loop iterations, or rows
// through the queries' operators.
type colocateReport struct {
	Iterations int64   `json:"iterations"`
	Seconds    float64 `json:"seconds"`
}

// RunColocatePeer is one process of the measurement (the hidden `gostachio
// cluster colocate-peer`): it builds its inputs, writes "ready", waits
// for stdin to end, runs threads loops of work at once (0: one per core it
// has; as a worker's kernels do, with the workers' garbage collector
// settings) for d and writes a colocateReport as JSON.
func RunColocatePeer(ctx context.Context, d time.Duration, threads int, work ColocationWork, stdin io.Reader, stdout io.Writer) error {
	if d <= 0 {
		return fmt.Errorf("cluster: colocate-peer: duration %v", d)
	}
	if threads < 0 {
		return fmt.Errorf("cluster: colocate-peer: %d threads", threads)
	}
	if threads == 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	defer engine.TuneGC()()
	step, err := colocateStep(work)
	if err != nil {
		return fmt.Errorf("cluster: colocate-peer: %w", err)
	}
	if _, err := fmt.Fprintln(stdout, "ready"); err != nil {
		return err
	}
	io.Copy(io.Discard, stdin)
	var n atomic.Int64
	var firstErr error
	var once sync.Once
	start := time.Now()
	end := start.Add(d)
	var wg sync.WaitGroup
	for th := range threads {
		wg.Go(func() {
			for i := 0; time.Now().Before(end) && ctx.Err() == nil; i++ {
				done, err := step(th, i)
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				n.Add(done)
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return fmt.Errorf("cluster: colocate-peer: %w", firstErr)
	}
	return json.NewEncoder(stdout).Encode(colocateReport{Iterations: n.Load(), Seconds: time.Since(start).Seconds()})
}

// colocateStep returns the unit of work of a peer: step(thread, i) does
// thread's i-th piece and returns how much it did (loop iterations, or
// rows).
func colocateStep(work ColocationWork) (step func(thread, i int) (int64, error), err error) {
	if work.Data != "" {
		return queryOpsStep(work)
	}
	build, probe := colocateInputs()
	return func(int, int) (int64, error) { return 1, colocateIteration(build, probe) }, nil
}

// colocateInputs are a build side of 256 Ki keys (every 4th integer, with
// a payload) and a probe side of 1 Mi keys of which a quarter match.
func colocateInputs() (build, probe *cpu.Batch) {
	const nb, np = 1 << 18, 1 << 20
	bk, bv := make([]int64, nb), make([]int64, nb)
	for i := range bk {
		bk[i], bv[i] = int64(4*i), int64(i)
	}
	pk, pv := make([]int64, np), make([]int64, np)
	for i := range pk {
		pk[i], pv[i] = int64(i*7919%(4*nb)), int64(i)
	}
	build = &cpu.Batch{Rows: nb, Names: []string{"k", "v"}, Cols: []cpu.Vec{{Type: cpu.TInt64, I64: bk}, {Type: cpu.TInt64, I64: bv}}}
	probe = &cpu.Batch{Rows: np, Names: []string{"pk", "pv"}, Cols: []cpu.Vec{{Type: cpu.TInt64, I64: pk}, {Type: cpu.TInt64, I64: pv}}}
	return build, probe
}

// colocateIteration is one hash build and inner-join probe (fresh outputs,
// as the engine's kernels allocate them).
func colocateIteration(build, probe *cpu.Batch) error {
	h, err := cpu.BuildHashTable(build, []string{"k"})
	if err != nil {
		return err
	}
	out, err := h.Probe(probe, []string{"pk"}, plan.JoinInner, []string{"v"})
	if err != nil {
		return err
	}
	if out.Rows != probe.Rows/4 {
		return fmt.Errorf("probe matched %d rows, want %d", out.Rows, probe.Rows/4)
	}
	return nil
}
