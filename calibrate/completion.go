package calibrate

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gostachio/costmodel"
	"gostachio/dataset"
	"gostachio/engine"
	"gostachio/engine/storage"
	"gostachio/internal/stats"
)

// When the device reports reads done (costmodel.Storage.Completion). The
// virtio disk of the Firecracker guest this was built on does not let a
// small read overtake the large ones submitted before it: a 12 KiB read
// submitted after six of 1 MiB took 0.35–1.02 of their time (medians of
// three probes 0.74, 0.88 and 1.00), where processor sharing ends it
// after about 0.02 of it. Submitted first it was not held
// to the end either (median 0.17; second 0.40, fourth 0.72): the device
// serves roughly in order and reports completions in clumps, which the
// batch discipline approximates as a whole. microCompletion submits six
// large reads and then a small one at once, round after round, and
// records how long each took; fitCompletion calls the device batched when
// the small read's time is most of the large ones'.

const (
	// completionRounds of one small and completionLarge large reads.
	completionRounds = 15
	completionLarge  = 6
	completionSmall  = 12 << 10
	completionBig    = 1 << 20
	// batchedShare: the small read taking at least this share of the
	// large ones' time (median over rounds) means it waited for most of
	// them. Processor sharing gives it about 0.02 (its bytes at a seventh
	// of the bandwidth, then its latency); this disk gave medians of
	// 0.74–1.00 in three probes of 9 rounds, single rounds 0.35–1.02.
	batchedShare = 0.5
)

// microCompletion times completionRounds rounds on DIR's lineitem file
// with the engine's reader (O_DIRECT), the large reads submitted first and
// the small one last in one Submit: a CompCompletion sample per round,
// Bytes the small read's size and Ns its time from submission, Rows the
// large reads' size and Tasks the last of them's time (ns), Depth their
// count.
func microCompletion(ctx context.Context, ds *dataset.Dataset, opts MicroOptions) ([]Sample, error) {
	path, size, err := readFile(ds)
	if err != nil {
		return nil, err
	}
	if size < 2*completionBig {
		return nil, fmt.Errorf("calibrate: %s (%d bytes) is too small for the completion probe", path, size)
	}
	r, err := engine.NewReader("auto", false, nil, opts.Log)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	rng := rand.New(rand.NewPCG(opts.Seed, 0xc0de))
	at := func(n int64) int64 { return rng.Int64N((size-n)/4096) * 4096 }
	var out []Sample
	var cs []storage.Completion
	for round := range completionRounds {
		var reqs []storage.Request
		for i := range completionLarge {
			reqs = append(reqs, storage.Request{Tag: uint64(i + 1), Ranges: []storage.Range{{Path: path, Offset: at(completionBig), Length: completionBig}}})
		}
		reqs = append(reqs, storage.Request{Tag: 0, Ranges: []storage.Range{{Path: path, Offset: at(completionSmall), Length: completionSmall}}})
		if err := r.Submit(reqs...); err != nil {
			return nil, fmt.Errorf("calibrate: completion probe: %w", err)
		}
		var small, large int64 = -1, 0
		for got := 0; got < len(reqs); {
			cs, err = r.Wait(ctx, cs[:0])
			if err != nil {
				return nil, fmt.Errorf("calibrate: completion probe round %d: %w", round+1, err)
			}
			for _, c := range cs {
				got++
				if c.Err != nil {
					return nil, fmt.Errorf("calibrate: completion probe round %d: %w", round+1, c.Err)
				}
				c.Buffer.Release()
				if took := int64(c.End - c.Submit); c.Tag == 0 {
					small = took
				} else {
					large = max(large, took)
				}
			}
		}
		out = append(out, Sample{Component: CompCompletion, Case: fmt.Sprintf("%d KiB read with %d of %d KiB", completionSmall>>10, completionLarge, completionBig>>10),
			Bytes: completionSmall, Ns: small, Rows: completionBig, Tasks: int(large), Depth: completionLarge})
	}
	return out, nil
}

// fitCompletion reads the CompCompletion samples: the device's
// discipline (costmodel.CompletionBatch when the small read's time over
// the large ones' is at least batchedShare, median over rounds, else
// costmodel.CompletionEach) and that median. ok is false without samples.
func fitCompletion(samples []Sample) (discipline string, share float64, ok bool, q Component) {
	var shares []float64
	for _, s := range samples {
		if s.Component == CompCompletion && s.Ns > 0 && s.Tasks > 0 {
			shares = append(shares, float64(s.Ns)/float64(s.Tasks))
		}
	}
	if len(shares) == 0 {
		return "", 0, false, Component{}
	}
	share = stats.Median(shares)
	discipline = costmodel.CompletionEach
	if share >= batchedShare {
		discipline = costmodel.CompletionBatch
	}
	q = Component{"completion", fmt.Sprintf("%s: a %d KiB read submitted after %d of %d KiB took %.2f of their time (median of %d rounds, %.2f–%.2f)",
		discipline, completionSmall>>10, completionLarge, completionBig>>10, share, len(shares), slices.Min(shares), slices.Max(shares)),
		costmodel.FitQuality{N: len(shares), R2: math.NaN()}}
	return discipline, share, true, q
}
