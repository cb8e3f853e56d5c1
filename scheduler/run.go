package scheduler

import (
	"context"
	"errors"
	"fmt"

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
	for n := range passes {
		passes[n] = 1
	}
	inflight := 0
	for {
		now := b.Now()
		for pending := true; pending; {
			pending = false
			for n, s := range nodes {
				for ; passes[n] > 0; passes[n]-- {
					for _, t := range s.Ready(now) {
						if err := b.Start(t); err != nil {
							return res, fmt.Errorf("scheduler: start %s task %d on node %d: %w", t.Kind, t.ID, t.Node, err)
						}
						inflight++
					}
				}
			}
			// Pipelines that finished inside Ready (e.g. with no units) may
			// release others: their deliveries and releases are events too.
			for _, s := range nodes {
				settle(s, nodes, coord, passes)
			}
			for n, s := range nodes {
				releaseOutputs(s, b)
				pending = pending || passes[n] > 0
			}
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
		passes[t.Node]++
		record(&res, sink, &c)
		settle(s, nodes, coord, passes)
	}
	for _, s := range nodes {
		finish(&res, s)
	}
	return res, nil
}

// settle routes s's deliveries to other nodes and reports its finished
// pipelines to coord; a pipeline finished on every node is released
// everywhere. Each delivery and each release is an event of the node it
// reaches: it adds one to that node's passes (a message, under RunNode).
func settle(s *Scheduler, nodes []*Scheduler, coord *Coordinator, passes []int) {
	for _, d := range s.remote {
		nodes[d.node].Deliver(d.pipe, d.dev, d.bytes, d.rows)
		passes[d.node]++
	}
	s.remote = s.remote[:0]
	for _, f := range s.Finished() {
		// A scheduler reports each pipeline once, so coord cannot fail.
		if global, _, _ := coord.Finished(int(s.node), f); global {
			for n, o := range nodes {
				o.GlobalDone(f)
				passes[n]++
			}
		}
	}
}
