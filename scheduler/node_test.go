package scheduler

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"gostachio/plan"
	"gostachio/tpch/queries"
)

// nodeBackend executes one node's tasks of a multi-node topology in start
// order (each completion one microsecond later), reporting estimated
// outputs like testBackend. It is safe for Start while Next runs elsewhere.
type nodeBackend struct {
	topo Topology
	node int32
	mu   sync.Mutex
	now  Time
	q    []*Task
	bad  error
}

func (b *nodeBackend) Topology() Topology { return b.topo }
func (b *nodeBackend) Now() Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.now
}

func (b *nodeBackend) Start(t *Task) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t.Node != b.node && b.bad == nil {
		b.bad = fmt.Errorf("node %d backend got a task of node %d", b.node, t.Node)
	}
	b.q = append(b.q, t)
	return nil
}

func (b *nodeBackend) Next(ctx context.Context) (Completion, error) {
	if err := ctx.Err(); err != nil {
		return Completion{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.q) == 0 {
		return Completion{}, ErrIdle
	}
	t := b.q[0]
	b.q = b.q[1:]
	start := b.now
	b.now += 1000
	return Completion{Task: t, Start: start, End: b.now, OutBytes: t.EstBytes, OutRows: t.EstRows}, nil
}

// memCluster is an in-memory NodeNet for every node of a run: messages go
// up to one coordinator goroutine, which relays deliveries and answers
// finished pipelines, as a multi-process cluster's coordinator does.
type memCluster struct {
	up     chan upMsg
	inbox  []chan NodeMsg
	coord  *Coordinator
	failAt int // fail every node once this many messages went up (0: never)
}

type upMsg struct {
	node int
	fin  bool
	pipe int32
	d    PipeDelivery
}

type memNet struct {
	c    *memCluster
	node int
}

func (n memNet) Deliver(d PipeDelivery) error {
	n.c.up <- upMsg{node: n.node, d: d}
	return nil
}
func (n memNet) Finished(p int32) error {
	n.c.up <- upMsg{node: n.node, fin: true, pipe: p}
	return nil
}
func (n memNet) Inbox() <-chan NodeMsg { return n.c.inbox[n.node] }

func newMemCluster(p *plan.Plan, nodes int) *memCluster {
	c := &memCluster{up: make(chan upMsg, 1<<16), coord: NewCoordinator(len(p.Pipelines), nodes)}
	for range nodes {
		c.inbox = append(c.inbox, make(chan NodeMsg, 1<<16))
	}
	return c
}

// serve relays until stop is closed.
func (c *memCluster) serve(stop <-chan struct{}) error {
	n := 0
	for {
		select {
		case <-stop:
			return nil
		case m := <-c.up:
			n++
			if c.failAt > 0 && n == c.failAt {
				for _, in := range c.inbox {
					in <- NodeMsg{Kind: MsgFail, Err: errors.New("injected failure")}
				}
				continue
			}
			if !m.fin {
				if m.d.Node == int32(m.node) {
					return fmt.Errorf("node %d delivered to itself: %+v", m.node, m.d)
				}
				c.inbox[m.d.Node] <- NodeMsg{Kind: MsgDeliver, Delivery: m.d}
				continue
			}
			global, all, err := c.coord.Finished(m.node, m.pipe)
			if err != nil {
				return err
			}
			for _, in := range c.inbox {
				if global {
					in <- NodeMsg{Kind: MsgGlobalDone, Pipe: m.pipe}
				}
				if all {
					in <- NodeMsg{Kind: MsgAllDone}
				}
			}
		}
	}
}

// runNodes runs p on every node of topo with RunNode and sums the results.
func runNodes(t *testing.T, p *plan.Plan, pol Policy, topo Topology, failAt int) (Result, []error) {
	t.Helper()
	c := newMemCluster(p, topo.Nodes)
	c.failAt = failAt
	stop := make(chan struct{})
	serveErr := make(chan error, 1)
	go func() { serveErr <- c.serve(stop) }()
	res := make([]Result, topo.Nodes)
	errs := make([]error, topo.Nodes)
	backends := make([]*nodeBackend, topo.Nodes)
	var wg sync.WaitGroup
	for n := range topo.Nodes {
		backends[n] = &nodeBackend{topo: topo, node: int32(n)}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			res[n], errs[n] = RunNode(ctx, p, pol, backends[n], n, memNet{c, n}, nil)
		})
	}
	wg.Wait()
	close(stop)
	if err := <-serveErr; err != nil {
		t.Fatalf("coordinator: %v", err)
	}
	var sum Result
	for n, r := range res {
		if backends[n].bad != nil {
			t.Fatal(backends[n].bad)
		}
		sum.Tasks += r.Tasks
		for k := range sum.ByKind {
			sum.ByKind[k] += r.ByKind[k]
			sum.BytesByKind[k] += r.BytesByKind[k]
		}
		sum.ResultRows += r.ResultRows
		sum.ResultBytes += r.ResultBytes
		sum.PeakPinned = max(sum.PeakPinned, r.PeakPinned)
		sum.PeakDevice = max(sum.PeakDevice, r.PeakDevice)
	}
	return sum, errs
}

// TestRunNodeSingleEqualsRun: one node driven by RunNode runs the same
// tasks and result as Run. Peak memory may differ: a global-done message
// arrives through the net asynchronously, so RunNode can release an output
// a few completions later than Run (the peaks must stay within budget).
func TestRunNodeSingleEqualsRun(t *testing.T) {
	tables, err := queries.Stats(0.01, 5000)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"q1", "q3", "q6"} {
		p, err := queries.Build(q, 0.01, tables)
		if err != nil {
			t.Fatal(err)
		}
		for _, polName := range []string{"serial", "overlap"} {
			pol, err := NewPolicy(polName, "")
			if err != nil {
				t.Fatal(err)
			}
			topo := Topology{Nodes: 1, Devices: 3, SSDs: 2, NICs: 1, DeviceMem: 64 << 20, PinnedMem: 4 << 20}
			want, err := Run(context.Background(), p, pol, newTestBackend(topo, "fifo", 0), nil)
			if err != nil {
				t.Fatal(err)
			}
			got, errs := runNodes(t, p, pol, topo, 0)
			if errs[0] != nil {
				t.Fatalf("%s/%s: %v", q, polName, errs[0])
			}
			got.Makespan = want.Makespan
			if got.PeakDevice > topo.DeviceMem || got.PeakPinned > topo.PinnedMem {
				t.Errorf("%s/%s: RunNode peaks %d device, %d pinned over the budgets", q, polName, got.PeakDevice, got.PeakPinned)
			}
			got.PeakDevice, got.PeakPinned = want.PeakDevice, want.PeakPinned
			if got != want {
				t.Errorf("%s/%s: RunNode\n%+v\nRun\n%+v", q, polName, got, want)
			}
		}
	}
}

// TestRunNodeCluster runs several nodes, each with its own RunNode and
// backend, and checks the totals against one Run over the whole topology:
// the same result rows, every chunk read once, the same exchange volume.
func TestRunNodeCluster(t *testing.T) {
	tables, err := queries.Stats(0.01, 5000)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]int64{"q1": 4, "q3": 10, "q6": 1}
	for _, q := range []string{"q1", "q3", "q6"} {
		p, err := queries.Build(q, 0.01, tables)
		if err != nil {
			t.Fatal(err)
		}
		for _, shape := range [][2]int{{2, 1}, {3, 2}, {4, 1}} {
			for _, polName := range []string{"serial", "overlap"} {
				name := fmt.Sprintf("%s/%dx%d/%s", q, shape[0], shape[1], polName)
				pol, err := NewPolicy(polName, "")
				if err != nil {
					t.Fatal(err)
				}
				topo := Topology{Nodes: shape[0], Devices: shape[1], SSDs: 1, NICs: 1, DeviceMem: 256 << 20, PinnedMem: 4 << 20}
				want, err := Run(context.Background(), p, pol, newTestBackend(topo, "fifo", 0), nil)
				if err != nil {
					t.Fatal(err)
				}
				got, errs := runNodes(t, p, pol, topo, 0)
				for n, err := range errs {
					if err != nil {
						t.Fatalf("%s: node %d: %v", name, n, err)
					}
				}
				if got.ResultRows != rows[q] || want.ResultRows != rows[q] {
					t.Errorf("%s: result rows %d (Run %d), want %d", name, got.ResultRows, want.ResultRows, rows[q])
				}
				for _, k := range []TaskKind{TaskRead, TaskH2D, TaskSend} {
					if got.BytesByKind[k] != want.BytesByKind[k] {
						t.Errorf("%s: %s bytes %d, Run %d", name, k, got.BytesByKind[k], want.BytesByKind[k])
					}
				}
				if got.ByKind[TaskSend] == 0 {
					t.Errorf("%s: no sends between %d nodes", name, shape[0])
				}
			}
		}
	}
}

// TestRunNodeFailure: a MsgFail mid-run stops every node with that error,
// and RunNode leaves no goroutine behind.
func TestRunNodeFailure(t *testing.T) {
	tables, _ := queries.Stats(0.01, 5000)
	p, err := queries.Build("q3", 0.01, tables)
	if err != nil {
		t.Fatal(err)
	}
	pol, _ := NewPolicy("overlap", "")
	before := runtime.NumGoroutine()
	topo := Topology{Nodes: 3, Devices: 1, SSDs: 1, NICs: 1, DeviceMem: 256 << 20, PinnedMem: 4 << 20}
	_, errs := runNodes(t, p, pol, topo, 3)
	for n, err := range errs {
		if err == nil || err.Error() != "injected failure" {
			t.Errorf("node %d: err = %v, want the injected failure", n, err)
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > before {
		t.Errorf("%d goroutines after the run, %d before", g, before)
	}
}

// TestRunNodeStuck: a budget below one unit is ErrStuck on the node, not a
// wait for the cluster.
func TestRunNodeStuck(t *testing.T) {
	tables, _ := queries.Stats(0.01, 5000)
	p, err := queries.Build("q6", 0.01, tables)
	if err != nil {
		t.Fatal(err)
	}
	pol, _ := NewPolicy("overlap", "pinned=64KiB")
	topo := Topology{Nodes: 2, Devices: 1, SSDs: 1, NICs: 1, DeviceMem: 1 << 30, PinnedMem: 1 << 30}
	_, errs := runNodes(t, p, pol, topo, 0)
	for n, err := range errs {
		if !errors.Is(err, ErrStuck) {
			t.Errorf("node %d: err = %v, want ErrStuck", n, err)
		}
	}
}

// TestRunPassesPerNode: under Run, a node's scheduler takes a pass only
// for its own events, as each worker's RunNode loop does; adaptive
// regulation grows a limit by one per pass, so what a node starts before
// its k-th completion (with no delivery to it yet) must not depend on how
// many events other nodes had meanwhile.
func TestRunPassesPerNode(t *testing.T) {
	tables, err := queries.Stats(0.1, 5000)
	if err != nil {
		t.Fatal(err)
	}
	p, err := queries.Build("q6", 0.1, tables)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := NewPolicy("overlap", "chunk=256KiB")
	if err != nil {
		t.Fatal(err)
	}
	topo := Topology{Nodes: 4, Devices: 1, SSDs: 1, NICs: 1, DeviceMem: 4 << 30, PinnedMem: 4 << 30}
	const k = 8
	// startsBefore lists node 0's tasks started before its k-th
	// completion, and counts the other nodes' completions before it and
	// the sends to node 0 among them.
	startsBefore := func(order string) (starts []string, others, sends int) {
		b := newTestBackend(topo, order, 0)
		own := 0
		b.onStart = func(t *Task) {
			if t.Node == 0 && own < k {
				starts = append(starts, fmt.Sprintf("%s p%d u%d", t.Kind, t.Pipeline, t.Unit))
			}
		}
		sink := traceFunc(func(e Event) {
			switch {
			case e.Node == 0:
				own++
			case own < k:
				others++
				if e.Kind == TaskSend {
					sends++
				}
			}
		})
		if _, err := Run(context.Background(), p, pol, b, sink); err != nil {
			t.Fatalf("%s: %v", order, err)
		}
		return starts, others, sends
	}
	alone, _, _ := startsBefore("node0-first")
	slow, others, sends := startsBefore("node0-slow")
	if others < 5*k || sends > 0 {
		t.Fatalf("node0-slow: %d other nodes' completions (%d sends) before node 0's %d-th: the test shows nothing", others, sends, k)
	}
	if !slices.Equal(alone, slow) {
		t.Errorf("before its %d-th completion node 0 started\n%v\nafter %d other nodes' completions, but\n%v\nafter none", k, slow, others, alone)
	}
}

// traceFunc is a TraceSink calling a function.
type traceFunc func(Event)

func (f traceFunc) Record(e Event) { f(e) }
