package cluster

import (
	"os"
	"strings"
	"testing"
	"time"

	ecluster "gostachio/engine/cluster"
	"gostachio/sim"
)

// TestDeriveProfilePorts: a derived profile carries the link's line rate,
// and the lossy port where the link's queue can stall a transfer of an
// all-to-all exchange: 100 Mbit/s under the default queue on 4 workers,
// not under 2.5 MB, not at 1 Gbit/s (a 2.5 MB queue), not on 2 workers.
func TestDeriveProfilePorts(t *testing.T) {
	src, err := os.ReadFile("../../sim/profiles/devbox-calibrated.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		link      string
		nodes     int
		lossy     bool
		buffer    int64
		stall     time.Duration
		lineBytes float64
	}{
		// limit 250000 + 131072 (tc: rate x 20 ms + bucket), + 65536;
		// stall 200 ms + 381072 B at 12.5 MB/s (30.5 ms).
		{"100Mbit", 4, true, 446608, 230 * time.Millisecond, 100e6 / 8 * 1448 / 1514},
		{"100Mbit,queue=2.5MB", 4, false, 0, 0, 100e6 / 8 * 1448 / 1514},
		{"1Gbit", 4, false, 0, 0, 1e9 / 8 * 1448 / 1514},
		{"100Mbit", 2, false, 0, 0, 100e6 / 8 * 1448 / 1514},
		// 8 workers: the last of 7 transfers finds 6 windows (1.5 MiB)
		// pushed, short of 1 Gbit/s's 2.7 MB buffer.
		{"1Gbit", 8, false, 0, 0, 1e9 / 8 * 1448 / 1514},
		// 16 workers: 14 windows, 3.5 MiB, fill it.
		{"1Gbit", 16, true, 2500000 + 131072 + 65536, 200*time.Millisecond + 21*time.Millisecond, 1e9 / 8 * 1448 / 1514},
	} {
		link, err := ecluster.ParseLink(tc.link)
		if err != nil {
			t.Fatal(err)
		}
		out, err := DeriveProfile(src, Derivation{Nodes: tc.nodes, Devices: 1, Cores: 2, Link: link, Colocation: 1})
		if err != nil {
			t.Fatal(err)
		}
		p, err := sim.ParseProfile("derived", out)
		if err != nil {
			t.Fatalf("%s: %v\n%s", tc.link, err, out)
		}
		if got := float64(p.NICLineRate); got < tc.lineBytes-1 || got > tc.lineBytes+1 {
			t.Errorf("%s: nic_line_rate %g, want %g", tc.link, got, tc.lineBytes)
		}
		if (p.NICPort != nil) != tc.lossy {
			t.Fatalf("%s on %d workers: nic_port %+v, want lossy %v", tc.link, tc.nodes, p.NICPort, tc.lossy)
		}
		if tc.lossy && (int64(p.NICPort.Buffer) != tc.buffer || p.NICPort.Window != portWindow || time.Duration(p.NICPort.Stall).Round(time.Millisecond) != tc.stall) {
			t.Errorf("%s on %d workers: nic_port %+v, want buffer %d, window %d, stall %v", tc.link, tc.nodes, *p.NICPort, tc.buffer, portWindow, tc.stall)
		}
		// Deriving again replaces the lines.
		again, err := DeriveProfile(out, Derivation{Nodes: tc.nodes, Devices: 1, Cores: 2, Link: link, Colocation: 1})
		if err != nil || string(again) != string(out) || strings.Count(string(again), "nic_line_rate:") != 1 {
			t.Errorf("%s: deriving twice differs (%v):\n%s\n---\n%s", tc.link, err, out, again)
		}
	}
}
