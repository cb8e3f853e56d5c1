package calibrate

import (
	"context"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"gostachio/costmodel"
	"gostachio/dataset"
	"gostachio/engine"
	"gostachio/internal/stats"
)

// What reads take from the cores (costmodel.Storage.CPUSteal). On the
// paravirtualized guest this was built on, the host's side of a read runs
// on the physical cores the guest's vCPUs run on: a compute loop with no
// memory traffic ran 1.3–1.7x slower on each busy vCPU — with one loop
// (a core left free for the reader) as with two — while the engine's
// reader streamed 1.7–2.5 GB/s. microSteal times that loop on every core
// alone and beside the reader, in alternation, and fitSteal turns the
// pairs into the slowdown per byte/ns read.

const (
	// stealLoopIters makes one timed loop ~35 ms here: long beside the
	// reader's 1 MiB completions, short beside a round.
	stealLoopIters = 20_000_000
	// stealLoops is how many loops each core times per window.
	stealLoops = 6
	// stealRounds alternations of alone / beside reads (their medians
	// are fitted: the machine's speed flips within a round).
	stealRounds = 5
	// maxStealRetries is how many times a window beside reads runs when
	// no read completes in it.
	maxStealRetries = 3
)

var stealSink atomic.Uint64

// stealLoop is the compute loop: a multiply-xorshift chain, registers
// only, so what slows it is time taken from its core, not memory.
func stealLoop(n int) time.Duration {
	start := time.Now()
	x := uint64(1)
	for i := 0; i < n; i++ {
		x = x*0x9e3779b97f4a7c15 + uint64(i)
		x ^= x >> 29
	}
	stealSink.Add(x)
	return time.Since(start)
}

// stealWindow runs stealLoops loops of iters on each of cores goroutines
// and returns the median loop time over all of them, and the window's
// length.
func stealWindow(cores, iters int) (loop, window time.Duration) {
	times := make([][]int64, cores)
	var wg sync.WaitGroup
	start := time.Now()
	for k := range cores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range stealLoops {
				times[k] = append(times[k], int64(stealLoop(iters)))
			}
		}()
	}
	wg.Wait()
	window = time.Since(start)
	return time.Duration(stats.LowerMedian(slices.Concat(times...))), window
}

// microSteal measures what reads take from the cores: a compute loop on
// every core (GOMAXPROCS goroutines, as many as the engine's CPU slots),
// timed alone and while the engine's reader streams ds's lineitem file in
// readerRequest reads readerQD deep, rounds times in alternation. Each
// window is one CompSteal sample (Samples: Ns the median loop; beside
// reads, Depth the read depth; Bytes read during the window's Rows ns).
func microSteal(ctx context.Context, ds *dataset.Dataset, opts MicroOptions, logw io.Writer) ([]Sample, error) {
	path, size, err := readFile(ds)
	if err != nil {
		return nil, err
	}
	if size < readerRequest {
		return nil, fmt.Errorf("calibrate: %s (%d bytes) is too small for the read-steal benchmark", path, size)
	}
	cores := runtime.GOMAXPROCS(0)
	iters, rounds := stealLoopIters, stealRounds
	if opts.Quick {
		// Three rounds, not two: under `make test` (other packages' tests
		// on both cores) a window beside reads sometimes saw no read
		// complete even after maxStealRetries tries, and the fit needs
		// windows beside reads that read something.
		iters, rounds = stealLoopIters/2, 3
	}
	var out []Sample
	for round := range rounds {
		loop, window := stealWindow(cores, iters)
		out = append(out, Sample{Component: CompSteal, Case: "compute loop alone", Tasks: cores, Ns: loop.Nanoseconds(), Rows: window.Nanoseconds()})
		var read int64
		for try := 1; ; try++ {
			var err error
			loop, window, read, err = stealBesideReads(ctx, path, size, cores, iters, logw)
			if err != nil {
				return nil, err
			}
			// A window in which no read completed says nothing of what
			// reads take (the reader stalled: seen once in the quick
			// test's windows of ~0.1 s on a busy machine); run it again.
			if read > 0 || try == maxStealRetries {
				break
			}
			fmt.Fprintf(logw, "calibrate: read steal round %d: no read completed beside the loops, again (%d of %d)\n", round+1, try+1, maxStealRetries)
		}
		out = append(out, Sample{Component: CompSteal, Case: fmt.Sprintf("compute loop beside reads qd%d", readerQD), Tasks: cores,
			Depth: readerQD, Bytes: read, Rows: window.Nanoseconds(), Ns: loop.Nanoseconds()})
		fmt.Fprintf(logw, "calibrate: read steal round %d: loops in %s alone, in %s beside %.2f GB/s of reads\n",
			round+1, time.Duration(out[len(out)-2].Rows), window, float64(read)/float64(window.Nanoseconds()))
	}
	return out, nil
}

// stealBesideReads is one window of stealWindow while a reader streams
// path (wrapping at size) readerQD deep; it returns the bytes read while
// the loops ran.
func stealBesideReads(ctx context.Context, path string, size int64, cores, iters int, logw io.Writer) (loop, window time.Duration, read int64, err error) {
	r, err := engine.NewReader("auto", false, nil, logw)
	if err != nil {
		return 0, 0, 0, err
	}
	defer r.Close()
	var stop atomic.Bool
	var bytes atomic.Int64
	var readErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		off := int64(0)
		for !stop.Load() {
			n := 2 * readerQD
			if err := readBatch(ctx, r, path, size, off, readerRequest, readerQD, n, &bytes); err != nil {
				readErr = err
				return
			}
			off = (off + int64(n)*readerRequest) % size
		}
	}()
	// Let the reads reach their steady rate before the loops start: the
	// first reads of a reader pay its set-up (and, after the heap's huge
	// page advice, took 50+ ms to come back here).
	for deadline := time.Now().Add(time.Second); bytes.Load() < 2*readerQD*readerRequest && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	before := bytes.Load()
	loop, window = stealWindow(cores, iters)
	read = bytes.Load() - before
	stop.Store(true)
	<-done
	if readErr != nil {
		return 0, 0, 0, readErr
	}
	return loop, window, read, nil
}

// fitSteal fits costmodel.Storage.CPUSteal to the CompSteal samples of
// samples (others are skipped), in their order. Every window does the same
// work (stealLoops loops on each core), so its length is the cores' speed:
// for each window beside reads, of length w, with w0 the mean of the
// windows alone before and after it and B the bytes read per ns in it,
//
//	steal = (w/w0 − 1) / B
//
// and the fit is the median over the windows (a negative one, the loops
// faster beside reads, counts as such; the result is at least 0). The
// length, not the median loop: beside reads some loops stall for long
// (a window 1.5x as long with its median loop unchanged). ok is false
// without a window beside reads that read anything.
func fitSteal(samples []Sample) (steal float64, ok bool, q Component) {
	var ks, rates, slows []float64
	var steals []Sample
	for _, s := range samples {
		if s.Component == CompSteal {
			steals = append(steals, s)
		}
	}
	samples = steals
	for i, s := range samples {
		if s.Depth == 0 || s.Bytes <= 0 || s.Rows <= 0 || s.Ns <= 0 {
			continue
		}
		var alone []float64
		if i > 0 && samples[i-1].Depth == 0 && samples[i-1].Rows > 0 {
			alone = append(alone, float64(samples[i-1].Rows))
		}
		if i+1 < len(samples) && samples[i+1].Depth == 0 && samples[i+1].Rows > 0 {
			alone = append(alone, float64(samples[i+1].Rows))
		}
		if len(alone) == 0 {
			continue
		}
		t0 := (alone[0] + alone[len(alone)-1]) / 2
		b := float64(s.Bytes) / float64(s.Rows)
		slow := float64(s.Rows) / t0
		ks = append(ks, (slow-1)/b)
		rates = append(rates, b)
		slows = append(slows, slow)
	}
	if len(ks) == 0 {
		return 0, false, Component{}
	}
	steal = math.Max(stats.Median(ks), 0)
	q = Component{"read steal", fmt.Sprintf("%.3g ns of every core per byte read (each core at 1/(1+%.3g·B)): windows of loops %.2f–%.2fx as long beside %.2f–%.2f GB/s",
		steal, steal, slices.Min(slows), slices.Max(slows), slices.Min(rates), slices.Max(rates)), costmodel.FitQuality{N: len(ks), R2: math.NaN()}}
	return steal, true, q
}
