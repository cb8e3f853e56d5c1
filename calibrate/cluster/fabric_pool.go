package cluster

import (
	"fmt"
	"slices"

	ecluster "gostachio/engine/cluster"
	"gostachio/internal/stats"
)

// Pooled fabric bursts (bench-sim --fabric-from). One launch's seven
// rounds of the all-to-all burst put its median anywhere from 0.79 to 0.99 s
// over eleven launches at 100 Mbit/s under the default queue (a coefficient
// of variation of 6.8%), and its fitted share of the payload rate from 0.67
// to 0.85, while the engine's times did not follow it (the correlation of a
// launch's burst median with its q3, q5, q9 and q18 medians: +0.08 to
// +0.40; under 2.5 MB −0.53 to +0.09; at 1 Gbit/s +0.07 to +0.29). q3's long
// shuffle, priced at the share, came out over-predicted by 10–17% in the
// launches with the lowest shares. As with the co-location, the rounds of
// earlier launches on the same link are pooled with the launch's own
// (the 2-core development VM, 2026-11).

// PooledFabric is the burst rounds of earlier launches.
type PooledFabric struct {
	// Seconds are the rounds of every matching launch read, each
	// launch's once (a launch saved in several files too).
	Seconds []float64
	// Launches is how many launches they came from; Skipped how many of
	// the files read had no burst of this launch's link and shape.
	Launches, Skipped int
}

// LoadFabricRounds reads the all-to-all burst rounds of the launches in
// paths (`gostachio --json cluster bench-sim` output, SimBenchRow arrays)
// that measured the same burst as this one: on link (as written, queue
// included), nodes workers, frames frames of frameBytes with streams in
// flight per peer, all pairs starting together. Launches of another link
// or shape are skipped (PooledFabric.Skipped); a file that is not bench-sim
// rows, or a round that is not a positive time, is an error naming the
// file, as is a list that matches nothing.
func LoadFabricRounds(paths []string, link ecluster.Link, nodes, frames int, frameBytes int64, streams int) (PooledFabric, error) {
	var pool PooledFabric
	var seen [][]float64 // every launch's rounds once, however many files repeat them
	for _, p := range paths {
		rows, err := readSimBenchRows(p)
		if err != nil {
			return PooledFabric{}, fmt.Errorf("cluster: --fabric-from: %w", err)
		}
		matched := false
		for i, r := range rows {
			f := r.Fabric
			if f == nil || f.Link != link.String() {
				continue
			}
			b := f.Burst
			if b.Nodes != nodes || b.Frames != frames || b.FrameBytes != frameBytes || b.Streams != streams || b.Starts != nil {
				continue
			}
			if len(b.Seconds) == 0 {
				continue
			}
			matched = true
			if slices.ContainsFunc(seen, func(s []float64) bool { return slices.Equal(s, b.Seconds) }) {
				continue
			}
			if x, bad := nonPositive(b.Seconds); bad {
				return PooledFabric{}, fmt.Errorf("cluster: --fabric-from: %s row %d: burst round %v is not a positive time", p, i+1, x)
			}
			seen = append(seen, b.Seconds)
			pool.Seconds = append(pool.Seconds, b.Seconds...)
			pool.Launches++
		}
		if !matched {
			pool.Skipped++
		}
	}
	if pool.Launches == 0 && len(paths) > 0 {
		return PooledFabric{}, fmt.Errorf("cluster: --fabric-from: none of the %d files has a burst of %d x %d KiB per pair on %d workers over --link %s", len(paths), frames, frameBytes>>10, nodes, link)
	}
	return pool, nil
}

// With returns b with the pool's rounds added and its median theirs: the
// burst the fabric's share is fitted to.
func (p PooledFabric) With(b BurstResult) BurstResult {
	if len(p.Seconds) == 0 {
		return b
	}
	b.Seconds = append(slices.Clone(b.Seconds), p.Seconds...)
	b.Median = stats.Median(b.Seconds)
	b.Rate = float64(b.PortBytes) / b.Median
	return b
}
