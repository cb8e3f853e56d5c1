package cluster

import (
	"fmt"
	"slices"

	"gostachio/internal/stats"
)

// Pooled co-location (bench-sim --colocation-from). One launch's 18 rounds
// of the hash loop put its median anywhere from 0.640 to 0.802 over the 26
// launches of 2026-11-26 on the Xeon guest (a bootstrap standard error of
// 0.015–0.060 each), while the engine's times did not follow it (the
// correlation of a launch's co-location with its four queries' summed
// engine medians, 18 launches at 1 and 10 Gbit/s: −0.06). The spread is
// the measurement's, not the machine's, so the rounds of earlier launches
// are pooled with the launch's own: two launches at 0.640 and 0.641 put 6
// of 8 cases within 10%, and 7 of 8 at the pooled 0.732 (the 2-core development VM, 2026-11).

// PooledColocation is the co-location of earlier launches' rounds.
type PooledColocation struct {
	// Ratios are the rounds (together / alone) of every launch read, each
	// launch's once.
	Ratios []float64
	// Launches is how many launches they came from.
	Launches int
}

// LoadColocationRounds reads the co-location rounds of the launches in
// paths (`gostachio --json cluster bench-sim` output, SimBenchRow arrays):
// every launch's ColocationRatios once (its rows repeat them). The rows
// must come from a cluster of nodes workers of devices devices each (where
// they say; rows written before the fields do not), and from the hash
// loop: rows whose co-location came from the queries' operators
// (ColocationLoop set) are an error, as is a file without rounds (its
// co-location was given with --colocation), naming the file.
func LoadColocationRounds(paths []string, nodes, devices int) (PooledColocation, error) {
	var pool PooledColocation
	for _, p := range paths {
		rows, err := readSimBenchRows(p)
		if err != nil {
			return PooledColocation{}, fmt.Errorf("cluster: --colocation-from: %w", err)
		}
		var seen [][]float64
		for i, r := range rows {
			if r.Nodes != 0 && (r.Nodes != nodes || r.Devices != devices) {
				return PooledColocation{}, fmt.Errorf("cluster: --colocation-from: %s row %d ran %d workers x %d devices, this launch %d x %d", p, i+1, r.Nodes, r.Devices, nodes, devices)
			}
			if r.ColocationLoop != 0 {
				return PooledColocation{}, fmt.Errorf("cluster: --colocation-from: %s row %d measured the co-location on the queries' operators (an earlier version's --colocation-queries); pool the loop's only", p, i+1)
			}
			if len(r.ColocationRatios) == 0 || slices.ContainsFunc(seen, func(s []float64) bool { return slices.Equal(s, r.ColocationRatios) }) {
				continue
			}
			if x, bad := nonPositive(r.ColocationRatios); bad {
				return PooledColocation{}, fmt.Errorf("cluster: --colocation-from: %s row %d: co-location round %v is not a positive ratio", p, i+1, x)
			}
			seen = append(seen, r.ColocationRatios)
			pool.Ratios = append(pool.Ratios, r.ColocationRatios...)
		}
		if len(seen) == 0 {
			return PooledColocation{}, fmt.Errorf("cluster: --colocation-from: %s has no co-location rounds (its co-location was given, not measured)", p)
		}
		pool.Launches += len(seen)
	}
	return pool, nil
}

// With returns the pool with one more launch's rounds.
func (p PooledColocation) With(ratios []float64) PooledColocation {
	if len(ratios) == 0 {
		return p
	}
	return PooledColocation{Ratios: append(slices.Clone(p.Ratios), ratios...), Launches: p.Launches + 1}
}

// Efficiency is the median of the pooled rounds, at most 1 (0 without
// rounds).
func (p PooledColocation) Efficiency() float64 {
	if len(p.Ratios) == 0 {
		return 0
	}
	return min(stats.Median(p.Ratios), 1)
}

// nonPositive returns the first of xs that is not a positive number
// (NaN included), and whether there is one: a measured round that cannot
// be pooled.
func nonPositive(xs []float64) (float64, bool) {
	for _, x := range xs {
		if !(x > 0) {
			return x, true
		}
	}
	return 0, false
}
