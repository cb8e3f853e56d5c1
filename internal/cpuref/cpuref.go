// Package cpuref is the CPU reference: one fixed piece of CPU work timed
// beside measurements to say how fast this machine's CPU runs now.
package cpuref

import (
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// The CPU reference is one fixed piece of CPU work like the kernels' —
// random gathers from a table past the caches and a hash of every word —
// that calibrate times beside its micro-benchmarks (the profile's
// host.reference) and validate times beside the engine's runs. On the
// guest this was calibrated on, the CPU's speed moves by a third between
// calibrations minutes apart (every kind of kernel sample, and the task
// dispatch, measured 0.63–0.86 of an earlier calibration's times), and a
// query's engine time by up to a fifth between validations an hour apart.
// Timed alone in an idle process, the reference flips between two speeds
// (gathers 4.7 or 7.8 ms, hashing 0.66 or 1.05 ms: the whole CPU 1.6x
// slower) from one tenth of a second to the next, so the mean of many
// timings follows the share of slow time. The ratio of the two means says
// how much slower (> 1) the machine ran beside the engine than beside the
// micro-benchmarks, and `validate --rescale-cpu` scales the simulator's
// CPU prices by it: no query is measured to get it. `cluster bench-sim`
// has the emulated cluster's rank 0 time it between queries, while the
// other workers wait.

const (
	// refTableWords is the gathered table: 16 MiB, past a core's caches,
	// so the gathers miss as a large probe's do.
	refTableWords = 1 << 21
	refGathers    = 1 << 20
	// Reps repetitions make one reference time (their median:
	// they run within a tenth of a second, mostly at one speed).
	Reps = 15
)

var (
	refOnce  sync.Once
	refTable []uint64
	refIdx   []uint32
	refSink  uint64
)

func referenceData() {
	rng := rand.New(rand.NewPCG(7, 0x2ef))
	refTable = make([]uint64, refTableWords)
	for i := range refTable {
		refTable[i] = rng.Uint64()
	}
	refIdx = make([]uint32, refGathers)
	for i := range refIdx {
		refIdx[i] = uint32(rng.IntN(refTableWords))
	}
}

// referenceOnce runs the reference workload once and returns its time. It
// allocates nothing: a reference that allocated moved with the heap's
// state (10–41 ms within one calibration), not with the CPU's speed.
func referenceOnce() time.Duration {
	refOnce.Do(referenceData)
	start := time.Now()
	acc := uint64(0)
	// Dependent-free random gathers (a probe's table lookups) ...
	for _, i := range refIdx {
		acc += refTable[i]
	}
	// ... and a hash of every word (a build's or a shuffle's arithmetic).
	for _, w := range refTable[:refGathers] {
		w ^= w >> 33
		w *= 0xff51afd7ed558ccd
		w ^= w >> 33
		acc ^= w
	}
	refSink += acc
	return time.Since(start)
}

// Ns times the CPU reference: the median of Reps runs,
// in ns.
func Ns() int64 {
	ts := make([]int64, Reps)
	for i := range ts {
		ts[i] = referenceOnce().Nanoseconds()
	}
	slices.Sort(ts)
	return ts[len(ts)/2]
}
