package scheduler

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"gostachio/plan"
	"gostachio/tpch/queries"
)

// checkingBackend completes tasks in a seeded random order and checks, from
// what it is asked to execute, that every task starts once, only after its
// dependencies completed, and that the data held in pinned host buffers by
// in-flight reads never exceeds the pinned budget.
type checkingBackend struct {
	*testBackend
	t         *testing.T
	pinBudget int64
	done      map[[2]int32]bool
	seen      map[[2]int32]bool
	readHeld  []int64 // per node: bytes of data reads started, their copy not yet done
	unitRead  map[[3]int32]int64
	readBytes int64
	errs      int
}

func (b *checkingBackend) fail(format string, args ...any) {
	b.errs++
	if b.errs < 5 {
		b.t.Errorf(format, args...)
	}
}

func (b *checkingBackend) Start(t *Task) error {
	k := [2]int32{t.Node, int32(t.ID)}
	if b.seen[k] {
		b.fail("task %s started twice", t)
	}
	b.seen[k] = true
	for _, d := range t.Deps {
		if !b.done[[2]int32{t.Node, int32(d)}] {
			b.fail("task %s started before its dependency %d completed", t, d)
		}
	}
	if t.Kind == TaskRead && !t.Meta {
		b.readHeld[t.Node] += t.Bytes
		b.unitRead[[3]int32{t.Node, t.Pipeline, t.Unit}] += t.Bytes
		b.readBytes += t.Bytes
		if b.readHeld[t.Node] > b.pinBudget {
			b.fail("node %d holds %d bytes of reads, budget %d", t.Node, b.readHeld[t.Node], b.pinBudget)
		}
	}
	return b.testBackend.Start(t)
}

func (b *checkingBackend) Next(ctx context.Context) (Completion, error) {
	c, err := b.testBackend.Next(ctx)
	if err != nil {
		return c, err
	}
	t := c.Task
	b.done[[2]int32{t.Node, int32(t.ID)}] = true
	if t.Kind == TaskH2D {
		k := [3]int32{t.Node, t.Pipeline, t.Unit}
		b.readHeld[t.Node] -= b.unitRead[k]
		delete(b.unitRead, k)
	}
	return c, nil
}

func randomConfig(r *rand.Rand) Config {
	c := Config{
		Chunk:      []int64{0, 64 << 10, 256 << 10, 1 << 20}[r.IntN(4)],
		Depth:      1 + r.IntN(10),
		Window:     r.IntN(4),
		DynBuf:     r.IntN(2) == 0,
		Defer:      r.IntN(2) == 0,
		StageSync:  r.IntN(4) == 0,
		Combine:    r.IntN(2) == 0,
		CombineGap: int64(r.IntN(2)) << 20,
		MetaCache:  r.IntN(2) == 0,
		MetaBytes:  4096,
		Adaptive:   r.IntN(2) == 0,
		Multipath:  r.IntN(2) == 0,
	}
	return c
}

// TestPropertyRandomOrders runs the TPC-H plan shapes on random topologies,
// knobs, budgets and completion orders.
func TestPropertyRandomOrders(t *testing.T) {
	const sf = 0.01
	tables, err := queries.Stats(sf, 5000)
	if err != nil {
		t.Fatal(err)
	}
	built := map[string]struct {
		p    *plan.Plan
		rows int64
	}{}
	for q, rows := range map[string]int64{"q1": 4, "q3": 10, "q6": 1} {
		p, err := queries.Build(q, sf, tables)
		if err != nil {
			t.Fatal(err)
		}
		built[q] = struct {
			p    *plan.Plan
			rows int64
		}{p, rows}
	}
	names := []string{"q1", "q3", "q6"}
	iters := 300
	if testing.Short() {
		iters = 60
	}
	tight, tightDev := 0, 0
	for i := 0; i < iters; i++ {
		seed := uint64(i)
		r := rand.New(rand.NewPCG(seed, 7))
		q := names[r.IntN(len(names))]
		topo := Topology{Nodes: 1 + r.IntN(3), Devices: 1 + r.IntN(4), SSDs: 1 + r.IntN(4), NICs: 1 + r.IntN(2)}
		cfg := randomConfig(r)
		// The largest unit: Chunk bytes or one chunk of all projected
		// lineitem/orders columns (< 300 KiB at 5000 rows), twice for
		// fixed slots plus result staging.
		topo.PinnedMem = int64(1<<20) + int64(r.IntN(4))<<19
		topo.DeviceMem = int64(64 << 20)
		if topo.Nodes == 1 {
			topo.DeviceMem = topo.PinnedMem + int64(r.IntN(4))<<18
		}
		pol, err := PolicyOf("random", cfg)
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("seed%d-%s-%dx%d", seed, q, topo.Nodes, topo.Devices)
		tb := newTestBackend(topo, "random", seed)
		cb := &checkingBackend{testBackend: tb, t: t, pinBudget: topo.PinnedMem,
			done: map[[2]int32]bool{}, seen: map[[2]int32]bool{}, readHeld: make([]int64, topo.Nodes), unitRead: map[[3]int32]int64{}}
		res, err := Run(context.Background(), built[q].p, pol, cb, nil)
		if err != nil {
			t.Fatalf("%s %+v: %v", name, cfg, err)
		}
		if len(tb.inflight) != 0 {
			t.Errorf("%s: %d tasks still in flight", name, len(tb.inflight))
		}
		if int64(len(cb.seen)) != res.Tasks || int64(len(cb.done)) != res.Tasks {
			t.Errorf("%s: started %d, completed %d, Run counted %d", name, len(cb.seen), len(cb.done), res.Tasks)
		}
		if res.PeakPinned*4 > topo.PinnedMem*3 {
			tight++
		}
		if topo.Nodes == 1 && res.PeakDevice*4 > topo.DeviceMem*3 {
			tightDev++
		}
		if res.PeakPinned > topo.PinnedMem {
			t.Errorf("%s: peak pinned %d over budget %d", name, res.PeakPinned, topo.PinnedMem)
		}
		if topo.Nodes == 1 && res.PeakDevice > topo.DeviceMem {
			t.Errorf("%s: peak device %d over budget %d", name, res.PeakDevice, topo.DeviceMem)
		}
		if res.ResultRows != built[q].rows {
			t.Errorf("%s: result %d rows, want %d", name, res.ResultRows, built[q].rows)
		}
		if !cfg.Combine {
			// Without combining the reads move exactly the projected
			// columns of every chunk.
			var want int64
			for _, pl := range built[q].p.Pipelines {
				if pl.Source.Kind != plan.SourceScan {
					continue
				}
				tbl := &built[q].p.Tables[pl.Source.Table]
				cols, _ := tbl.ColumnIndexes(pl.Ops[0].Out)
				want += tbl.Bytes(cols)
			}
			if cb.readBytes != want {
				t.Errorf("%s: reads moved %d bytes, want %d", name, cb.readBytes, want)
			}
		}
		if t.Failed() {
			t.Fatalf("%s: config %+v", name, cfg)
		}
	}
	// The budgets must bind in a good share of the runs, or the test
	// proves little.
	if tight < iters/5 {
		t.Errorf("only %d of %d runs used more than 3/4 of the pinned budget", tight, iters)
	}
	t.Logf("%d of %d runs used more than 3/4 of the pinned budget, %d of the device budget", tight, iters, tightDev)
}

// TestStuckBudget: a budget below one unit is reported, not hung.
func TestStuckBudget(t *testing.T) {
	tables, _ := queries.Stats(0.01, 5000)
	p, err := queries.Build("q6", 0.01, tables)
	if err != nil {
		t.Fatal(err)
	}
	pol, _ := NewPolicy("overlap", "pinned=64KiB")
	_, err = Run(context.Background(), p, pol, newTestBackend(Topology{Nodes: 1, Devices: 1, SSDs: 1, NICs: 1, DeviceMem: 1 << 30, PinnedMem: 1 << 30}, "fifo", 0), nil)
	if !errors.Is(err, ErrStuck) {
		t.Fatalf("err = %v, want ErrStuck", err)
	}
}
