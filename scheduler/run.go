package scheduler

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"gostachio/plan"
)

// Run executes plan p under policy pol on backend b: the one driver loop
// both backends share. It creates one Scheduler per node of b.Topology(),
// starts every ready task, feeds each completion back to its node's
// scheduler, routes exchange data between nodes, releases pipelines that
// finished on every node, and records one Event per completed task to sink
// (nil: none). It returns when every pipeline has finished, on the first
// error (a failed task, a backend error, ctx done), or with ErrStuck when
// tasks remain but none can start within the memory budgets.
func Run(ctx context.Context, p *plan.Plan, pol Policy, b Backend, sink TraceSink) (Result, error) {
	var res Result
	topo := b.Topology()
	if err := topo.Validate(); err != nil {
		return res, err
	}
	nodes := make([]*Scheduler, topo.Nodes)
	for n := range nodes {
		s, err := NewFor(p, pol, topo, n)
		if err != nil {
			return res, err
		}
		nodes[n] = s
	}
	coord := NewCoordinator(len(p.Pipelines), len(nodes))
	// passes[n] counts the events node n has not yet had a pass (Ready)
	// for. A node's pass follows each of its own events only, as under
	// RunNode, where each worker loops once per completion or message:
	// adaptive regulation grows a limit by one per pass, so a pass for
	// every node after every event anywhere would grow a node's limits
	// as fast as the cluster has events, not as fast as the node has.
	passes := make([]int, len(nodes))
	// Only the nodes an event reached have anything to do: ready holds the
	// nodes with passes left, dirty those that may have deliveries,
	// finished pipelines or released outputs to settle. Both are swept in
	// node order, as a sweep over every node would (the others are no-ops),
	// so that the cost of an event does not grow with the cluster.
	ready, dirty := newNodeSet(len(nodes)), newNodeSet(len(nodes))
	bump := func(n int) {
		passes[n]++
		ready.add(n)
		dirty.add(n)
	}
	for n := range passes {
		bump(n)
	}
	inflight := 0
	for {
		now := b.Now()
		for pending := true; pending; {
			for _, n := range ready.sorted() {
				s := nodes[n]
				dirty.add(n) // its pass may finish pipelines
				for ; passes[n] > 0; passes[n]-- {
					for _, t := range s.Ready(now) {
						if err := b.Start(t); err != nil {
							return res, fmt.Errorf("scheduler: start %s task %d on node %d: %w", t.Kind, t.ID, t.Node, err)
						}
						inflight++
					}
				}
			}
			ready.clear()
			// Pipelines that finished inside Ready (e.g. with no units) may
			// release others: their deliveries and releases are events too.
			// A node dirtied past the one being settled is settled in this
			// sweep, one before it in the next (after its pass), as a sweep
			// over every node in order would.
			touched := dirty.sorted()
			dirty.clear()
			var later []int
			for i := 0; i < len(touched); i++ {
				n := touched[i]
				settleRun(nodes[n], nodes, coord, func(m int) {
					passes[m]++
					ready.add(m)
					if m > n {
						touched = insertSorted(touched, i+1, m)
					} else {
						later = append(later, m)
					}
				})
			}
			if len(later) > 0 {
				touched = append(touched, later...)
				slices.Sort(touched)
				touched = slices.Compact(touched)
			}
			for _, n := range touched {
				releaseOutputs(nodes[n], b)
			}
			pending = ready.len() > 0
		}
		for _, s := range nodes {
			if s.err != nil {
				return res, s.err
			}
		}
		if nodes[0].Done() {
			break
		}
		if inflight == 0 {
			return res, fmt.Errorf("%w (policy %s: pinned budget %d, device budget %d per device)", ErrStuck, pol.Name(), nodes[0].pinBud, nodes[0].devBud)
		}
		c, err := b.Next(ctx)
		if err != nil {
			if errors.Is(err, ErrIdle) {
				return res, fmt.Errorf("scheduler: backend idle with %d tasks in flight: %w", inflight, err)
			}
			return res, err
		}
		inflight--
		t := c.Task
		if t == nil || t.Node < 0 || int(t.Node) >= len(nodes) {
			return res, fmt.Errorf("scheduler: completion names no task of this run")
		}
		s := nodes[t.Node]
		if err := s.Complete(c); err != nil {
			return res, err
		}
		bump(int(t.Node))
		record(&res, sink, &c)
		settleRun(s, nodes, coord, bump)
	}
	for _, s := range nodes {
		finish(&res, s)
	}
	return res, nil
}

// settleRun routes s's deliveries to other nodes and reports its finished
// pipelines to coord; a pipeline finished on every node is released
// everywhere. Each delivery and each release is an event of the node it
// reaches: bump gives that node one more pass (a message, under RunNode).
func settleRun(s *Scheduler, nodes []*Scheduler, coord *Coordinator, bump func(int)) {
	for _, d := range s.remote {
		nodes[d.node].Deliver(d.pipe, d.dev, d.bytes, d.rows)
		bump(int(d.node))
	}
	s.remote = s.remote[:0]
	for _, f := range s.Finished() {
		// A scheduler reports each pipeline once, so coord cannot fail.
		if global, _, _ := coord.Finished(int(s.node), f); global {
			for n, o := range nodes {
				o.GlobalDone(f)
				bump(n)
			}
		}
	}
}

// nodeSet is a set of node indices with O(1) add and a sweep in order.
type nodeSet struct {
	in   []bool
	list []int
	buf  []int // sorted's
}

func newNodeSet(n int) *nodeSet { return &nodeSet{in: make([]bool, n)} }

func (ns *nodeSet) add(n int) {
	if !ns.in[n] {
		ns.in[n] = true
		ns.list = append(ns.list, n)
	}
}

func (ns *nodeSet) len() int { return len(ns.list) }

// sorted returns the members in increasing order, in a slice of the set's
// that the set's later adds do not change and the next call reuses.
func (ns *nodeSet) sorted() []int {
	ns.buf = append(ns.buf[:0], ns.list...)
	slices.Sort(ns.buf)
	return ns.buf
}

func (ns *nodeSet) clear() {
	for _, n := range ns.list {
		ns.in[n] = false
	}
	ns.list = ns.list[:0]
}

// insertSorted inserts m into the sorted tail xs[from:] unless it is there.
func insertSorted(xs []int, from, m int) []int {
	i, found := slices.BinarySearch(xs[from:], m)
	if found {
		return xs
	}
	return slices.Insert(xs, from+i, m)
}
