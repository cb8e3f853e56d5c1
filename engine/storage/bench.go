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

// BenchReport is what BenchIO prints (as JSON with BenchOptions.JSON).
type BenchReport struct {
	File      string       `json:"file"`
	FileSize  int64        `json:"file_size"`
	Pattern   string       `json:"pattern"`
	BlockSize int64        `json:"block_size"`
	QD        int          `json:"qd"`
	Ours      BenchResult  `json:"gostachio"`
	Fio       *BenchResult `json:"fio,omitempty"`
	RatioGBps float64      `json:"ratio_gbps,omitempty"` // ours / fio
	RatioIOPS float64      `json:"ratio_iops,omitempty"`
}

// BenchIO implements `gostachio bench io`: O_DIRECT reads of one file at a fixed depth and block
// size for a fixed time, reporting throughput, IOPS and latency percentiles; with VsFio, fio on
// the same file with the same block size, depth, pattern, O_DIRECT and duration (io_uring engine),
// and the ratio. Progress lines go to stderr, the report to stdout.
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
	rep := BenchReport{File: path, FileSize: size, Pattern: opts.Pattern, BlockSize: opts.BlockSize, QD: opts.QD}
	fmt.Fprintf(stderr, "bench io: %s, %d bytes, %s %d-byte reads at QD %d for %v (%s)\n", path, size, opts.Pattern, opts.BlockSize, opts.QD, opts.Duration, opts.IO)
	if rep.Ours, err = benchOurs(ctx, opts, path, size, stderr); err != nil {
		return err
	}
	if opts.VsFio {
		fmt.Fprintf(stderr, "bench io: running fio\n")
		f, err := runFio(ctx, opts, path, size)
		if err != nil {
			return err
		}
		rep.Fio = &f
		if f.GBps > 0 {
			rep.RatioGBps = rep.Ours.GBps / f.GBps
		}
		if f.IOPS > 0 {
			rep.RatioIOPS = rep.Ours.IOPS / f.IOPS
		}
	}
	if opts.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	fmt.Fprintf(stdout, "file %s (%d bytes used), %s, bs %d, qd %d\n", rep.File, rep.FileSize, rep.Pattern, rep.BlockSize, rep.QD)
	line := func(r BenchResult) {
		fmt.Fprintf(stdout, "  %-9s %-5s %7.3f GB/s %10.0f IOPS  p50 %8.1f µs  p99 %8.1f µs\n", r.Tool, r.IO, r.GBps, r.IOPS, r.P50us, r.P99us)
	}
	line(rep.Ours)
	if rep.Fio != nil {
		line(*rep.Fio)
		fmt.Fprintf(stdout, "  ratio gostachio/fio: %.3f (GB/s), %.3f (IOPS)\n", rep.RatioGBps, rep.RatioIOPS)
	}
	return nil
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

// benchOurs keeps QD one-block requests in flight for opts.Duration, then drains.
func benchOurs(ctx context.Context, opts BenchOptions, path string, size int64, stderr io.Writer) (BenchResult, error) {
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
	req := func() Request {
		return Request{Ranges: []Range{{File: f, Offset: offset(), Length: opts.BlockSize}}}
	}
	lat := make([]time.Duration, 0, 1<<16)
	var total int64
	var firstErr error
	reqs := make([]Request, 0, opts.QD)
	for i := 0; i < opts.QD; i++ {
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
			if !stop {
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
		P50us: percentile(lat, 0.50).Seconds() * 1e6, P99us: percentile(lat, 0.99).Seconds() * 1e6}, nil
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// percentile of sorted durations by the nearest-rank method (⌈p·n⌉-th smallest).
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	k := int(p*float64(len(sorted))+0.999999999) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}
