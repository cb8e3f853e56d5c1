package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"gostachio/engine/storage/alloc"
	"gostachio/internal/stats"
)

// BenchOptions are the flags of `gostachio bench io`.
type BenchOptions struct {
	Data      string        // a file, or a folder whose largest regular file is read
	IO        string        // IOUring, IOPread or IOAuto (default)
	QD        int           // requests in flight (default 32)
	BlockSize int64         // bytes per request (default 1 MiB); a multiple of 4096
	Pattern   string        // "seq" (default) or "rand"
	Duration  time.Duration // how long each side runs (default 10s)
	Size      int64         // bytes of the file to use from offset 0 (0: all of it)
	VsFio     bool          // also run fio with the same parameters and print the ratio
	JSON      bool          // one JSON object instead of text
	FioPath   string        // fio executable (default "fio" on PATH)
	Seed      uint64        // random offsets' seed (rand pattern)
	SQPoll    bool          // reader option (fio is run without sqthread_poll)
	NoFixed   bool          // disable fixed buffers and registered files
	// Rounds is how many interleaved (ours, fio) rounds VsFio runs (default 5; 8 or more give a
	// 95% interval of the median ratio). Each side runs Duration per round.
	Rounds int
}

// BenchResult is one side's figures.
type BenchResult struct {
	Tool    string  `json:"tool"` // "gostachio" or "fio"
	IO      string  `json:"io"`
	Seconds float64 `json:"seconds"`
	Bytes   int64   `json:"bytes"`
	GBps    float64 `json:"gb_per_s"` // 1e9 bytes per second
	IOPS    float64 `json:"iops"`
	P50us   float64 `json:"p50_us"` // request latency, submission to completion
	P99us   float64 `json:"p99_us"`
}

// BenchRound is one round of a --vs-fio comparison: both sides on the same file, in the order
// FioFirst says, and their ratios (ours / fio).
type BenchRound struct {
	Round     int         `json:"round"` // 1-based
	FioFirst  bool        `json:"fio_first"`
	Ours      BenchResult `json:"gostachio"`
	Fio       BenchResult `json:"fio"`
	RatioGBps float64     `json:"ratio_gbps"`
	RatioIOPS float64     `json:"ratio_iops"`
}

// BenchReport is what BenchIO prints (as JSON with BenchOptions.JSON). Without VsFio, Ours is the
// single run. With VsFio, Rounds holds every round; Ours and Fio hold each figure's median over
// the rounds (Seconds and Bytes: totals); RatioGBps/RatioIOPS are the medians of the per-round
// ratios (not ratios of medians), summarized with their 95% intervals in RatioGBpsStats and
// RatioIOPSStats. Warmup is the untimed pass over the file that precedes the rounds.
type BenchReport struct {
	File           string          `json:"file"`
	FileSize       int64           `json:"file_size"`
	Pattern        string          `json:"pattern"`
	BlockSize      int64           `json:"block_size"`
	QD             int             `json:"qd"`
	Seed           uint64          `json:"seed"`
	Warmup         *BenchResult    `json:"warmup,omitempty"`
	Ours           BenchResult     `json:"gostachio"`
	Fio            *BenchResult    `json:"fio,omitempty"`
	RatioGBps      float64         `json:"ratio_gbps,omitempty"` // ours / fio, median over rounds
	RatioIOPS      float64         `json:"ratio_iops,omitempty"`
	Rounds         []BenchRound    `json:"rounds,omitempty"`
	RatioGBpsStats *stats.MedianCI `json:"ratio_gbps_stats,omitempty"`
	RatioIOPSStats *stats.MedianCI `json:"ratio_iops_stats,omitempty"`
}

// BenchIO implements `gostachio bench io`: O_DIRECT reads of one file at a fixed depth and block
// size for a fixed time, reporting throughput, IOPS and latency percentiles. With VsFio it
// compares with fio on the same file with the same block size, depth, pattern, O_DIRECT and
// duration (io_uring engine) the way Abedi & Brecht (ICPE'17) ask for on noisy machines: first an
// untimed warm-up that reads the file once (so both sides start from the same host-cache state),
// then Rounds rounds, each running the two sides back to back in an order drawn from Seed, and
// the median of the per-round ratios with its nonparametric 95% interval (stats.MedianCI). Progress
// lines go to stderr, the report to stdout.
func BenchIO(ctx context.Context, opts BenchOptions, stdout, stderr io.Writer) error {
	if err := opts.fill(); err != nil {
		return err
	}
	path, size, err := benchFile(opts.Data)
	if err != nil {
		return err
	}
	if opts.Size > 0 {
		size = min(size, opts.Size)
	}
	if size < opts.BlockSize {
		return fmt.Errorf("engine/storage: bench: %s has %d bytes, less than one %d-byte block", path, size, opts.BlockSize)
	}
	rep := BenchReport{File: path, FileSize: size, Pattern: opts.Pattern, BlockSize: opts.BlockSize, QD: opts.QD, Seed: opts.Seed}
	fmt.Fprintf(stderr, "bench io: %s, %d bytes, %s %d-byte reads at QD %d for %v (%s)\n", path, size, opts.Pattern, opts.BlockSize, opts.QD, opts.Duration, opts.IO)
	if !opts.VsFio {
		if rep.Ours, err = benchOurs(ctx, opts, path, size, 0, stderr); err != nil {
			return err
		}
	} else if err := benchRounds(ctx, opts, path, size, &rep, stderr); err != nil {
		return err
	}
	if opts.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	writeBenchText(stdout, &rep)
	return nil
}

// benchRounds runs the warm-up and the interleaved rounds and fills rep.
func benchRounds(ctx context.Context, opts BenchOptions, path string, size int64, rep *BenchReport, stderr io.Writer) error {
	// Warm-up: one sequential pass over the extent both sides will read, in blocks of at least
	// 1 MiB (fewer requests), not counted.
	wopts := opts
	wopts.Pattern, wopts.Duration = "seq", time.Hour
	if size >= 1<<20 {
		wopts.BlockSize = max(opts.BlockSize, 1<<20)
	}
	fmt.Fprintf(stderr, "bench io: warm-up: reading %d bytes once\n", size)
	w, err := benchOurs(ctx, wopts, path, size, size/wopts.BlockSize*wopts.BlockSize, stderr)
	if err != nil {
		return fmt.Errorf("engine/storage: bench: warm-up: %w", err)
	}
	rep.Warmup = &w
	order := rand.New(rand.NewPCG(opts.Seed, 0x0bde7))
	var ours, fios []BenchResult
	var rg, ri []float64
	for i := 1; i <= opts.Rounds; i++ {
		rd := BenchRound{Round: i, FioFirst: order.IntN(2) == 1}
		for k := 0; k < 2; k++ {
			if (k == 0) == rd.FioFirst {
				fmt.Fprintf(stderr, "bench io: round %d/%d: fio\n", i, opts.Rounds)
				if rd.Fio, err = runFio(ctx, opts, path, size); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(stderr, "bench io: round %d/%d: gostachio\n", i, opts.Rounds)
				// A different seed per round: random offsets do not repeat the previous round's.
				o := opts
				o.Seed = opts.Seed + uint64(i)
				if rd.Ours, err = benchOurs(ctx, o, path, size, 0, stderr); err != nil {
					return err
				}
			}
		}
		rd.RatioGBps, rd.RatioIOPS = ratio(rd.Ours.GBps, rd.Fio.GBps), ratio(rd.Ours.IOPS, rd.Fio.IOPS)
		rep.Rounds = append(rep.Rounds, rd)
		ours, fios = append(ours, rd.Ours), append(fios, rd.Fio)
		rg, ri = append(rg, rd.RatioGBps), append(ri, rd.RatioIOPS)
	}
	rep.Ours = medianResult(ours)
	f := medianResult(fios)
	rep.Fio = &f
	gs, is := stats.MedianNormalCI(rg), stats.MedianNormalCI(ri)
	rep.RatioGBpsStats, rep.RatioIOPSStats = &gs, &is
	rep.RatioGBps, rep.RatioIOPS = gs.Median, is.Median
	return nil
}

func ratio(a, b float64) float64 {
	if b > 0 {
		return a / b
	}
	return 0
}

// medianResult is each figure's median over rs (Seconds and Bytes summed).
func medianResult(rs []BenchResult) BenchResult {
	if len(rs) == 0 {
		return BenchResult{}
	}
	out := BenchResult{Tool: rs[0].Tool, IO: rs[0].IO}
	med := func(get func(BenchResult) float64) float64 {
		xs := make([]float64, len(rs))
		for i, r := range rs {
			xs[i] = get(r)
		}
		return stats.MedianNormalCI(xs).Median
	}
	for _, r := range rs {
		out.Seconds += r.Seconds
		out.Bytes += r.Bytes
	}
	out.GBps = med(func(r BenchResult) float64 { return r.GBps })
	out.IOPS = med(func(r BenchResult) float64 { return r.IOPS })
	out.P50us = med(func(r BenchResult) float64 { return r.P50us })
	out.P99us = med(func(r BenchResult) float64 { return r.P99us })
	return out
}

// writeBenchText prints the report for people.
func writeBenchText(w io.Writer, rep *BenchReport) {
	fmt.Fprintf(w, "file %s (%d bytes used), %s, bs %d, qd %d\n", rep.File, rep.FileSize, rep.Pattern, rep.BlockSize, rep.QD)
	line := func(label string, r BenchResult) {
		fmt.Fprintf(w, "  %-9s %-5s %7.3f GB/s %10.0f IOPS  p50 %8.1f µs  p99 %8.1f µs\n", label, r.IO, r.GBps, r.IOPS, r.P50us, r.P99us)
	}
	if rep.Fio == nil {
		line(rep.Ours.Tool, rep.Ours)
		return
	}
	if rep.Warmup != nil {
		fmt.Fprintf(w, "  warm-up (not counted): %d bytes at %.3f GB/s\n", rep.Warmup.Bytes, rep.Warmup.GBps)
	}
	fmt.Fprintf(w, "  %d rounds, order from seed %d:\n", len(rep.Rounds), rep.Seed)
	for _, rd := range rep.Rounds {
		first := "gostachio"
		if rd.FioFirst {
			first = "fio"
		}
		fmt.Fprintf(w, "  round %2d (%-9s first): ours %7.3f GB/s %10.0f IOPS, fio %7.3f GB/s %10.0f IOPS, ratio %.3f (GB/s) %.3f (IOPS)\n",
			rd.Round, first, rd.Ours.GBps, rd.Ours.IOPS, rd.Fio.GBps, rd.Fio.IOPS, rd.RatioGBps, rd.RatioIOPS)
	}
	fmt.Fprintf(w, "  medians over rounds:\n")
	line(rep.Ours.Tool, rep.Ours)
	line(rep.Fio.Tool, *rep.Fio)
	stat := func(name string, m *stats.MedianCI) {
		if m.CI {
			fmt.Fprintf(w, "  ratio gostachio/fio (%s): median %.3f, 95%% CI [%.3f, %.3f] (ranks %d and %d of %d)\n", name, m.Median, m.Lo, m.Hi, m.LoRank, m.HiRank, m.N)
			return
		}
		fmt.Fprintf(w, "  ratio gostachio/fio (%s): median %.3f, 95%% CI unavailable with %d rounds (needs 8); range [%.3f, %.3f] holds the median with probability %.4f\n",
			name, m.Median, m.N, m.Min, m.Max, m.RangeCoverage)
	}
	stat("GB/s", rep.RatioGBpsStats)
	stat("IOPS", rep.RatioIOPSStats)
}

func (o *BenchOptions) fill() error {
	if o.IO == "" {
		o.IO = IOAuto
	}
	if o.QD <= 0 {
		o.QD = 32
	}
	if o.BlockSize <= 0 {
		o.BlockSize = 1 << 20
	}
	if o.Pattern == "" {
		o.Pattern = "seq"
	}
	if o.Duration <= 0 {
		o.Duration = 10 * time.Second
	}
	if o.Rounds <= 0 {
		o.Rounds = 5
	}
	if o.FioPath == "" {
		o.FioPath = "fio"
	}
	switch {
	case o.Pattern != "seq" && o.Pattern != "rand":
		return fmt.Errorf("engine/storage: bench: pattern %q: want seq or rand", o.Pattern)
	case o.BlockSize%minAlign != 0 || o.BlockSize > 1<<30:
		return fmt.Errorf("engine/storage: bench: block size %d: want a multiple of %d up to 1 GiB (O_DIRECT)", o.BlockSize, minAlign)
	case o.Data == "":
		return errors.New("engine/storage: bench: no --data file or folder")
	}
	return nil
}

// benchFile resolves --data: a regular file, or the largest regular file under a folder.
func benchFile(data string) (string, int64, error) {
	st, err := os.Stat(data)
	if err != nil {
		return "", 0, fmt.Errorf("engine/storage: bench: %w", err)
	}
	if st.Mode().IsRegular() {
		return data, st.Size(), nil
	}
	best, bestSize := "", int64(-1)
	err = filepath.WalkDir(data, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Size() > bestSize {
			best, bestSize = p, info.Size()
		}
		return nil
	})
	if err != nil {
		return "", 0, fmt.Errorf("engine/storage: bench: walk %s: %w", data, err)
	}
	if best == "" {
		return "", 0, fmt.Errorf("engine/storage: bench: no regular file under %s", data)
	}
	return best, bestSize, nil
}

// benchOurs keeps QD one-block requests in flight for opts.Duration, or until stopBytes bytes were
// issued if stopBytes > 0, then drains.
func benchOurs(ctx context.Context, opts BenchOptions, path string, size, stopBytes int64, stderr io.Writer) (BenchResult, error) {
	arena := min(alloc.ClassSize(opts.BlockSize)*int64(opts.QD), alloc.MaxArenaBytes)
	pool, err := alloc.NewPool(alloc.Options{ArenaBytes: arena, Populate: true})
	if err != nil {
		return BenchResult{}, err
	}
	defer pool.Close()
	clock := NewMonotonicClock()
	ropts := Options{IO: opts.IO, QueueDepth: opts.QD, Combine: CombineOptions{MaxRequest: opts.BlockSize},
		FixedBuffers: !opts.NoFixed, SQPoll: opts.SQPoll, Allocator: pool, Clock: clock, Log: stderr}
	if !opts.NoFixed {
		ropts.RegisteredFiles = 1
	}
	r, err := NewReader(ropts)
	if err != nil {
		return BenchResult{}, err
	}
	defer r.Close()
	f, err := r.Open(path, Expect{})
	if err != nil {
		return BenchResult{}, err
	}
	if !f.Direct {
		return BenchResult{}, fmt.Errorf("engine/storage: bench: %s refuses O_DIRECT; put the file on a block-device filesystem", path)
	}
	blocks := size / opts.BlockSize
	rng := rand.New(rand.NewPCG(opts.Seed, 0x5eed))
	next := int64(0)
	offset := func() int64 {
		if opts.Pattern == "rand" {
			return rng.Int64N(blocks) * opts.BlockSize
		}
		off := next
		if next++; next == blocks {
			next = 0
		}
		return off * opts.BlockSize
	}
	var issued int64
	req := func() Request {
		issued += opts.BlockSize
		return Request{Ranges: []Range{{File: f, Offset: offset(), Length: opts.BlockSize}}}
	}
	full := func() bool { return stopBytes > 0 && issued >= stopBytes }
	lat := make([]time.Duration, 0, 1<<16)
	var total int64
	var firstErr error
	reqs := make([]Request, 0, opts.QD)
	for i := 0; i < opts.QD && !full(); i++ {
		reqs = append(reqs, req())
	}
	t0 := clock.Now()
	deadline := t0 + opts.Duration
	if err := r.Submit(reqs...); err != nil {
		return BenchResult{}, err
	}
	var cs []Completion
	for {
		cs, err = r.Wait(ctx, cs[:0])
		if errors.Is(err, ErrNothingPending) {
			break
		}
		if err != nil {
			return BenchResult{}, err
		}
		reqs = reqs[:0]
		stop := clock.Now() >= deadline || firstErr != nil
		for i := range cs {
			c := &cs[i]
			if c.Err != nil {
				firstErr = cmpOr(firstErr, c.Err)
				continue
			}
			total += c.Bytes
			lat = append(lat, c.End-c.Submit)
			c.Buffer.Release()
			if !stop && !full() {
				reqs = append(reqs, req())
			}
		}
		clear(cs)
		if len(reqs) > 0 {
			if err := r.Submit(reqs...); err != nil {
				return BenchResult{}, err
			}
		}
	}
	if firstErr != nil {
		return BenchResult{}, firstErr
	}
	secs := (clock.Now() - t0).Seconds()
	slices.Sort(lat)
	return BenchResult{Tool: "gostachio", IO: r.Backend(), Seconds: secs, Bytes: total,
		GBps: float64(total) / secs / 1e9, IOPS: float64(len(lat)) / secs,
		P50us: stats.NearestRank(lat, 0.50).Seconds() * 1e6, P99us: stats.NearestRank(lat, 0.99).Seconds() * 1e6}, nil
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
