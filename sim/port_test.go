package sim

import (
	"context"
	"strings"
	"testing"
	"time"

	"gostachio/costmodel"
	"gostachio/scheduler"
)

// lossyTiny is the tiny profile (NIC 1 B/ns, latency 5 µs) with ordered
// sends and a lossy port: a 3 MB buffer, 2 MB windows, 1 ms stalls.
func lossyTiny(t *testing.T, buffer int64) *Profile {
	t.Helper()
	p, err := LoadProfile("testdata/profiles/tiny.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p.Node.OrderedSends = true
	p.NICPort = &PortSpec{Buffer: costmodel.Bytes(buffer), Window: 2e6, Stall: costmodel.Duration(time.Millisecond)}
	return p
}

func sendTask(id, src, peer int32, bytes int64) *scheduler.Task {
	return &scheduler.Task{ID: scheduler.TaskID(id), Kind: scheduler.TaskSend, Node: src, Res: scheduler.Resource{Kind: scheduler.ResNICOut, Node: src},
		Peer: scheduler.Resource{Kind: scheduler.ResNICIn, Node: peer}, Bytes: bytes, Tag: uint64(id)}
}

// runSends starts the sends in order at time 0 and returns their ends.
func runSends(t *testing.T, p *Profile, nodes int, sends ...*scheduler.Task) map[*scheduler.Task]int64 {
	t.Helper()
	c, err := NewCluster(p, nodes)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sends {
		if err := c.Start(s); err != nil {
			t.Fatal(err)
		}
	}
	ends := map[*scheduler.Task]int64{}
	for _, comp := range drain(t, c) {
		ends[comp.Task] = int64(comp.End)
	}
	return ends
}

// TestPortStallsTheTransferThatFindsItFull: node 0 broadcasts 3 MB to
// each of three nodes. The first transfer finds the port empty, the
// second finds 2 MB pushed (one window), the third 4 MB: past a 3 MB
// buffer it waits 1 ms. The first two share the port at 0.5 B/ns until
// the third joins at 1.005 ms; under a 5 MB buffer none waits.
func TestPortStallsTheTransferThatFindsItFull(t *testing.T) {
	for _, tc := range []struct {
		buffer int64
		want   [3]int64
	}{
		// Alone 5 µs latency, then at 0.5 B/ns until 1.005 ms (0.5 MB
		// moved each), then three at 1/3 B/ns: A and B have 2.5 MB left
		// and the stalled C 3 MB, so A and B end at 1.005 ms + 7.5 ms and
		// C moves its last 0.5 MB alone.
		{3e6, [3]int64{1_005_000 + 7_500_000, 1_005_000 + 7_500_000, 1_005_000 + 7_500_000 + 500_000}},
		// All three at 1/3 B/ns from 5 µs: 9 ms.
		{5e6, [3]int64{5_000 + 9_000_000, 5_000 + 9_000_000, 5_000 + 9_000_000}},
	} {
		a, b, c := sendTask(1, 0, 1, 3e6), sendTask(2, 0, 2, 3e6), sendTask(3, 0, 3, 3e6)
		ends := runSends(t, lossyTiny(t, tc.buffer), 4, a, b, c)
		for i, x := range []*scheduler.Task{a, b, c} {
			if d := ends[x] - tc.want[i]; d < -2 || d > 2 {
				t.Errorf("buffer %d: send %d ended at %d ns, want %d", tc.buffer, i, ends[x], tc.want[i])
			}
		}
	}
}

// TestPortNextFrameDoesNotStall: a frame that follows its pair's previous
// one at once (ordered sends) has that frame's bytes in flight and does
// not stall, however full the port; a frame on an idle connection does.
func TestPortNextFrameDoesNotStall(t *testing.T) {
	p := lossyTiny(t, 1e6) // one window fills it
	// A then A2 to node 1 (ordered), B to node 2 finds A pushed: stalls.
	a, a2, b := sendTask(1, 0, 1, 1e6), sendTask(2, 0, 1, 1e6), sendTask(3, 0, 2, 1e6)
	ends := runSends(t, p, 3, a, a2, b)
	// A alone at 1 B/ns (B waits 1 ms): 1.005 ms; A2 follows with its
	// latency, alone until B joins at 1.005 ms, then both at 0.5 B/ns.
	if d := ends[a] - 1_005_000; d < -2 || d > 2 {
		t.Errorf("A ended at %d, want 1005000", ends[a])
	}
	if ends[b] < 1_005_000+1_000_000 {
		t.Errorf("B ended at %d: it did not wait for the stall", ends[b])
	}
	// A2 started at 1.005 ms on a full port (B's 1 MB not yet pushed:
	// it is stalled), without a stall of its own.
	if ends[a2] > 1_005_000+5_000+2_000_000+2 {
		t.Errorf("A2 ended at %d: it stalled", ends[a2])
	}
}

// TestPortLinkAlone: an ingress port with nic_line_rate 2 B/ns moves one
// transfer at 2 B/ns and two at nic.bandwidth 1 B/ns; egress ports always
// at the line rate.
func TestPortLinkAlone(t *testing.T) {
	p, err := LoadProfile("testdata/profiles/tiny.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p.NICLineRate = 2e9
	// One transfer 0 -> 1 of 4 MB: 2 ms at the line rate.
	a := sendTask(1, 0, 1, 4e6)
	if end := runSends(t, p, 3, a)[a]; end != 5_000+2_000_000 {
		t.Errorf("alone: ended at %d, want %d", end, 5_000+2_000_000)
	}
	// Two senders into node 2: its port at 1 B/ns, shared: 8 ms.
	b, c := sendTask(2, 0, 2, 4e6), sendTask(3, 1, 2, 4e6)
	ends := runSends(t, p, 3, b, c)
	if ends[b] != 5_000+8_000_000 || ends[c] != 5_000+8_000_000 {
		t.Errorf("converging: ended at %d and %d, want %d", ends[b], ends[c], 5_000+8_000_000)
	}
	// One sender to two nodes: its egress at 2 B/ns, each ingress alone.
	d, e := sendTask(4, 0, 1, 4e6), sendTask(5, 0, 2, 4e6)
	ends = runSends(t, p, 3, d, e)
	if ends[d] != 5_000+4_000_000 || ends[e] != 5_000+4_000_000 {
		t.Errorf("diverging: ended at %d and %d, want %d", ends[d], ends[e], 5_000+4_000_000)
	}
}

// TestBurstLossCliff: the all-to-all bursts of the 4-worker cluster at
// 100 Mbit/s under the default queue, priced with the port bench-sim
// derives for it (buffer 446608 B, window 256 KiB, stall 230 ms). On the
// cluster, 208 KiB per pair took 0.058 s and 224 KiB 0.29 s (4 workers on the
// 2-core development VM, 2026-11-27): the third transfer of every worker found its port full.
func TestBurstLossCliff(t *testing.T) {
	p, err := LoadProfile("testdata/profiles/tiny.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p.Node.OrderedSends = true
	p.NIC.Bandwidth = 11.955e6 * 0.85
	p.NICLineRate = 11.955e6
	p.NICPort = &PortSpec{Buffer: 446608, Window: 256 << 10, Stall: costmodel.Duration(230 * time.Millisecond)}
	at := func(pair int64) float64 {
		ns, err := BurstMakespan(context.Background(), p, 4, 1, pair, nil)
		if err != nil {
			t.Fatal(err)
		}
		return float64(ns) / 1e9
	}
	if s := at(208 << 10); s > 0.1 {
		t.Errorf("208 KiB per pair: %.3f s, want no stall (measured 0.058 s)", s)
	}
	if s := at(224 << 10); s < 0.23 || s > 0.35 {
		t.Errorf("224 KiB per pair: %.3f s, want a stall (measured 0.29 s)", s)
	}
}

func TestProfilePortInvalid(t *testing.T) {
	for _, tc := range []struct {
		edit func(p *Profile)
		want string
	}{
		{func(p *Profile) { p.NICPort = &PortSpec{Buffer: 0, Window: 1, Stall: 1} }, "nic_port: buffer 0 and window 1 must be positive"},
		{func(p *Profile) { p.NICPort = &PortSpec{Buffer: 1, Window: 1} }, "nic_port: stall must be positive"},
		{func(p *Profile) { p.NICLineRate = 0.5e9 }, "nic_line_rate 5e+08 below nic.bandwidth 1e+09"},
	} {
		p, err := LoadProfile("testdata/profiles/tiny.yaml")
		if err != nil {
			t.Fatal(err)
		}
		tc.edit(p)
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err %v, want %q", err, tc.want)
		}
	}
	if _, err := ParseProfile("x.yaml", []byte("name: x\nnic_port: {buffer: 1MiB, window: 1, stall: soon}\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a bad stall: err %v, want its line", err)
	}
}
