package scheduler

import (
	"context"
	"errors"
	"fmt"

	"gostachio/plan"
)

// PipeDelivery is exchange data of pipeline Pipe that a completed send put
// on device Dev of node Node: what Run hands from one node's scheduler to
// another's Deliver. Bytes and Rows are the send task's (the scheduler's
// accounting), not the real data, which the backend moves itself.
type PipeDelivery struct {
	Node, Pipe, Dev int32
	Bytes, Rows     int64
}

// NodeMsgKind is what a NodeMsg tells a node.
type NodeMsgKind uint8

const (
	// MsgDeliver: exchange data from another node landed here (Delivery).
	MsgDeliver NodeMsgKind = iota + 1
	// MsgGlobalDone: pipeline Pipe has finished on every node.
	MsgGlobalDone
	// MsgAllDone: the coordinator saw every pipeline finish on every node;
	// a node that does not agree has diverged from the others.
	MsgAllDone
	// MsgFail: the cluster failed (Err); the node stops.
	MsgFail
)

// NodeMsg is one message from the cluster to a node's driver.
type NodeMsg struct {
	Kind     NodeMsgKind
	Delivery PipeDelivery // MsgDeliver
	Pipe     int32        // MsgGlobalDone
	Err      error        // MsgFail
}

// NodeNet is one node's link to the rest of a cluster: exactly what Run
// passes between its schedulers in memory, as messages. A coordinator (see
// Coordinator) counts Finished reports and answers with MsgGlobalDone.
//
// Ordering contract: a node reports a pipeline's deliveries before its
// Finished of that pipeline, and the net must hand each delivery to its
// node before that node's MsgGlobalDone of the pipeline (messages relayed
// in order through one coordinator satisfy this). The backend must have
// stored a remote send's data on the receiver before it completes the send.
type NodeNet interface {
	// Deliver reports exchange data this node's send put on node d.Node
	// (never this node).
	Deliver(d PipeDelivery) error
	// Finished reports that pipeline p finished on this node.
	Finished(p int32) error
	// Inbox carries the messages for this node, in order. RunNode reads it
	// until it returns; a closed inbox is a lost cluster.
	Inbox() <-chan NodeMsg
}

// Coordinator is the cluster-wide bookkeeping of a run: on how many nodes
// each pipeline has finished. Run keeps one in memory; a multi-process
// cluster keeps one on its coordinating process and turns its answers into
// MsgGlobalDone / MsgAllDone. It is not safe for concurrent use.
type Coordinator struct {
	nodes int
	on    []int
	seen  [][]bool // [node][pipeline]: reported
	done  int
}

// NewCoordinator returns the bookkeeping of a plan of `pipelines` pipelines
// on `nodes` nodes.
func NewCoordinator(pipelines, nodes int) *Coordinator {
	c := &Coordinator{nodes: nodes, on: make([]int, pipelines), seen: make([][]bool, nodes)}
	for n := range c.seen {
		c.seen[n] = make([]bool, pipelines)
	}
	return c
}

// Finished records that pipeline p finished on node n. It reports whether
// p has now finished on every node (send MsgGlobalDone(p) to every node)
// and whether every pipeline has (the query is over). A report naming no
// node or pipeline of the run, or a repeated one, is an error.
func (c *Coordinator) Finished(n int, p int32) (global, all bool, err error) {
	if n < 0 || n >= c.nodes || p < 0 || int(p) >= len(c.on) {
		return false, false, fmt.Errorf("scheduler: coordinator: node %d reports pipeline %d outside a %d-node, %d-pipeline run", n, p, c.nodes, len(c.on))
	}
	if c.seen[n][p] {
		return false, false, fmt.Errorf("scheduler: coordinator: node %d reports pipeline %d finished twice", n, p)
	}
	c.seen[n][p] = true
	c.on[p]++
	if c.on[p] < c.nodes {
		return false, false, nil
	}
	c.done++
	return true, c.done == len(c.on), nil
}

// RunNode is Run for node `node` of a cluster whose other nodes run in
// other processes: b executes this node's tasks only (its Topology names
// the whole cluster), and net carries what Run routes between nodes:
// deliveries to other nodes and this node's finished pipelines out,
// deliveries from other nodes and MsgGlobalDone in. It returns this node's
// account (Makespan on b's clock; peaks and result of this node) when every
// pipeline has finished on every node, on the first error (a failed task,
// a backend or net error, MsgFail, ctx done), or with ErrStuck when this
// node has tasks left, none in flight, none that can start, and no
// pipeline waiting for other nodes.
//
// While a task is in flight RunNode waits for b.Next on a goroutine of its
// own so that messages are handled as they arrive: b.Start must be safe to
// call while Next blocks in another goroutine (the engine's is; Run has no
// such requirement). That goroutine has returned when RunNode returns.
func RunNode(ctx context.Context, p *plan.Plan, pol Policy, b Backend, node int, net NodeNet, sink TraceSink) (Result, error) {
	var res Result
	topo := b.Topology()
	if err := topo.Validate(); err != nil {
		return res, err
	}
	s, err := NewFor(p, pol, topo, node)
	if err != nil {
		return res, err
	}
	nextCtx, cancel := context.WithCancel(ctx)
	type next struct {
		c   Completion
		err error
	}
	asks := make(chan struct{})
	answers := make(chan next, 1)
	pumpDone := make(chan struct{})
	go func() {
		defer close(pumpDone)
		for range asks {
			c, err := b.Next(nextCtx)
			answers <- next{c, err}
		}
	}()
	asked := false
	defer func() {
		cancel()
		if asked {
			<-answers
		}
		close(asks)
		<-pumpDone
	}()
	inbox := net.Inbox()
	inflight := 0
	for {
		for _, t := range s.Ready(b.Now()) {
			if err := b.Start(t); err != nil {
				return res, fmt.Errorf("scheduler: start %s task %d on node %d: %w", t.Kind, t.ID, t.Node, err)
			}
			inflight++
		}
		if err := settleNode(s, net); err != nil {
			return res, err
		}
		if s.err != nil {
			return res, s.err
		}
		if s.Done() {
			break
		}
		if inflight == 0 && !waitsForCluster(s) && len(inbox) == 0 {
			return res, fmt.Errorf("%w (node %d, policy %s: pinned budget %d, device budget %d per device)", ErrStuck, node, pol.Name(), s.pinBud, s.devBud)
		}
		if inflight > 0 && !asked {
			asks <- struct{}{}
			asked = true
		}
		select {
		case a := <-answers:
			asked = false
			if a.err != nil {
				if errors.Is(a.err, ErrIdle) {
					return res, fmt.Errorf("scheduler: node %d: backend idle with %d tasks in flight: %w", node, inflight, a.err)
				}
				return res, a.err
			}
			inflight--
			t := a.c.Task
			if t == nil || int(t.Node) != node {
				return res, fmt.Errorf("scheduler: node %d: completion names no task of this node", node)
			}
			if err := s.Complete(a.c); err != nil {
				return res, err
			}
			record(&res, sink, &a.c)
		case m, ok := <-inbox:
			if !ok {
				return res, fmt.Errorf("scheduler: node %d: cluster link closed before the run ended", node)
			}
			switch m.Kind {
			case MsgDeliver:
				d := m.Delivery
				if int(d.Node) != node || d.Pipe < 0 || int(d.Pipe) >= len(s.pipes) || d.Dev < 0 || int(d.Dev) >= topo.Devices {
					return res, fmt.Errorf("scheduler: node %d: delivery %+v names no device of this node", node, d)
				}
				s.Deliver(d.Pipe, d.Dev, d.Bytes, d.Rows)
			case MsgGlobalDone:
				if m.Pipe < 0 || int(m.Pipe) >= len(s.pipes) {
					return res, fmt.Errorf("scheduler: node %d: global done of pipeline %d outside the plan", node, m.Pipe)
				}
				if !s.pipes[m.Pipe].localDone {
					return res, fmt.Errorf("scheduler: node %d: pipeline %d reported done everywhere before it finished here", node, m.Pipe)
				}
				s.GlobalDone(m.Pipe)
				releaseOutputs(s, b)
			case MsgAllDone:
				if !s.Done() {
					return res, fmt.Errorf("scheduler: node %d: the coordinator ended the run with %d of %d pipelines not done here", node, len(s.pipes)-s.global, len(s.pipes))
				}
			case MsgFail:
				if m.Err == nil {
					return res, fmt.Errorf("scheduler: node %d: the cluster failed", node)
				}
				return res, m.Err
			default:
				return res, fmt.Errorf("scheduler: node %d: unknown cluster message kind %d", node, m.Kind)
			}
		case <-ctx.Done():
			return res, ctx.Err()
		}
	}
	finish(&res, s)
	return res, nil
}

// settleNode reports s's deliveries to other nodes, then its newly finished
// pipelines (in that order: see NodeNet).
func settleNode(s *Scheduler, net NodeNet) error {
	for _, d := range s.remote {
		if err := net.Deliver(PipeDelivery{Node: d.node, Pipe: d.pipe, Dev: d.dev, Bytes: d.bytes, Rows: d.rows}); err != nil {
			return err
		}
	}
	s.remote = s.remote[:0]
	for _, f := range s.Finished() {
		if err := net.Finished(f); err != nil {
			return err
		}
	}
	return nil
}

// waitsForCluster reports whether a pipeline has finished on this node but
// not yet everywhere: its MsgGlobalDone may release memory or dependents.
func waitsForCluster(s *Scheduler) bool {
	for i := range s.pipes {
		if s.pipes[i].localDone && !s.pipes[i].globalDone {
			return true
		}
	}
	return false
}

// record adds a completion to res and to sink (Run and RunNode).
func record(res *Result, sink TraceSink, c *Completion) {
	t := c.Task
	res.Tasks++
	res.ByKind[t.Kind]++
	res.BytesByKind[t.Kind] += t.Bytes
	res.Makespan = max(res.Makespan, c.End)
	if sink != nil {
		rows := t.Rows
		if t.Kind == TaskKernel || t.Kind == TaskMerge {
			rows = c.OutRows
		}
		sink.Record(Event{Task: t.ID, Kind: t.Kind, Res: t.Res, Node: t.Node, Device: t.Device,
			Pipeline: t.Pipeline, Unit: t.Unit, Table: t.Table, Chunk: t.Chunk, OpKind: t.OpKind, Meta: t.Meta,
			Start: c.Start, End: c.End, Bytes: t.Bytes, Rows: rows})
	}
}

// finish adds a node's peaks and result to res.
func finish(res *Result, s *Scheduler) {
	res.PeakPinned = max(res.PeakPinned, s.PeakPinned())
	res.PeakDevice = max(res.PeakDevice, s.PeakDevice())
	r, by := s.Result()
	res.ResultRows += r
	res.ResultBytes += by
}
