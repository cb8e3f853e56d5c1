package cluster

import (
	"os"
	"strings"
	"testing"
	"time"

	"gostachio/sim"
)

// TestDeriveProfile: the derived profile of the shipped calibrated one
// parses, and has the cluster's devices, the link's rate and latency, this
// machine's cores (capped by the profile's) shared by the nodes, and the
// NVMe bandwidth untouched (one disk, shared by the simulator).
func TestDeriveProfile(t *testing.T) {
	src, err := os.ReadFile("../../sim/profiles/devbox-calibrated.yaml")
	if err != nil {
		t.Fatal(err)
	}
	orig, err := sim.ParseProfile("devbox-calibrated.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cores     int
		wantCores float64
	}{{1, 1}, {16, orig.Node.HostCores}} {
		out, err := DeriveProfile(src, 4, 1, tc.cores, Link{Rate: 100e6}, 15*time.Microsecond)
		if err != nil {
			t.Fatal(err)
		}
		p, err := sim.ParseProfile("derived", out)
		if err != nil {
			t.Fatalf("derived profile does not parse: %v\n%s", err, out)
		}
		if p.Node.GPUs != 1 || !p.Node.SharedMachine || p.Node.HostCores != tc.wantCores {
			t.Errorf("cores %d: node %+v, want 1 gpu, shared machine, %g cores", tc.cores, p.Node, tc.wantCores)
		}
		if got := p.NIC.Bandwidth.PerNs(); got != 100e6/8/1e9 {
			t.Errorf("nic bandwidth %g B/ns, want %g", got, 100e6/8/1e9)
		}
		if p.NIC.Latency.Ns() != 15000 {
			t.Errorf("nic latency %d ns, want 15000", p.NIC.Latency.Ns())
		}
		if p.NVMe.Bandwidth != orig.NVMe.Bandwidth {
			t.Errorf("nvme bandwidth %v, want the profile's %v", p.NVMe.Bandwidth, orig.NVMe.Bandwidth)
		}
		// Deriving again (shared_machine already present) changes nothing.
		again, err := DeriveProfile(out, 4, 1, tc.cores, Link{Rate: 100e6}, 15*time.Microsecond)
		if err != nil || string(again) != string(out) {
			t.Errorf("deriving twice differs (%v):\n%s\n---\n%s", err, out, again)
		}
	}
	if _, err := DeriveProfile([]byte("name: x\nnode:\n  gpus: 1\n"), 4, 1, 2, Link{Rate: 1e9}, 0); err == nil || !strings.Contains(err.Error(), "host_cores") {
		t.Errorf("profile without host_cores: err %v, want one naming host_cores", err)
	}
}
