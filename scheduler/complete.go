package scheduler

import (
	"fmt"

	"gostachio/plan"
)

// Complete feeds back a completion of a task this scheduler created. It
// frees what the task held, records what execution reported, and creates
// the tasks that became possible (returned by the next Ready). A completion
// of an unknown, foreign or already completed task is an error. The
// policy's Completed hook sees every accepted completion last.
func (s *Scheduler) Complete(c Completion) error {
	if s.knob != nil {
		// KnobHooks learn nothing from completions.
		return s.complete(&c)
	}
	return s.completeHooked(c)
}

// completeHooked is Complete for hooks that are told of completions. They
// see a copy held by the scheduler: the address of c would escape through
// the interface and cost an allocation per task.
func (s *Scheduler) completeHooked(c Completion) error {
	s.last = c
	if err := s.complete(&s.last); err != nil {
		return err
	}
	s.hooks.Completed(&s.view, &s.last)
	return nil
}

func (s *Scheduler) complete(c *Completion) error {
	t := c.Task
	if t == nil || t.Node != s.node || int(t.ID) >= s.ntasks || s.Task(t.ID) != t {
		return s.fail(fmt.Errorf("scheduler: node %d: completion of a task it did not create", s.node))
	}
	if s.doneBits[t.ID>>6]&(1<<(t.ID&63)) != 0 {
		return s.fail(fmt.Errorf("scheduler: node %d: %s task %d completed twice", s.node, t.Kind, t.ID))
	}
	s.doneBits[t.ID>>6] |= 1 << (t.ID & 63)
	s.running--
	if s.knob == nil {
		s.observe(c)
	}
	if c.Err != nil {
		return s.fail(fmt.Errorf("scheduler: %s task %d (pipeline %d unit %d) failed: %w", t.Kind, t.ID, t.Pipeline, t.Unit, c.Err))
	}
	ps := &s.pipes[t.Pipeline]
	if t.Unit < 0 {
		return s.completePipeTask(ps, t, c)
	}
	u := &s.units[ps.unitFirst+t.Unit]
	if u.state != uStage || u.pend <= 0 && !(u.syncing && t.Kind == TaskSync) {
		return s.fail(fmt.Errorf("scheduler: node %d: unexpected completion of %s task %d", s.node, t.Kind, t.ID))
	}
	s.devs[u.dev].dirty = true
	switch t.Kind {
	case TaskSync:
		u.syncing = false
		s.advance(u)
		return nil
	case TaskRead:
		u.pend--
		if u.pend == 0 {
			if u.meta {
				s.issueReads(u)
			} else {
				s.endStage(u)
			}
		}
	case TaskH2D:
		read := u.pinned - u.outPinned
		s.freePinned(read)
		u.pinned = u.outPinned
		u.pend--
		s.endStage(u)
	case TaskKernel:
		s.freeDev(u.dev, u.devIn)
		u.devRes -= u.devIn
		u.devIn = 0
		s.kernelOutput(ps, u, c)
		u.pend--
		s.endStage(u)
	case TaskD2H:
		s.freePinned(u.outPinned)
		u.pinned -= u.outPinned
		u.outPinned = 0
		ps.resultRows += t.Rows
		ps.resultB += t.Bytes
		u.pend--
		s.endStage(u)
	case TaskSend:
		s.sendDone(ps, t)
		u.pend--
		if u.pend == 0 {
			s.endStage(u)
		}
	default:
		return s.fail(fmt.Errorf("scheduler: node %d: unexpected %s task %d of a unit", s.node, t.Kind, t.ID))
	}
	return nil
}

func (s *Scheduler) fail(err error) error {
	if s.err == nil {
		s.err = err
	}
	return err
}

// kernelOutput records a unit kernel's real output and settles the device
// reservation made from the estimate (an output above the estimate is
// charged anyway: the engine cannot take the bytes back).
func (s *Scheduler) kernelOutput(ps *pipe, u *unit, c *Completion) {
	pd := &ps.devs[u.dev]
	if ps.aggOp >= 0 {
		// Units may share groups: the state holds at most Groups rows (or
		// one unit's output, if a backend reports more).
		pd.stateRows += max(c.OutRows, 0)
		if ps.aggGroups > 0 {
			pd.stateRows = min(pd.stateRows, max(ps.aggGroups, c.OutRows))
		}
		return
	}
	real := c.OutBytes
	if real < 0 {
		real = 0
	}
	if real < u.out {
		s.freeDev(u.dev, u.out-real)
	} else if real > u.out {
		s.addDev(u.dev, real-u.out)
	}
	u.devRes += real - u.out
	u.out, u.outRows = real, c.OutRows
	if ps.accumulate {
		// The output now belongs to the pipeline's retained result.
		pd.outBytes += real
		pd.outRows += c.OutRows
		u.devRes -= real
		return
	}
	if ps.sink == plan.OpShuffle && c.PartBytes != nil && len(c.PartBytes) == s.workers() {
		u.partOff = int32(len(s.parts))
		s.parts = append(s.parts, c.PartBytes...)
	}
}

// sendDone hands a finished send's bytes to their destination: a device of
// this node (reserved when the send started) or another node (Run routes
// it to Deliver).
func (s *Scheduler) sendDone(ps *pipe, t *Task) {
	if t.Peer.Node == s.node {
		pd := &ps.devs[t.PeerDevice]
		pd.outBytes += t.Bytes
		pd.outRows += t.Rows
		return
	}
	s.remote = append(s.remote, delivery{node: t.Peer.Node, dev: t.PeerDevice, pipe: t.Pipeline, bytes: t.Bytes, rows: t.Rows})
}

// Deliver records exchange data of pipeline p from another node landing on
// device dev of this node. It is charged to the device unreserved.
func (s *Scheduler) Deliver(p, dev int32, bytes, rows int64) {
	pd := &s.pipes[p].devs[dev]
	pd.outBytes += bytes
	pd.outRows += rows
	s.addDev(dev, bytes)
}

// needSync reports whether the unit's stage ends with a host round trip
// (the policy's Sync hook).
func (s *Scheduler) needSync(ps *pipe, stage int8) bool {
	if s.knob != nil {
		return s.knob.Sync(&s.view, int(ps.idx), Stage(stage))
	}
	return s.hooks.Sync(&s.view, int(ps.idx), Stage(stage))
}

// endStage is called when the tasks of the unit's stage are done: it adds
// the stage's host sync when the policy wants one, else advances.
func (s *Scheduler) endStage(u *unit) {
	ps := &s.pipes[u.pipe]
	if s.needSync(ps, u.stage) {
		t := s.newTask(TaskSync, u.pipe, u.dev)
		t.Unit = u.seq
		t.OpKind = ps.unitOps[len(ps.unitOps)-1].Kind
		s.setDeps(t, u.depFirst, u.depN)
		u.depFirst, u.depN = t.ID, 1
		u.syncing = true
		return
	}
	s.advance(u)
}

// advance moves the unit past its finished stage.
func (s *Scheduler) advance(u *unit) {
	ps := &s.pipes[u.pipe]
	dv := &s.devs[u.dev]
	dv.inflight[u.stage]--
	st := int(u.stage)
	if st == stOut || st == stKernel && !ps.perUnitOut {
		s.unitDone(ps, u)
		return
	}
	u.state = uQueued
	s.enqueue(dv, st, ps.unitFirst+u.seq)
	if s.knob != nil {
		s.knob.Queued(&s.view, int(u.dev), Stage(st))
	} else {
		s.hooks.Queued(&s.view, int(u.dev), Stage(st))
	}
}

func (s *Scheduler) unitDone(ps *pipe, u *unit) {
	u.state = uDone
	dv := &s.devs[u.dev]
	if ps.p.Source.Kind == plan.SourceScan {
		dv.window--
	}
	s.freeDev(u.dev, u.devRes)
	s.freePinned(u.pinned)
	u.devRes, u.pinned, u.outPinned = 0, 0, 0
	dv.dirty = true
	ps.devs[u.dev].units--
}

// stepFlush advances the end of pipeline ps on device d (called when all
// its units there are done and no flush task is in flight). It returns
// whether it changed anything.
func (s *Scheduler) stepFlush(ps *pipe, d int32) bool {
	pd := &ps.devs[d]
	if pd.coal > 0 && pd.flush != flNone {
		// The pipeline ends on d only once its coalesced messages landed.
		return false
	}
	switch pd.flush {
	case flNone:
		pd.flush = flFinalize
		if pd.stage != nil {
			s.sendStaged(ps, d)
		}
		if ps.aggOp >= 0 {
			s.settleState(ps, d)
		}
		srcRows, srcBytes := pd.outRows, pd.outBytes
		if ps.aggOp >= 0 {
			srcRows, srcBytes = pd.stateRows, pd.stateBytes
		}
		if ps.aggOp >= 0 && ps.sink.IsExchange() && (srcRows > 0 || srcBytes > 0) {
			// The state's groups are emitted as rows and split by the
			// sink (hash partitions for a shuffle) in a kernel of their
			// own: that work occupies the device before any of the sends
			// can leave. The state keeps its reservation: the sends move it.
			t := s.newTask(TaskKernel, ps.idx, d)
			t.Ops, t.OpKind = ps.p.Ops[len(ps.p.Ops)-1:], ps.sink
			t.Rows, t.Bytes, t.EstRows, t.EstBytes = srcRows, srcBytes, srcRows, srcBytes
			pd.pend = 1
			return true
		}
		fin := ps.finalize || ps.aggOp >= 0 && !ps.sink.IsExchange() && ps.sink != plan.OpResult
		if fin && (srcRows > 0 || srcBytes > 0) {
			ops := ps.p.Ops[len(ps.p.Ops)-1:]
			rows, bytes := Estimate(ops, srcRows, srcBytes)
			if !s.reserveDev(d, bytes) {
				pd.flush = flNone
				return false
			}
			t := s.newTask(TaskKernel, ps.idx, d)
			t.Ops, t.OpKind = ops, ops[0].Kind
			t.Rows, t.Bytes, t.EstRows, t.EstBytes = srcRows, srcBytes, rows, bytes
			pd.pend = 1
			return true
		}
		return true
	case flFinalize:
		pd.flush = flOut
		if ps.aggOp >= 0 && (ps.sink.IsExchange() || ps.sink == plan.OpResult) && (pd.stateRows > 0 || pd.stateBytes > 0) {
			if ps.sink == plan.OpResult {
				if !s.reservePinned(d, pd.stateBytes) {
					pd.flush = flFinalize
					return false
				}
				t := s.newTask(TaskD2H, ps.idx, d)
				t.Bytes, t.Rows, t.OpKind = pd.stateBytes, pd.stateRows, ps.sink
				pd.pend = 1
				return true
			}
			if !s.reserveExchange(ps, d, pd.stateBytes, nil) {
				pd.flush = flFinalize
				return false
			}
			_, n := s.issueSends(ps, d, -1, pd.stateBytes, pd.stateRows, nil, 0, 0)
			pd.pend = n
			if n == 0 {
				s.releaseState(ps, d)
			}
			return true
		}
		if ps.aggOp >= 0 {
			s.releaseState(ps, d)
		}
		return true
	case flOut:
		pd.flush = flSync
		if pd.hadUnits && s.hooks.FlushSync(&s.view, int(ps.idx)) {
			t := s.newTask(TaskSync, ps.idx, d)
			t.OpKind = ps.sink
			pd.pend = 1
		}
		return true
	case flSync:
		pd.flush = flDone
		s.checkLocalDone(ps)
		return true
	}
	return false
}

// settleState resizes device d's partial aggregate state from its
// reservation (an estimate) to what its units reported: stateRows groups of
// the aggregate's width. The difference is freed or charged (a state larger
// than estimated already occupies the device). Without a known width the
// reservation stands as the size.
func (s *Scheduler) settleState(ps *pipe, d int32) {
	pd := &ps.devs[d]
	if ps.aggWidth <= 0 {
		return
	}
	real := pd.stateRows * ps.aggWidth
	switch {
	case real < pd.stateBytes:
		s.freeDev(d, pd.stateBytes-real)
	case real > pd.stateBytes:
		s.addDev(d, real-pd.stateBytes)
	}
	pd.stateBytes = real
}

func (s *Scheduler) releaseState(ps *pipe, d int32) {
	pd := &ps.devs[d]
	s.freeDev(d, pd.stateBytes)
	pd.stateBytes, pd.stateRows = 0, 0
}

// completePipeTask handles tasks that belong to a pipeline, not a unit:
// the table metadata read, flush tasks, the result merge.
func (s *Scheduler) completePipeTask(ps *pipe, t *Task, c *Completion) error {
	if t == ps.tableMeta {
		if ps.metaDone {
			return s.fail(fmt.Errorf("scheduler: node %d: metadata read %d completed twice", s.node, t.ID))
		}
		ps.metaDone = true
		for i := ps.unitFirst; i < ps.unitFirst+ps.unitN; i++ {
			u := &s.units[i]
			if u.waitsTableMeta {
				u.waitsTableMeta = false
				u.depFirst, u.depN = t.ID, 1
				s.issueReads(u)
				s.devs[u.dev].dirty = true
			}
		}
		return nil
	}
	if t.Kind == TaskMerge {
		if !ps.merge || ps.mergeDone {
			return s.fail(fmt.Errorf("scheduler: node %d: unexpected merge completion %d", s.node, t.ID))
		}
		ps.mergeDone = true
		s.finishLocal(ps)
		return nil
	}
	d := t.Device
	if t.Kind == TaskSend && ps.perUnitOut && d >= 0 && int(d) < len(s.devs) && ps.devs[d].coal > 0 {
		// A coalesced message: its bytes leave the source's buffers.
		pd := &ps.devs[d]
		pd.coal--
		pd.coalRes -= t.Bytes
		s.freeDev(d, t.Bytes)
		s.devs[d].dirty = true
		s.sendDone(ps, t)
		return nil
	}
	if d < 0 || int(d) >= len(s.devs) || ps.devs[d].pend <= 0 {
		return s.fail(fmt.Errorf("scheduler: node %d: unexpected completion of %s task %d", s.node, t.Kind, t.ID))
	}
	pd := &ps.devs[d]
	s.devs[d].dirty = true
	pd.pend--
	switch {
	case t.Kind == TaskKernel && ps.aggOp >= 0 && ps.sink.IsExchange():
		// The state is emitted; its sends follow (flOut).
	case t.Kind == TaskKernel: // finalize
		s.freeDev(d, t.EstBytes)
		real := max(c.OutBytes, 0)
		s.addDev(d, real)
		if ps.aggOp >= 0 {
			s.releaseState(ps, d)
			pd.outBytes, pd.outRows = real, c.OutRows
		} else {
			s.freeDev(d, pd.outBytes)
			pd.outBytes, pd.outRows = real, c.OutRows
		}
	case t.Kind == TaskD2H:
		s.freePinned(t.Bytes)
		ps.resultRows += t.Rows
		ps.resultB += t.Bytes
		s.releaseState(ps, d)
	case t.Kind == TaskSend:
		s.sendDone(ps, t)
		if pd.pend == 0 {
			s.releaseState(ps, d)
		}
	case t.Kind == TaskSync:
	default:
		return s.fail(fmt.Errorf("scheduler: node %d: unexpected %s task %d of pipeline %d", s.node, t.Kind, t.ID, t.Pipeline))
	}
	return nil
}

// checkLocalDone finishes the pipeline on the node once every device has
// flushed; a result pipeline first merges its parts on the host.
func (s *Scheduler) checkLocalDone(ps *pipe) {
	for d := range ps.devs {
		if ps.devs[d].flush != flDone {
			return
		}
	}
	if ps.sink == plan.OpResult && ps.resultRows+ps.resultB > 0 {
		ps.merge = true
		t := s.newTask(TaskMerge, ps.idx, -1)
		t.Ops, t.OpKind = ps.p.Ops[len(ps.p.Ops)-1:], plan.OpResult
		t.Rows, t.Bytes, t.EstRows, t.EstBytes = ps.resultRows, ps.resultB, ps.resultRows, ps.resultB
		return
	}
	s.finishLocal(ps)
}

func (s *Scheduler) finishLocal(ps *pipe) {
	ps.localDone = true
	for i, a := range s.active {
		if a == ps.idx {
			s.active = append(s.active[:i], s.active[i+1:]...)
			break
		}
	}
	s.finished = append(s.finished, ps.idx)
}

// GlobalDone tells the scheduler that pipeline p has finished on every
// node: pipelines waiting on it may start, and the outputs nobody reads any
// more are freed. Run calls it; a single-node driver calls it for each
// pipeline that Finished reports.
func (s *Scheduler) GlobalDone(p int32) {
	ps := &s.pipes[p]
	if ps.globalDone {
		return
	}
	ps.globalDone = true
	s.global++
	for _, in := range ps.inputs {
		ip := &s.pipes[in]
		ip.consumers--
		if ip.consumers == 0 {
			s.releaseOutput(ip)
		}
	}
	if ps.consumers == 0 {
		s.releaseOutput(ps)
	}
	for _, q := range ps.dependents {
		qp := &s.pipes[q]
		qp.waiting--
		if qp.waiting == 0 {
			s.activate(qp)
		}
	}
}

func (s *Scheduler) releaseOutput(ps *pipe) {
	for d := range ps.devs {
		s.freeDev(int32(d), ps.devs[d].outBytes)
		ps.devs[d].outBytes = 0
	}
	if !ps.released {
		ps.released = true
		s.releasedOut = append(s.releasedOut, ps.idx)
	}
}

// Released returns the pipelines whose retained output nobody reads any
// more since the last call (every consumer finished everywhere): a backend
// holding real data may drop it (see OutputReleaser). The slice is reused.
func (s *Scheduler) Released() []int32 {
	r := s.releasedOut
	s.releasedOut = s.releasedOut[:0]
	return r
}

// releaseOutputs tells b (if it holds data) which of s's pipeline outputs
// are no longer needed.
func releaseOutputs(s *Scheduler, b Backend) {
	rel := s.Released()
	if r, ok := b.(OutputReleaser); ok {
		for _, p := range rel {
			r.ReleaseOutput(s.node, p)
		}
	}
}

// Finished returns the pipelines that finished on this node since the last
// call (the slice is reused).
func (s *Scheduler) Finished() []int32 {
	f := s.finished
	s.finished = s.finished[:0]
	return f
}

// Result returns the rows and bytes the node's result pipelines produced.
func (s *Scheduler) Result() (rows, bytes int64) {
	for i := range s.pipes {
		if s.pipes[i].sink == plan.OpResult {
			rows += s.pipes[i].resultRows
			bytes += s.pipes[i].resultB
		}
	}
	return rows, bytes
}
