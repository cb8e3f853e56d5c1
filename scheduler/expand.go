package scheduler

import (
	"fmt"
	"math"
	"sort"

	"gostachio/plan"
)

// Estimate returns the estimated output rows and bytes of running ops over
// rows input rows of bytes input bytes: rows scale by each streaming op's
// Selectivity (an aggregate's output is capped by its Groups, a top-k's by
// its Limit); the row width becomes the last OutWidth set (the input's width
// before any). Scans, projections, builds, sorts and exchanges keep the row
// count. The simulator reports these figures as a kernel's real output.
func Estimate(ops []plan.Op, rows, bytes int64) (outRows, outBytes int64) {
	if rows <= 0 {
		return 0, 0
	}
	r := float64(rows)
	w := float64(bytes) / float64(rows)
	for i := range ops {
		op := &ops[i]
		switch op.Kind {
		case plan.OpFilter, plan.OpHashProbe:
			r *= op.Selectivity
		case plan.OpAggPartial, plan.OpAggFinal:
			if op.Selectivity > 0 {
				r *= op.Selectivity
			}
			if op.Groups > 0 && r > float64(op.Groups) {
				r = float64(op.Groups)
			}
		case plan.OpTopK:
			if op.Limit > 0 && r > float64(op.Limit) {
				r = float64(op.Limit)
			}
		}
		if op.OutWidth > 0 {
			w = float64(op.OutWidth)
		}
	}
	outRows = int64(math.Ceil(r))
	return outRows, int64(math.Ceil(float64(outRows) * w))
}

// foldEstimate is the estimated partial aggregation state of one device
// whose units' estimated aggregate outputs total rows rows / bytes bytes
// (each unit's from Estimate, so already capped by the rows that unit
// aggregates): at most agg.Groups rows, since a device holds no more
// groups than rows it aggregated nor more than exist, each agg.OutWidth
// bytes (without a width, the units' bytes scaled to the capped rows).
func foldEstimate(agg *plan.Op, rows, bytes int64) (stRows, stBytes int64) {
	if rows <= 0 {
		return 0, 0
	}
	stRows = rows
	if agg.Groups > 0 && stRows > agg.Groups {
		stRows = agg.Groups
	}
	if agg.OutWidth > 0 {
		return stRows, stRows * int64(agg.OutWidth)
	}
	return stRows, int64(math.Ceil(float64(bytes) * float64(stRows) / float64(rows)))
}

// rangeGroups estimates the groups a partial aggregate finds in chunks
// [first, first+n) of t when it groups on one stored integer column with
// min/max statistics: agg.Groups times the share of the column's value
// range that the chunks span,
//
//	g = ⌈Groups · Σ_c (max_c − min_c + 1) / (max − min + 1)⌉
//
// (capped by Groups). Rows stored in key order (lineitem by l_orderkey)
// give narrow chunk ranges and few groups per unit — the groups a device
// holds, and so what its partial state ships, are a fraction of Groups;
// unordered rows span the whole range and keep the cap. ok is false when
// the key is not such a column or a chunk lacks statistics.
func rangeGroups(t *plan.TableStats, agg *plan.Op, first, n int) (g int64, ok bool) {
	kr, ok := aggKeyRange(t, agg)
	if !ok {
		return 0, false
	}
	return kr.groups(t, first, n), true
}

// keyRange is a partial aggregate's key column in its table and the
// column's range over all chunks (aggKeyRange).
type keyRange struct {
	col     int
	lo, hi  int64
	groups0 int64
}

// aggKeyRange finds agg's single stored integer key with statistics in
// every chunk of t (ok false otherwise): computed once per pipeline.
func aggKeyRange(t *plan.TableStats, agg *plan.Op) (keyRange, bool) {
	if agg.Groups <= 0 || len(agg.Keys) != 1 {
		return keyRange{}, false
	}
	c := t.Column(agg.Keys[0])
	if c < 0 {
		return keyRange{}, false
	}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for i := range t.Chunks {
		st := t.Chunks[i].Stats
		if c >= len(st) || !st[c].Valid {
			return keyRange{}, false
		}
		lo, hi = min(lo, st[c].Min), max(hi, st[c].Max)
	}
	return keyRange{col: c, lo: lo, hi: hi, groups0: agg.Groups}, true
}

// groups is rangeGroups' formula for chunks [first, first+n).
func (kr keyRange) groups(t *plan.TableStats, first, n int) int64 {
	c, lo, hi := kr.col, kr.lo, kr.hi
	var span float64
	for i := first; i < first+n; i++ {
		m := t.Chunks[i].Stats[c]
		span += float64(m.Max) - float64(m.Min) + 1
	}
	frac := min(1, span/(float64(hi)-float64(lo)+1))
	return int64(math.Ceil(float64(kr.groups0) * frac))
}

// forSpans calls fn for every read of the given columns (sorted) of chunk
// ch: one per column, or with combining one per run of columns whose
// unprojected gaps are at most gap bytes. first/n are the table columns the
// span covers; off/size its file range.
func forSpans(ch *plan.ChunkStats, cols []int, combine bool, gap int64, fn func(first, n int, off, size int64)) {
	if !combine {
		for _, c := range cols {
			fn(c, 1, ch.ColumnOffset(c), ch.Bytes[c])
		}
		return
	}
	i := 0
	for i < len(cols) {
		first := cols[i]
		start := ch.ColumnOffset(first)
		end := start + ch.Bytes[first]
		last := first
		j := i + 1
		for ; j < len(cols); j++ {
			off := ch.ColumnOffset(cols[j])
			if off < end || off-end > gap {
				break
			}
			end = off + ch.Bytes[cols[j]]
			last = cols[j]
		}
		fn(first, last-first+1, start, end-start)
		i = j
	}
}

// activate creates the node's units of pipeline ps.
func (s *Scheduler) activate(ps *pipe) {
	ps.active = true
	ps.unitFirst = int32(len(s.units))
	ps.prio = int32(s.hooks.Priority(&s.view, int(ps.idx)))
	ps.msg = max(0, s.hooks.MsgBytes(&s.view, int(ps.idx)))
	if ps.prio != 0 {
		s.prioMixed = true
	}
	pl := ps.p
	if pl.Source.Kind == plan.SourceScan {
		s.scanUnits(ps)
		if s.cfg.MetaCache && ps.unitN > 0 {
			t := s.newTask(TaskRead, ps.idx, -1)
			t.Meta = true
			t.Table = int32(pl.Source.Table)
			t.File = 0
			t.Bytes = s.cfg.MetaBytes
			t.Res = Resource{Kind: ResNVMe, Node: s.node, Index: s.ssd(-1, t.Bytes)}
			ps.tableMeta = t
		} else {
			ps.metaDone = true
		}
	} else {
		for d := range s.devs {
			var rows, bytes int64
			for _, in := range pl.Source.Inputs {
				rows += s.pipes[in].devs[d].outRows
				bytes += s.pipes[in].devs[d].outBytes
			}
			if rows == 0 && bytes == 0 {
				continue
			}
			u := s.newUnit(ps, int32(d))
			u.rows, u.bytes = rows, bytes
			u.outRows, u.out = Estimate(ps.unitOps, rows, bytes)
			u.stage, u.state = stH2D, uQueued
			s.enqueue(&s.devs[d], stH2D, int32(len(s.units)-1))
		}
	}
	if ps.aggOp >= 0 {
		// Each device reserves the state its own units can fill, not the
		// query's whole group count.
		rows := make([]int64, len(s.devs))
		bytes := make([]int64, len(s.devs))
		for i := ps.unitFirst; i < ps.unitFirst+ps.unitN; i++ {
			u := &s.units[i]
			rows[u.dev] += u.outRows
			bytes[u.dev] += u.out
		}
		agg := &pl.Ops[ps.aggOp]
		for d := range ps.devs {
			_, ps.devs[d].stateEst = foldEstimate(agg, rows[d], bytes[d])
		}
	}
	for d := range s.devs {
		if s.prioMixed {
			s.sortPending(&s.devs[d])
		}
		s.devs[d].dirty = true
	}
	s.active = append(s.active, ps.idx)
}

func (s *Scheduler) newUnit(ps *pipe, dev int32) *unit {
	s.units = append(s.units, unit{pipe: ps.idx, seq: ps.unitN, dev: dev, partOff: -1, chunk: -1})
	ps.unitN++
	ps.devs[dev].units++
	ps.devs[dev].hadUnits = true
	return &s.units[len(s.units)-1]
}

// scanUnits groups the surviving chunks into units of about Chunk projected
// bytes (runs of consecutive chunks of one placement; a unit also stops
// growing before its reads would pass half the pinned budget, so two
// always fit) and creates the units of this node's workers. Units of
// unplaced chunks are dealt round robin over all workers: the i-th such
// unit goes to worker i mod W. A unit of chunks placed on partition p
// goes to node p mod Nodes only, round robin over that node's devices
// (the node's i-th placed unit to device i mod Devices). Every node deals
// the same way, so each unit has exactly one owner.
func (s *Scheduler) scanUnits(ps *pipe) {
	t := &s.plan.Tables[ps.p.Source.Table]
	prune := ps.p.Ops[0].Prune
	W := s.workers()
	var kr keyRange
	hasRange := false
	if ps.aggOp >= 0 {
		kr, hasRange = aggKeyRange(t, &ps.p.Ops[ps.aggOp])
	}
	seq := 0       // unplaced units dealt so far
	placedSeq := 0 // placed units dealt to this node so far
	var cur struct {
		first, n         int
		place            int32
		rows, size, read int64
	}
	emit := func() {
		if cur.n == 0 {
			return
		}
		mine, dev := false, int32(0)
		if cur.place < 0 {
			w := s.hooks.Deal(&s.view, int(ps.idx), seq)
			if w < 0 || w >= W {
				s.fail(fmt.Errorf("scheduler: policy deals unit %d of pipeline %d to worker %d of %d", seq, ps.idx, w, W))
				w = seq % W
			}
			seq++
			mine, dev = w/s.topo.Devices == int(s.node), int32(w%s.topo.Devices)
		} else if int(cur.place)%s.topo.Nodes == int(s.node) {
			mine, dev = true, int32(placedSeq%s.topo.Devices)
			placedSeq++
		}
		if mine {
			u := s.newUnit(ps, dev)
			u.chunk, u.nchunks = int32(cur.first), int32(cur.n)
			u.rows, u.bytes, u.readBytes = cur.rows, cur.size, cur.read
			u.outRows, u.out = Estimate(ps.unitOps, u.rows, u.bytes)
			if hasRange {
				if g := kr.groups(t, cur.first, cur.n); g < u.outRows {
					u.out = int64(math.Ceil(float64(u.out) * float64(g) / float64(u.outRows)))
					u.outRows = g
				}
			}
			ps.slotRead = max(ps.slotRead, u.readBytes)
			ps.slotDev = max(ps.slotDev, u.bytes)
			s.devs[dev].pending = append(s.devs[dev].pending, int32(len(s.units)-1))
		}
		cur.n, cur.rows, cur.size, cur.read = 0, 0, 0, 0
	}
	limit := max(0, s.hooks.UnitBytes(&s.view, int(ps.idx)))
	for c := range t.Chunks {
		if !t.Survives(c, prune) {
			emit()
			continue
		}
		place := t.Chunks[c].Placement()
		var size, read int64
		for _, col := range ps.cols {
			size += t.Chunks[c].Bytes[col]
		}
		forSpans(&t.Chunks[c], ps.cols, s.cfg.Combine, s.cfg.CombineGap, func(_, _ int, _, n int64) { read += n })
		if cur.n > 0 && (place != cur.place || limit == 0 || cur.size+size > limit || cur.read+read > s.pinBud/2) {
			emit()
		}
		if cur.n == 0 {
			cur.first, cur.place = c, place
		}
		cur.n++
		cur.rows += t.Chunks[c].Rows
		cur.size += size
		cur.read += read
	}
	emit()
}

// ssd is the policy's SSD for a read of n bytes for device dev (-1: a
// node-wide metadata read). A choice outside the node's SSDs is an error of
// the run (Err); the read goes to the paired SSD.
func (s *Scheduler) ssd(dev int32, n int64) int32 {
	var i int
	if s.knob != nil {
		i = s.knob.SSD(&s.view, int(dev), n)
	} else {
		i = s.hooks.SSD(&s.view, int(dev), n)
	}
	if i < 0 || i >= s.topo.SSDs {
		s.fail(fmt.Errorf("scheduler: policy places a read of device %d on SSD %d of %d", dev, i, s.topo.SSDs))
		return max(dev, 0) % int32(s.topo.SSDs)
	}
	return int32(i)
}

// sendNIC is the policy's NIC for a send of device dev; like ssd, a
// choice outside the node's NICs is an error of the run.
func (s *Scheduler) sendNIC(dev int32) int32 {
	i := s.hooks.NIC(&s.view, int(dev))
	if i < 0 || i >= s.topo.NICs {
		s.fail(fmt.Errorf("scheduler: policy places a send of device %d on NIC %d of %d", dev, i, s.topo.NICs))
		return s.nic(dev)
	}
	return int32(i)
}

// enqueue appends unit ui to device queue q (units done with stage q,
// waiting for the next), before the units of pipelines of lower priority.
func (s *Scheduler) enqueue(dv *device, q int, ui int32) {
	dv.q[q] = append(dv.q[q], ui)
	if !s.prioMixed {
		return
	}
	a := dv.q[q]
	p := s.pipes[s.units[ui].pipe].prio
	for j := len(a) - 1; j > dv.qh[q] && s.pipes[s.units[a[j-1]].pipe].prio < p; j-- {
		a[j], a[j-1] = a[j-1], a[j]
	}
}

// sortPending puts device d's units not yet started in priority order
// (stable: order of arrival among equals).
func (s *Scheduler) sortPending(dv *device) {
	rest := dv.pending[dv.head:]
	sort.SliceStable(rest, func(i, j int) bool {
		return s.pipes[s.units[rest[i]].pipe].prio > s.pipes[s.units[rest[j]].pipe].prio
	})
}

func (s *Scheduler) nic(dev int32) int32 {
	if dev < 0 {
		dev = 0
	}
	return dev % int32(s.topo.NICs)
}
