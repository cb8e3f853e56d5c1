package sim

import (
	"math/rand/v2"
	"sort"
	"testing"
)

// TestEventQueueOrder pushes events with many equal times and checks they
// pop in (time, push order) order, against a stable sort as the reference.
func TestEventQueueOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var q eventQueue
	var ref []event
	for i := 0; i < 5000; i++ {
		e := event{t: int64(rng.IntN(50)), id: int32(i)}
		q.push(e)
		ref = append(ref, e)
		if i%7 == 3 { // interleave pops with pushes
			got := q.pop()
			sort.SliceStable(ref, func(a, b int) bool { return ref[a].t < ref[b].t })
			if got.id != ref[0].id {
				t.Fatalf("pop %d: id %d, want %d", i, got.id, ref[0].id)
			}
			ref = ref[1:]
		}
	}
	sort.SliceStable(ref, func(a, b int) bool { return ref[a].t < ref[b].t })
	for i, want := range ref {
		got := q.pop()
		if got.id != want.id || got.t != want.t {
			t.Fatalf("final pop %d: (%d,%d), want (%d,%d)", i, got.t, got.id, want.t, want.id)
		}
	}
	if q.Len() != 0 {
		t.Fatalf("queue not empty: %d", q.Len())
	}
}

// TestSimultaneousCompletionsInStartOrder: flows ending at the same instant
// complete in the order they were started, run after run.
func TestSimultaneousCompletionsInStartOrder(t *testing.T) {
	for run := 0; run < 3; run++ {
		n := NewNet()
		var tags []int32
		for i := 0; i < 10; i++ {
			n.Start(FlowSpec{Latency: 1000, Tag: int32(i)})
		}
		for {
			tag, _, end, ok := n.Step()
			if !ok {
				break
			}
			if end != 1000 {
				t.Fatalf("end %d, want 1000", end)
			}
			tags = append(tags, tag)
		}
		for i, tag := range tags {
			if tag != int32(i) {
				t.Fatalf("run %d: completion %d is tag %d, want %d", run, i, tag, i)
			}
		}
	}
}
