package scheduler

import (
	"context"
	"math/rand/v2"
)

// testBackend completes started tasks one per step in a scripted order:
// "fifo" (start order), "lifo" (latest first), "random" (seeded),
// "node0-first" (start order, node 0's tasks before every other node's)
// or "node0-slow" (start order, node 0's tasks only at every tenth step
// while other nodes have some). Each
// completion advances time by one microsecond and reports the task's
// estimated output, as the simulator does without data.
type testBackend struct {
	topo     Topology
	now      Time
	order    string
	rng      *rand.Rand
	inflight []*Task
	started  []*Task
	steps    int
	// onStart, when set, sees every start (for property checks).
	onStart func(*Task)
}

var _ Backend = (*testBackend)(nil)

func newTestBackend(topo Topology, order string, seed uint64) *testBackend {
	return &testBackend{topo: topo, order: order, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

func (b *testBackend) Topology() Topology { return b.topo }
func (b *testBackend) Now() Time          { return b.now }

func (b *testBackend) Start(t *Task) error {
	if b.onStart != nil {
		b.onStart(t)
	}
	b.inflight = append(b.inflight, t)
	b.started = append(b.started, t)
	return nil
}

func (b *testBackend) Next(ctx context.Context) (Completion, error) {
	if err := ctx.Err(); err != nil {
		return Completion{}, err
	}
	if len(b.inflight) == 0 {
		return Completion{}, ErrIdle
	}
	i := 0
	switch b.order {
	case "lifo":
		i = len(b.inflight) - 1
	case "random":
		i = b.rng.IntN(len(b.inflight))
	case "node0-first", "node0-slow":
		b.steps++
		first := b.order == "node0-first" || b.steps%10 == 0
		for j, t := range b.inflight {
			if (t.Node == 0) == first {
				i = j
				break
			}
		}
	}
	t := b.inflight[i]
	copy(b.inflight[i:], b.inflight[i+1:])
	b.inflight = b.inflight[:len(b.inflight)-1]
	start := b.now
	b.now += 1000
	return Completion{Task: t, Start: start, End: b.now, OutBytes: t.EstBytes, OutRows: t.EstRows}, nil
}

// instantBackend is the cheapest possible backend (benchmarks): a ring of
// started tasks completed in start order, no allocation per task.
type instantBackend struct {
	topo Topology
	now  Time
	ring []*Task
	head int
}

var _ Backend = (*instantBackend)(nil)

func (b *instantBackend) Topology() Topology { return b.topo }
func (b *instantBackend) Now() Time          { return b.now }
func (b *instantBackend) Start(t *Task) error {
	b.ring = append(b.ring, t)
	return nil
}
func (b *instantBackend) Next(context.Context) (Completion, error) {
	if b.head == len(b.ring) {
		return Completion{}, ErrIdle
	}
	t := b.ring[b.head]
	b.head++
	if b.head == len(b.ring) {
		b.ring, b.head = b.ring[:0], 0
	}
	start := b.now
	b.now++
	return Completion{Task: t, Start: start, End: b.now, OutBytes: t.EstBytes, OutRows: t.EstRows}, nil
}
