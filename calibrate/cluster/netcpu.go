package cluster

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	ecluster "gostachio/engine/cluster"
	"gostachio/internal/stats"
)

// The network's price in CPU (sim node.net_cpu_cost). On an emulated
// cluster every byte a worker sends crosses this machine's TCP stack twice
// (the sender's writes and the receiver's reads, with the veths, the
// bridge and the shaper between) on the cores the kernels run on. A 4-node
// q3 at 1 Gbit/s moved its 40 MiB at 250 MB/s in all where the links
// carry 480, with the kernels busy beside it: the network waits for the
// cores as much as the kernels do. MeasureNetCPU prices that work: the
// machine's busy CPU time (/proc/stat, every core, user, system and
// interrupts) while the data plane streams between two namespaces over a
// shaped link, in a long and a short run, so that what does not grow with
// the bytes (starting the peers, their round trips, the namespaces' own
// noise) cancels:
//
//	cost = (busy_long − busy_short − idle·(t_long − t_short)) / (2·(bytes_long − bytes_short))
//
// in ns of one core per byte at each end, idle the machine's busy rate
// measured alone just before. Rounds alternate and the median counts; a
// round priced at 0 (the machine as busy without the stream as with it:
// other work interfered) is run again, up to maxInconclusiveRounds in all.

// NetCPUOptions configure MeasureNetCPU.
type NetCPUOptions struct {
	// Exe is this binary (the peers run `Exe cluster exchange-peer`).
	Exe string
	// Link shapes the two namespaces' veths.
	Link ecluster.Link
	// Duration of the long run (the short one runs a third of it), Rounds
	// of each pair (default 3).
	Duration time.Duration
	Rounds   int
	// Streams sends in flight of FrameBytes each (default 4 of 384 KiB:
	// the engine's sends in flight per peer and its byte-weighted median
	// frame at SF1).
	Streams    int
	FrameBytes int64
}

// NetCPUResult is the measurement.
type NetCPUResult struct {
	// Cost is the median of the rounds' costs, ns of one core per byte at
	// each end.
	Cost   float64   `json:"ns_per_byte"`
	Rounds []float64 `json:"rounds_ns_per_byte"`
	// SoftirqCost is the same over the machine's interrupt time alone
	// (/proc/stat irq and softirq: the kernel's packet processing, the
	// veths, the bridge and the shaper), without the peers' user and
	// system time (their copies and system calls); the median over the
	// same rounds as Rounds.
	SoftirqCost   float64   `json:"softirq_ns_per_byte"`
	SoftirqRounds []float64 `json:"rounds_softirq_ns_per_byte"`
	// Rate is the long runs' median throughput, bytes per second.
	Rate float64 `json:"bytes_per_s"`
}

// MeasureNetCPU measures the network's CPU cost per byte over a netns
// pair shaped as o.Link (root and iproute2 needed).
func MeasureNetCPU(ctx context.Context, o NetCPUOptions) (NetCPUResult, error) {
	var res NetCPUResult
	if o.Link.Rate <= 0 {
		return res, fmt.Errorf("cluster: network CPU cost: need a link rate")
	}
	if o.Duration <= 0 {
		o.Duration = 3 * time.Second
	}
	if o.Rounds <= 0 {
		o.Rounds = 3
	}
	if o.Streams <= 0 {
		o.Streams = 4
	}
	if o.FrameBytes <= 0 {
		o.FrameBytes = 384 << 10
	}
	nn, err := ecluster.NewNetnsPair(o.Link)
	if err != nil {
		return res, err
	}
	defer nn.Close()
	addrs := [2]string{nn.Addrs[0], nn.Addrs[1]}
	short := o.Duration / 3
	var rates []float64
	attempts := 0 // rounds run, the inconclusive ones included (each its own ports)
	for len(res.Rounds) < o.Rounds {
		if attempts == o.Rounds+maxInconclusiveRounds {
			return res, fmt.Errorf("cluster: network CPU cost: %d of %d rounds inconclusive: the machine was as busy without the stream as with it (other work on it?); give the cost instead (bench-sim --net-cpu-cost)",
				attempts-len(res.Rounds), attempts)
		}
		round := attempts
		attempts++
		// What the machine does on its own meanwhile.
		idleStart, err := readCPUTimes()
		if err != nil {
			return res, err
		}
		t0 := time.Now()
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(o.Duration - short):
		}
		idleEnd, err := readCPUTimes()
		if err != nil {
			return res, err
		}
		idleWall := float64(time.Since(t0).Nanoseconds())
		idle := float64(idleEnd.busy-idleStart.busy) / idleWall
		idleIrq := float64(idleEnd.irq-idleStart.irq) / idleWall
		var runs [2]struct {
			busy, irq, wall float64
			bytes           int64
		}
		var rate float64
		for k, d := range []time.Duration{short, o.Duration} {
			b0, err := readCPUTimes()
			if err != nil {
				return res, err
			}
			t := time.Now()
			ex, err := ecluster.RunExchangePair(ctx, ecluster.ExchangeBenchOptions{Exe: o.Exe, Duration: d, Streams: o.Streams, FrameBytes: o.FrameBytes},
				addrs, 6201+4*round+2*k, nn.Exec)
			if err != nil {
				return res, fmt.Errorf("cluster: network CPU cost: %w", err)
			}
			b1, err := readCPUTimes()
			if err != nil {
				return res, err
			}
			runs[k].busy, runs[k].irq = float64(b1.busy-b0.busy), float64(b1.irq-b0.irq)
			runs[k].wall, runs[k].bytes = float64(time.Since(t).Nanoseconds()), ex.Bytes
			rate = float64(ex.Bytes) / ex.Seconds
		}
		moved := runs[1].bytes - runs[0].bytes
		if moved <= 0 {
			return res, fmt.Errorf("cluster: network CPU cost: the long run moved no more than the short one (%d vs %d bytes)", runs[1].bytes, runs[0].bytes)
		}
		// A round whose stream did not add to the machine's busy time
		// measured other work (a test binary beside it, a burst of the
		// host's): run another instead of pricing the network at 0.
		cost := netCPUCost(runs[1].busy-runs[0].busy, runs[1].wall-runs[0].wall, idle, moved)
		if !(cost > 0) {
			continue
		}
		res.Rounds = append(res.Rounds, cost)
		res.SoftirqRounds = append(res.SoftirqRounds, netCPUCost(runs[1].irq-runs[0].irq, runs[1].wall-runs[0].wall, idleIrq, moved))
		rates = append(rates, rate)
	}
	res.Cost = stats.Median(res.Rounds)
	res.SoftirqCost = stats.Median(res.SoftirqRounds)
	res.Rate = stats.Median(rates)
	return res, nil
}

// maxInconclusiveRounds is how many rounds MeasureNetCPU runs again
// before it gives up on a measurement.
const maxInconclusiveRounds = 3

// netCPUCost is the formula above: busy ns of the machine over wall ns
// more, less idle·wall, per byte moved, per end; never negative.
func netCPUCost(busy, wall, idle float64, moved int64) float64 {
	return max(0, (busy-idle*wall)/(2*float64(moved)))
}

// userHz is the unit of /proc/stat's times (USER_HZ: 100 on every Linux
// architecture Go runs on).
const userHz = 100

// cpuTimes are the machine's CPU times so far, over every core, in ns,
// from /proc/stat's "cpu" line: busy is user, nice, system, irq and
// softirq (idle, iowait and a hypervisor's steal left out); irq is irq and
// softirq alone.
type cpuTimes struct {
	busy, irq int64
}

// readBusyNs is the machine's busy CPU time so far (cpuTimes.busy).
func readBusyNs() (int64, error) {
	t, err := readCPUTimes()
	return t.busy, err
}

// readCPUTimes reads cpuTimes from /proc/stat.
func readCPUTimes() (cpuTimes, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}, fmt.Errorf("cluster: busy CPU time: %w", err)
	}
	return parseCPUTimes(b)
}

// parseCPUTimes reads cpuTimes from /proc/stat's text.
func parseCPUTimes(stat []byte) (cpuTimes, error) {
	sc := bufio.NewScanner(bytes.NewReader(stat))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != "cpu" {
			continue
		}
		if len(f) < 8 {
			return cpuTimes{}, fmt.Errorf("cluster: /proc/stat: cpu line with %d fields, want 7 or more", len(f)-1)
		}
		var t cpuTimes
		for _, i := range []int{1, 2, 3, 6, 7} { // user nice system irq softirq
			v, err := strconv.ParseInt(f[i], 10, 64)
			if err != nil {
				return cpuTimes{}, fmt.Errorf("cluster: /proc/stat: cpu field %d: %w", i, err)
			}
			t.busy += v * (1e9 / userHz)
			if i >= 6 {
				t.irq += v * (1e9 / userHz)
			}
		}
		return t, nil
	}
	return cpuTimes{}, fmt.Errorf("cluster: /proc/stat: no cpu line")
}
