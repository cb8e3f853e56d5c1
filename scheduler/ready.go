package scheduler

import (
	"math"

	"gostachio/plan"
)

// Ready returns the tasks to start now, in a deterministic order: tasks
// created by the last completions, then per device (ascending) flush steps,
// out, kernel, copy and read stages. The returned slice is reused: it is
// valid until the next call. now is informational (the decisions depend on
// the order of completions, not on time).
func (s *Scheduler) Ready(now Time) []*Task {
	_ = now
	for d := range s.devs {
		if s.devs[d].dirty {
			s.devs[d].dirty = false
			s.pump(int32(d))
		}
	}
	if len(s.ready) == 0 && s.running == 0 {
		// Nothing runs and nothing can start: coalescing buffers may hold
		// the memory the node waits for. Send them.
		for _, a := range s.active {
			ps := &s.pipes[a]
			for d := range ps.devs {
				if ps.devs[d].stage != nil {
					s.sendStaged(ps, int32(d))
				}
			}
		}
	}
	s.running += len(s.ready)
	if s.knob == nil {
		// The live state per resource; KnobHooks do not read it.
		for _, t := range s.ready {
			s.startedTask(t)
		}
	}
	s.out = append(s.out[:0], s.ready...)
	s.ready = s.ready[:0]
	return s.out
}

// pump starts everything device d can start: the ends of pipelines, then
// each stage in the policy's Order, each as far as the policy's Admit and
// the memory allow, until a pass starts nothing; then the policy's Passed.
func (s *Scheduler) pump(d int32) {
	dv := &s.devs[d]
	v := &s.view
	for {
		progress := false
		for i := 0; i < len(s.active); i++ {
			ps := &s.pipes[s.active[i]]
			pd := &ps.devs[d]
			if pd.units == 0 && pd.flush != flDone && pd.pend == 0 && s.stepFlush(ps, d) {
				progress = true
			}
		}
		if s.knob != nil {
			if s.serveKnobs(dv, d) {
				progress = true
			}
		} else {
			for _, st := range s.hooks.Order(v, int(d)) {
				if s.serve(dv, d, st) {
					progress = true
				}
			}
		}
		if !progress {
			break
		}
	}
	var again bool
	if s.knob != nil {
		again = s.knob.Passed(v, int(d))
	} else {
		again = s.hooks.Passed(v, int(d))
	}
	if again {
		dv.dirty = true
	}
}

// serve starts the units of device d that wait for stage st, in queue
// order, while the policy admits them and their memory fits. It returns
// whether it started any.
func (s *Scheduler) serve(dv *device, d int32, st Stage) bool {
	started := false
	v := &s.view
	for {
		var ui int32
		if st == StageRead {
			if dv.head == len(dv.pending) {
				return started
			}
			ui = dv.pending[dv.head]
		} else {
			q := int(st) - 1
			if q < 0 || q >= len(dv.q) || dv.qlen(q) == 0 {
				return started
			}
			ui = dv.q[q][dv.qh[q]]
		}
		u := &s.units[ui]
		if !s.hooks.Admit(v, int(d), st, u.info()) {
			return started
		}
		var ok bool
		switch st {
		case StageRead:
			ok = s.startRead(u)
		case StageH2D:
			ok = s.startH2D(u)
		case StageKernel:
			ok = s.startKernel(u)
		default:
			ok = s.startOut(u)
		}
		if !ok {
			return started
		}
		if st == StageRead {
			dv.head++
		} else {
			dv.pop(int(st) - 1)
		}
		started = true
	}
}

// serveKnobs is serve under KnobHooks: their Order (out, kernel, h2d,
// read) and their Admit (the limits they keep, the window) read directly,
// without a dynamic call per unit. KnobHooks.Admit is the same rule.
func (s *Scheduler) serveKnobs(dv *device, d int32) bool {
	lim, window, started := &s.knob.limit[d], int32(s.cfg.Window), false
	for dv.qlen(stKernel) > 0 && dv.inflight[stOut] < lim[stOut] {
		if !s.startOut(&s.units[dv.q[stKernel][dv.qh[stKernel]]]) {
			break
		}
		dv.pop(stKernel)
		started = true
	}
	for dv.qlen(stH2D) > 0 && dv.inflight[stKernel]+int32(dv.qlen(stKernel)) < lim[stKernel] {
		if !s.startKernel(&s.units[dv.q[stH2D][dv.qh[stH2D]]]) {
			break
		}
		dv.pop(stH2D)
		started = true
	}
	for dv.qlen(stRead) > 0 && dv.inflight[stH2D]+int32(dv.qlen(stH2D)) < lim[stH2D] {
		if !s.startH2D(&s.units[dv.q[stRead][dv.qh[stRead]]]) {
			break
		}
		dv.pop(stRead)
		started = true
	}
	for dv.head < len(dv.pending) && dv.inflight[stRead]+int32(dv.qlen(stRead)) < lim[stRead] &&
		(window == 0 || dv.window < window) {
		if !s.startRead(&s.units[dv.pending[dv.head]]) {
			break
		}
		dv.head++
		started = true
	}
	return started
}

// info is what the policy sees of u.
func (u *unit) info() UnitInfo {
	return UnitInfo{Pipeline: int(u.pipe), Seq: int(u.seq), Bytes: u.bytes, ReadBytes: u.readBytes, Out: u.out, Rows: u.rows}
}

// startRead reserves the unit's pinned buffers and issues its reads.
func (s *Scheduler) startRead(u *unit) bool {
	ps := &s.pipes[u.pipe]
	need := s.hooks.Buffer(&s.view, StageRead, u.info(), ps.slotRead)
	var staging int64
	if ps.sink == plan.OpResult && ps.perUnitOut {
		staging = u.out
	}
	if !s.reservePinned(u.dev, need+staging) {
		return false
	}
	u.pinned, u.outPinned = need+staging, staging
	dv := &s.devs[u.dev]
	dv.window++
	dv.inflight[stRead]++
	u.stage, u.state = stRead, uStage
	switch {
	case !s.cfg.MetaCache:
		t := &s.plan.Tables[ps.p.Source.Table]
		u.meta = true
		u.pend = u.nchunks
		for c := u.chunk; c < u.chunk+u.nchunks; c++ {
			r := s.newTask(TaskRead, u.pipe, u.dev)
			if c == u.chunk {
				u.depFirst, u.depN = r.ID, u.nchunks
			}
			r.Meta, r.Unit, r.Table, r.Chunk, r.Chunks = true, u.seq, int32(ps.p.Source.Table), c, 1
			r.File, r.Offset, r.Bytes = t.Chunks[c].File, t.Chunks[c].Base, s.cfg.MetaBytes
			r.Res = Resource{Kind: ResNVMe, Node: s.node, Index: s.ssd(u.dev, r.Bytes)}
		}
	case !ps.metaDone:
		u.waitsTableMeta = true
	default:
		u.depFirst, u.depN = 0, 0
		if ps.tableMeta != nil {
			u.depFirst, u.depN = ps.tableMeta.ID, 1
		}
		s.issueReads(u)
	}
	return true
}

// issueReads creates the unit's data reads, depending on u's deps range.
func (s *Scheduler) issueReads(u *unit) {
	ps := &s.pipes[u.pipe]
	tbl := int32(ps.p.Source.Table)
	t := &s.plan.Tables[tbl]
	depFirst, depN := u.depFirst, u.depN
	n := int32(0)
	var first TaskID
	for c := u.chunk; c < u.chunk+u.nchunks; c++ {
		ch := &t.Chunks[c]
		forSpans(ch, ps.cols, s.cfg.Combine, s.cfg.CombineGap, func(col, ncol int, off, size int64) {
			r := s.newTask(TaskRead, u.pipe, u.dev)
			if n == 0 {
				first = r.ID
			}
			n++
			r.Unit, r.Table, r.Chunk, r.Chunks = u.seq, tbl, c, 1
			r.File, r.Offset, r.Column, r.Columns, r.Bytes, r.Rows = ch.File, off, int32(col), int32(ncol), size, ch.Rows
			r.Res = Resource{Kind: ResNVMe, Node: s.node, Index: s.ssd(u.dev, size)}
			if !s.cfg.MetaCache {
				s.setDeps(r, depFirst+TaskID(c-u.chunk), 1)
			} else {
				s.setDeps(r, depFirst, depN)
			}
		})
	}
	u.meta = false
	u.pend = n
	u.depFirst, u.depN = first, n
	if n == 0 {
		s.endStage(u)
	}
}

// startH2D reserves the unit's device footprint (input, output, and the
// device's aggregate state on first use) and copies it in.
func (s *Scheduler) startH2D(u *unit) bool {
	ps := &s.pipes[u.pipe]
	pd := &ps.devs[u.dev]
	in := s.hooks.Buffer(&s.view, StageH2D, u.info(), ps.slotDev)
	need := in + u.out
	var state int64
	if ps.aggOp >= 0 {
		// The unit folds into the device's state, reserved once.
		need = in
		if !pd.stateSet {
			state = pd.stateEst
			need += state
		}
	}
	if !s.reserveDev(u.dev, need) {
		return false
	}
	if ps.aggOp >= 0 {
		u.devRes = in
		u.devIn = in
		if !pd.stateSet {
			pd.stateSet, pd.stateBytes = true, state
		}
	} else {
		u.devRes = need
		u.devIn = in
	}
	dv := &s.devs[u.dev]
	dv.inflight[stH2D]++
	u.stage, u.state = stH2D, uStage
	t := s.newTask(TaskH2D, u.pipe, u.dev)
	t.Unit, t.Table, t.Chunk, t.Chunks = u.seq, int32(ps.p.Source.Table), u.chunk, u.nchunks
	t.Bytes, t.Rows = u.bytes, u.rows
	s.setDeps(t, u.depFirst, u.depN)
	u.depFirst, u.depN, u.pend = t.ID, 1, 1
	return true
}

// startKernel runs the unit's operators. Scan units reserved their device
// memory at the copy; inputs units reserve their output here.
func (s *Scheduler) startKernel(u *unit) bool {
	ps := &s.pipes[u.pipe]
	if ps.p.Source.Kind != plan.SourceScan {
		need := u.out
		if ps.aggOp >= 0 {
			need = 0
			if !ps.devs[u.dev].stateSet {
				need = ps.devs[u.dev].stateEst
			}
		}
		if !s.reserveDev(u.dev, need) {
			return false
		}
		if ps.aggOp >= 0 {
			if !ps.devs[u.dev].stateSet {
				ps.devs[u.dev].stateSet, ps.devs[u.dev].stateBytes = true, need
			}
		} else {
			u.devRes = need
		}
	}
	dv := &s.devs[u.dev]
	dv.inflight[stKernel]++
	u.stage, u.state = stKernel, uStage
	t := s.newTask(TaskKernel, u.pipe, u.dev)
	t.Unit, t.Chunk, t.Chunks = u.seq, u.chunk, u.nchunks
	if ps.p.Source.Kind == plan.SourceScan {
		t.Table = int32(ps.p.Source.Table)
	}
	t.Ops = ps.unitOps
	t.OpKind = ps.unitOps[len(ps.unitOps)-1].Kind
	t.Bytes, t.Rows = u.bytes, u.rows
	t.EstRows, t.EstBytes = u.outRows, u.out
	if ps.perUnitOut && ps.sink == plan.OpShuffle {
		t.Parts = int32(s.workers())
	}
	s.setDeps(t, u.depFirst, u.depN)
	u.depFirst, u.depN, u.pend = t.ID, 1, 1
	return true
}

// startOut moves a unit's output: d2h for a result, sends for an exchange.
func (s *Scheduler) startOut(u *unit) bool {
	ps := &s.pipes[u.pipe]
	if ps.sink == plan.OpResult {
		if u.outPinned == 0 && u.out > 0 {
			// Inputs units reserve their staging now.
			if !s.reservePinned(u.dev, u.out) {
				return false
			}
			u.pinned += u.out
			u.outPinned = u.out
		}
	} else {
		var parts []int64
		if u.partOff >= 0 {
			parts = s.parts[u.partOff : int(u.partOff)+s.workers()]
		}
		if !s.reserveExchange(ps, u.dev, u.out, parts) {
			return false
		}
	}
	dv := &s.devs[u.dev]
	dv.inflight[stOut]++
	u.stage, u.state = stOut, uStage
	depFirst, depN := u.depFirst, u.depN
	if ps.sink == plan.OpResult {
		if u.out == 0 {
			u.pend = 0
			s.endStage(u)
			return true
		}
		t := s.newTask(TaskD2H, u.pipe, u.dev)
		t.Unit, t.Bytes, t.Rows = u.seq, u.out, u.outRows
		s.setDeps(t, depFirst, depN)
		u.depFirst, u.depN, u.pend = t.ID, 1, 1
		return true
	}
	var parts []int64
	if u.partOff >= 0 {
		parts = s.parts[u.partOff : int(u.partOff)+s.workers()]
	}
	if ps.msg > 0 && (ps.sink == plan.OpShuffle || ps.sink == plan.OpGather) {
		s.stageOut(ps, u, parts)
		u.pend = 0
		s.endStage(u)
		return true
	}
	first, n := s.issueSends(ps, u.dev, u.seq, u.out, u.outRows, parts, depFirst, depN)
	u.depFirst, u.depN, u.pend = first, n, n
	if n == 0 {
		s.endStage(u)
	}
	return true
}

// exchangeShare returns the bytes and rows of an exchange output of bytes /
// rows that go to worker w (shuffle: its partition, or an even split;
// broadcast: all; gather: all to worker 0).
func (s *Scheduler) exchangeShare(sink plan.OpKind, w int, bytes, rows int64, parts []int64) (int64, int64) {
	W := int64(s.workers())
	switch sink {
	case plan.OpBroadcast:
		return bytes, rows
	case plan.OpGather:
		if w == 0 {
			return bytes, rows
		}
		return 0, 0
	}
	var b int64
	if parts != nil {
		b = parts[w]
	} else {
		b = bytes / W
		if int64(w) < bytes%W {
			b++
		}
	}
	r := rows / W
	if int64(w) < rows%W {
		r++
	}
	if parts != nil && bytes > 0 {
		r = int64(math.Round(float64(rows) * float64(b) / float64(bytes)))
	}
	return b, r
}

// reserveExchange reserves, on this node's devices, the bytes an exchange
// output of device src leaves there (its own share included), all or
// nothing. The source buffer stays reserved by its owner until every send
// has completed.
func (s *Scheduler) reserveExchange(ps *pipe, src int32, bytes int64, parts []int64) bool {
	D := s.topo.Devices
	base := int(s.node) * D
	for w := base; w < base+D; w++ {
		b, _ := s.exchangeShare(ps.sink, w, bytes, 0, parts)
		if s.devs[w-base].used+b > s.devBud {
			return false
		}
	}
	for w := base; w < base+D; w++ {
		b, _ := s.exchangeShare(ps.sink, w, bytes, 0, parts)
		s.reserveDev(int32(w-base), b)
	}
	return true
}

// issueSends creates the sends of an exchange output of device src and
// keeps the local share on src. unitSeq is -1 for a flush. It returns the
// range of send tasks.
func (s *Scheduler) issueSends(ps *pipe, src, unitSeq int32, bytes, rows int64, parts []int64, depFirst TaskID, depN int32) (TaskID, int32) {
	self := s.worker(src)
	var first TaskID
	n := int32(0)
	W := s.workers()
	for k := 1; k <= W; k++ {
		// Start with the next worker after self so that workers do not all
		// send to worker 0 first.
		w := (self + k) % W
		b, r := s.exchangeShare(ps.sink, w, bytes, rows, parts)
		if w == self {
			pd := &ps.devs[src]
			pd.outBytes += b
			pd.outRows += r
			continue
		}
		if b == 0 && r == 0 {
			continue
		}
		dn, dd := int32(w/s.topo.Devices), int32(w%s.topo.Devices)
		t := s.newTask(TaskSend, ps.idx, src)
		if n == 0 {
			first = t.ID
		}
		n++
		t.Unit, t.Bytes, t.Rows, t.PeerDevice = unitSeq, b, r, dd
		t.OpKind = ps.sink
		t.Res = Resource{Kind: ResNICOut, Node: s.node, Index: s.sendNIC(src)}
		t.Peer = Resource{Kind: ResNICIn, Node: dn, Index: s.nic(dd)}
		t.Tag = uint64(uint32(s.node))<<32 | uint64(uint32(t.ID))
		s.setDeps(t, depFirst, depN)
	}
	return first, n
}

// stageOut appends a unit's exchange output to its device's per-destination
// buffers (message coalescing) and sends every buffer that reached
// Config.Msg bytes. The local share is kept at once, as issueSends does; the
// unit's output reservation moves to the buffers, which hold it until their
// message completes.
func (s *Scheduler) stageOut(ps *pipe, u *unit, parts []int64) {
	pd := &ps.devs[u.dev]
	W := s.workers()
	if pd.stage == nil {
		pd.stage = make([]int64, W)
		pd.stageRows = make([]int64, W)
	}
	self := s.worker(u.dev)
	var remote int64
	for w := 0; w < W; w++ {
		b, r := s.exchangeShare(ps.sink, w, u.out, u.outRows, parts)
		if w == self {
			pd.outBytes += b
			pd.outRows += r
			continue
		}
		remote += b
		pd.stage[w] += b
		pd.stageRows[w] += r
	}
	// The self share is reserved by reserveExchange on its own; the rest of
	// the unit's buffer is now the staging buffers'.
	if d := u.out - remote; d > 0 {
		s.freeDev(u.dev, d)
	} else if d < 0 {
		s.addDev(u.dev, -d)
	}
	u.devRes -= u.out
	pd.coalRes += remote
	for k := 1; k <= W; k++ {
		w := (self + k) % W
		if w != self && pd.stage[w] >= ps.msg {
			s.sendBuffer(ps, u.dev, w, u.depFirst, u.depN)
		}
	}
}

// sendStaged sends every non-empty coalescing buffer of pipeline ps on
// device d (the pipeline's end, or a node that would otherwise stall).
func (s *Scheduler) sendStaged(ps *pipe, d int32) {
	pd := &ps.devs[d]
	self := s.worker(d)
	W := s.workers()
	for k := 1; k < W; k++ {
		if w := (self + k) % W; pd.stage[w] > 0 || pd.stageRows[w] > 0 {
			s.sendBuffer(ps, d, w, 0, 0)
		}
	}
}

// sendBuffer sends device d's coalescing buffer for worker w as one
// message (a pipeline task: Unit -1).
func (s *Scheduler) sendBuffer(ps *pipe, d int32, w int, depFirst TaskID, depN int32) {
	pd := &ps.devs[d]
	dn, dd := int32(w/s.topo.Devices), int32(w%s.topo.Devices)
	t := s.newTask(TaskSend, ps.idx, d)
	t.Bytes, t.Rows, t.PeerDevice = pd.stage[w], pd.stageRows[w], dd
	t.OpKind = ps.sink
	t.Res = Resource{Kind: ResNICOut, Node: s.node, Index: s.sendNIC(d)}
	t.Peer = Resource{Kind: ResNICIn, Node: dn, Index: s.nic(dd)}
	t.Tag = uint64(uint32(s.node))<<32 | uint64(uint32(t.ID))
	s.setDeps(t, depFirst, depN)
	pd.stage[w], pd.stageRows[w] = 0, 0
	pd.coal++
}
