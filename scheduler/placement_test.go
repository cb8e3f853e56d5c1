package scheduler

import (
	"context"
	"fmt"
	"maps"
	"testing"

	"gostachio/plan"
)

// worker is a (node, device) pair.
type worker struct{ node, dev int32 }

// placementPlan scans table t: 8 chunks of 1,000 rows of one 8-byte
// column, chunk c placed on partition place[c] (-1: unplaced).
func placementPlan(t *testing.T, place []int32) *plan.Plan {
	t.Helper()
	tbl := plan.TableStats{Name: "t", Columns: []string{"a"}}
	for i, p := range place {
		ch := plan.ChunkStats{Rows: 1000, Base: int64(i) * 8000, Bytes: []int64{8000}}
		if p >= 0 {
			ch.Placed, ch.Node = true, p
		}
		tbl.Chunks = append(tbl.Chunks, ch)
	}
	b := plan.NewBuilder("place", []plan.TableStats{tbl})
	p0 := b.Scan("t", "a").AggPartial("count(*)", 1, 8).Gather()
	b.From(p0).AggFinal("count", 1, 8).Result()
	p, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// dealt runs p on 2 nodes x 2 devices and returns, per chunk, the worker
// that read it and the scan unit (node, unit sequence number) covering it.
func dealt(t *testing.T, p *plan.Plan, set, order string, seed uint64) (map[int32]worker, map[int32][2]int32) {
	t.Helper()
	pol, err := NewPolicy("overlap", set)
	if err != nil {
		t.Fatal(err)
	}
	topo := Topology{Nodes: 2, Devices: 2, SSDs: 1, NICs: 1, DeviceMem: 1 << 30, PinnedMem: 1 << 30}
	tb := newTestBackend(topo, order, seed)
	who := map[int32]worker{}
	unit := map[int32][2]int32{}
	var bad []string
	tb.onStart = func(x *Task) {
		if x.Kind != TaskRead || x.Meta {
			return
		}
		w := worker{x.Node, x.Device}
		if prev, ok := who[x.Chunk]; ok && prev != w {
			bad = append(bad, fmt.Sprintf("chunk %d read by %v and %v", x.Chunk, prev, w))
		}
		who[x.Chunk], unit[x.Chunk] = w, [2]int32{x.Node, x.Unit}
	}
	if _, err := Run(context.Background(), p, pol, tb, nil); err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
	return who, unit
}

// TestPlacedChunksDealtToTheirNode: chunks on partitions 0..3 over 2 nodes
// x 2 devices go only to node p mod 2, round robin over that node's
// devices, one unit per chunk with chunk=0; with a large unit size, runs
// of one placement form units but chunks of different placements never
// share one.
func TestPlacedChunksDealtToTheirNode(t *testing.T) {
	p := placementPlan(t, []int32{0, 0, 1, 1, 2, 2, 3, 3})
	who, unit := dealt(t, p, "chunk=0", "fifo", 0)
	// Node 0 holds partitions 0 and 2 (chunks 0, 1, 4, 5), node 1
	// partitions 1 and 3 (chunks 2, 3, 6, 7); each node deals its units
	// to devices 0, 1, 0, 1 in chunk order.
	want := map[int32]worker{0: {0, 0}, 1: {0, 1}, 4: {0, 0}, 5: {0, 1}, 2: {1, 0}, 3: {1, 1}, 6: {1, 0}, 7: {1, 1}}
	if !maps.Equal(who, want) {
		t.Errorf("chunk=0: dealt %v, want %v", who, want)
	}
	if units := len(distinct(unit)); units != 8 {
		t.Errorf("chunk=0: %d units, want one per chunk", units)
	}
	// Partitions 0 and 2 (both node 0) adjacent: with units large enough
	// for everything, each run of one placement is one unit.
	p = placementPlan(t, []int32{0, 0, 2, 2, 1, 1, 3, 3})
	who, unit = dealt(t, p, "chunk=1GiB,units=0", "fifo", 0)
	want = map[int32]worker{0: {0, 0}, 1: {0, 0}, 2: {0, 1}, 3: {0, 1}, 4: {1, 0}, 5: {1, 0}, 6: {1, 1}, 7: {1, 1}}
	if !maps.Equal(who, want) {
		t.Errorf("chunk=1GiB: dealt %v, want %v", who, want)
	}
	for c := int32(0); c < 8; c += 2 {
		if unit[c] != unit[c+1] {
			t.Errorf("chunk=1GiB: chunks %d and %d (one partition) in different units", c, c+1)
		}
	}
	if units := len(distinct(unit)); units != 4 {
		t.Errorf("chunk=1GiB: %d units, want one per partition", units)
	}
	// Partitions beyond the node count wrap: 5 -> node 1, 4 -> node 0.
	who, _ = dealt(t, placementPlan(t, []int32{5, 4, 5, 4, 5, 4, 5, 4}), "chunk=0", "fifo", 0)
	for c, w := range who {
		if w.node != int32(place0(c)) {
			t.Errorf("chunk %d of partition %d read on node %d", c, 5-c%2, w.node)
		}
	}
}

func distinct(m map[int32][2]int32) map[[2]int32]bool {
	out := map[[2]int32]bool{}
	for _, v := range m {
		out[v] = true
	}
	return out
}

// place0 is the node of chunk c of the wrap-around case (partition 5 - c%2
// over 2 nodes).
func place0(c int32) int32 { return (5 - c%2) % 2 }

// TestUnplacedDealingUnchanged: unplaced chunks keep the global round
// robin (unit i to worker i mod 4: node (i mod 4) / 2, device i mod 2), and
// a mix deals unplaced units among themselves as if the placed ones were
// not there.
func TestUnplacedDealingUnchanged(t *testing.T) {
	p := placementPlan(t, []int32{-1, -1, -1, -1, -1, -1, -1, -1})
	who, _ := dealt(t, p, "chunk=0", "fifo", 0)
	for c := range int32(8) {
		if want := (worker{c % 4 / 2, c % 2}); who[c] != want {
			t.Errorf("unplaced chunk %d read by %v, want %v", c, who[c], want)
		}
	}
	mixed := placementPlan(t, []int32{-1, 1, -1, 1, -1, 0, -1, 0})
	who, _ = dealt(t, mixed, "chunk=0", "fifo", 0)
	want := map[int32]worker{
		0: {0, 0}, 2: {0, 1}, 4: {1, 0}, 6: {1, 1}, // unplaced units 0..3
		1: {1, 0}, 3: {1, 1}, 5: {0, 0}, 7: {0, 1}, // placed, per node
	}
	if !maps.Equal(who, want) {
		t.Errorf("mixed: dealt %v, want %v", who, want)
	}
}

// TestPlacementDealingDeterministic: the dealing depends on the plan only,
// not on the order tasks complete in.
func TestPlacementDealingDeterministic(t *testing.T) {
	p := placementPlan(t, []int32{0, 3, 1, -1, 2, 2, -1, 1})
	ref, _ := dealt(t, p, "chunk=0", "fifo", 0)
	for seed := range uint64(5) {
		got, _ := dealt(t, p, "chunk=0", "random", seed)
		if !maps.Equal(got, ref) {
			t.Errorf("seed %d: dealt %v, fifo %v", seed, got, ref)
		}
	}
	for c, w := range ref {
		if pl := p.Tables[0].Chunks[c].Placement(); pl >= 0 && w.node != pl%2 {
			t.Errorf("chunk %d of partition %d read on node %d", c, pl, w.node)
		}
	}
}
