package sim

import (
	"context"
	"testing"
)

// TestBurstMakespan works the burst's times out by hand on the tiny
// profile (NIC 1 B/ns, latency 5 µs, 4 host cores).
func TestBurstMakespan(t *testing.T) {
	for _, tc := range []struct {
		name          string
		nodes, frames int
		ordered       bool
		netCPU        float64
		starts        [][]int64
		want          int64
	}{
		// 4 frames of 1 MB at once share the pair's path: 4e6 B at 1 B/ns.
		{"shared", 2, 4, false, 0, nil, 5_000 + 4_000_000},
		// In turn, each frame pays the latency again.
		{"ordered", 2, 4, true, 0, nil, 4 * (5_000 + 1_000_000)},
		// 3 nodes: each egress carries two pairs' frames at 0.5 B/ns.
		{"ordered 3 nodes", 3, 2, true, 0, nil, 2 * (5_000 + 2_000_000)},
		// Staggered: node 1's frames to node 0 start 3 ms late. Node 0's
		// end at 4.02 ms alone (as above); node 1's follow 3 ms on.
		{"ordered, staggered", 2, 4, true, 0, [][]int64{{0, 0}, {3_000_000, 0}}, 3_000_000 + 4*(5_000+1_000_000)},
		// Not ordered, every frame of the pair waits: 0.5 ms, then
		// the four share the path.
		{"shared, staggered", 2, 4, false, 0, [][]int64{{0, 500_000}, {0, 0}}, 500_000 + 5_000 + 4_000_000},
		// 8 ns of a core per byte at each end: a host sends one direction
		// and receives the other, 16 ns per byte of a pair's rate on its 4
		// cores, so each direction moves 0.25 B/ns.
		{"network CPU", 2, 4, false, 8, nil, 5_000 + 16_000_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := LoadProfile("testdata/profiles/tiny.yaml")
			if err != nil {
				t.Fatal(err)
			}
			p.Node.OrderedSends, p.Node.NetCPUCost = tc.ordered, tc.netCPU
			got, err := BurstMakespan(context.Background(), p, tc.nodes, tc.frames, 1_000_000, tc.starts)
			if err != nil {
				t.Fatal(err)
			}
			if d := got - tc.want; d < -2 || d > 2 {
				t.Errorf("makespan %d ns, want %d", got, tc.want)
			}
		})
	}
	p, err := LoadProfile("testdata/profiles/tiny.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, starts := range [][][]int64{{{0, 0}}, {{0, 0}, {0}}, {{0, -1}, {0, 0}}} {
		if _, err := BurstMakespan(context.Background(), p, 2, 1, 1, starts); err == nil {
			t.Errorf("starts %v taken", starts)
		}
	}
	for _, bad := range [][3]int{{1, 1, 1}, {2, 0, 1}, {2, 1, 0}} {
		if _, err := BurstMakespan(context.Background(), p, bad[0], bad[1], int64(bad[2]), nil); err == nil {
			t.Errorf("BurstMakespan(%v) took it", bad)
		}
	}
}
