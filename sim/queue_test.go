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

// TestEventQueueAgainstSort: events pushed at and after the time of the
// last one taken out, and some before it, leave in (time, push order)
// order, over wide time ranges (every bucket of the radix heap).
func TestEventQueueAgainstSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var q eventQueue
	type key struct {
		t   int64
		seq int
	}
	var ref []key
	seq, now := 0, int64(0)
	for i := 0; i < 4000; i++ {
		var at int64
		switch rng.IntN(4) {
		case 0:
			at = now
		case 1:
			at = now + rng.Int64N(1<<uint(rng.IntN(62)))
		case 2:
			at = max(0, now-rng.Int64N(100)) // before the last one out
		default:
			at = now + rng.Int64N(1000)
		}
		q.push(event{t: at, id: int32(seq)})
		ref = append(ref, key{at, seq})
		seq++
		for rng.IntN(3) == 0 && q.Len() > 0 {
			sort.Slice(ref, func(a, b int) bool {
				return ref[a].t < ref[b].t || (ref[a].t == ref[b].t && ref[a].seq < ref[b].seq)
			})
			if p := q.peek(); p.t != ref[0].t || int(p.id) != ref[0].seq {
				t.Fatalf("peek (%d,%d), want (%d,%d)", p.t, p.id, ref[0].t, ref[0].seq)
			}
			got := q.pop()
			if got.t != ref[0].t || int(got.id) != ref[0].seq {
				t.Fatalf("pop (%d,%d), want (%d,%d)", got.t, got.id, ref[0].t, ref[0].seq)
			}
			now = max(now, got.t)
			ref = ref[1:]
		}
	}
	sort.Slice(ref, func(a, b int) bool {
		return ref[a].t < ref[b].t || (ref[a].t == ref[b].t && ref[a].seq < ref[b].seq)
	})
	for _, want := range ref {
		got := q.pop()
		if got.t != want.t || int(got.id) != want.seq {
			t.Fatalf("final pop (%d,%d), want (%d,%d)", got.t, got.id, want.t, want.seq)
		}
	}
	if q.Len() != 0 {
		t.Fatalf("queue not empty: %d", q.Len())
	}
}
