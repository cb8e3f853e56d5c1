package scheduler

import (
	"context"
	"testing"

	"gostachio/tpch/queries"
)

// TestUnitsBalanceSmallScans: with a large chunk target, a small scan makes
// one unit per worker at most; the units knob shrinks units so every worker
// gets at least that many (as far as stored chunks allow).
func TestUnitsBalanceSmallScans(t *testing.T) {
	tables, err := queries.Stats(0.01, 2000) // lineitem: 31 chunks
	if err != nil {
		t.Fatal(err)
	}
	p, err := queries.Build("q6", 0.01, tables)
	if err != nil {
		t.Fatal(err)
	}
	topo := Topology{Nodes: 1, Devices: 2, SSDs: 1, NICs: 1, DeviceMem: 1 << 30, PinnedMem: 1 << 30}
	units := func(set string) map[int32]int {
		pol, err := NewPolicy("overlap", set)
		if err != nil {
			t.Fatal(err)
		}
		b := newTestBackend(topo, "fifo", 0)
		if _, err := Run(context.Background(), p, pol, b, nil); err != nil {
			t.Fatal(err)
		}
		seen := map[[2]int32]bool{}
		per := map[int32]int{}
		for _, tk := range b.started {
			if tk.Kind == TaskKernel && tk.Pipeline == 0 && tk.Unit >= 0 && !seen[[2]int32{tk.Device, tk.Unit}] {
				seen[[2]int32{tk.Device, tk.Unit}] = true
				per[tk.Device]++
			}
		}
		return per
	}
	if got := units("chunk=1GiB,units=0"); got[0]+got[1] != 1 {
		t.Fatalf("units=0: %v units per device, want one unit in all", got)
	}
	for _, n := range []int{1, 4, 8} {
		got := units("chunk=1GiB,units=" + string(rune('0'+n)))
		if got[0] < n || got[1] < n {
			t.Errorf("units=%d: %v units per device, want at least %d each", n, got, n)
		}
	}
}
