package scheduler

import "gostachio/plan"

// KnobHooks is the default implementation of every hook: the decisions the
// knobs of a Config describe (chunking and balance, per-stage depth with
// adaptive regulation and the unit window, multi-path reads, the paired
// NIC, stage and deferred syncs, dynamic buffers, message coalescing).
// serial, double-buffer, pipeline and overlap are KnobHooks under their
// own knob defaults. A policy embeds KnobHooks and overrides the hooks it
// decides itself; the embedded hooks keep following the knobs.
type KnobHooks struct {
	cfg *Config
	// limit is each device's in-flight limit per stage: Depth, or under
	// adaptive regulation a value in [1, Depth] that Passed and Queued
	// move.
	limit [][NumStages]int32
	// ssdBytes is the bytes of reads placed on each SSD (multi-path).
	ssdBytes []int64
}

var _ Hooks = (*KnobHooks)(nil)

// defaultOrder is the stage order of a pass: drain before filling, so
// that a unit near its end frees its memory before a new one takes some.
var defaultOrder = [...]Stage{StageOut, StageKernel, StageH2D, StageRead}

// Init sizes the per-device limits and the SSD counters.
func (h *KnobHooks) Init(v *View) {
	h.cfg = v.Config()
	h.limit = make([][NumStages]int32, v.Devices())
	for d := range h.limit {
		for st := range h.limit[d] {
			h.limit[d][st] = int32(h.cfg.Depth)
			if h.cfg.Adaptive {
				h.limit[d][st] = 1
			}
		}
	}
	h.ssdBytes = make([]int64, v.Topology().SSDs)
}

// Limit is device d's in-flight limit of stage st now.
func (h *KnobHooks) Limit(d int, st Stage) int { return int(h.limit[d][st]) }

// UnitBytes is Chunk, shrunk under MinUnits so that every worker gets at
// least MinUnits units of the scan: a small scan would otherwise make
// fewer units than workers, or leave the last worker running alone.
func (h *KnobHooks) UnitBytes(v *View, p int) int64 {
	limit := h.cfg.Chunk
	if h.cfg.MinUnits > 0 && limit > 0 {
		total := v.ScanBytes(p)
		limit = min(limit, max(1, total/int64(v.Workers()*h.cfg.MinUnits)))
	}
	return limit
}

// Deal is round robin over all workers.
func (h *KnobHooks) Deal(v *View, p, i int) int { return i % v.Workers() }

// Admit lets a stage hold at most its limit of units in flight plus
// queued behind it (back-pressure: a stage stops when its consumer lags),
// the out stage its limit in flight, and reads start only while the
// device has fewer than Window units in flight.
func (h *KnobHooks) Admit(v *View, d int, st Stage, u UnitInfo) bool {
	return h.admit(v, d, st)
}

func (h *KnobHooks) admit(v *View, d int, st Stage) bool {
	n := v.InFlight(d, st)
	if st != StageOut {
		n += v.Waiting(d, st+1)
	}
	if n >= int(h.limit[d][st]) {
		return false
	}
	return st != StageRead || h.cfg.Window == 0 || v.Window(d) < h.cfg.Window
}

// Order serves out, kernel, h2d, read.
func (h *KnobHooks) Order(v *View, d int) []Stage { return defaultOrder[:] }

// Priority is 0 for every pipeline: units queue in order of arrival.
func (h *KnobHooks) Priority(v *View, p int) int { return 0 }

// SSD is, with multi-path, the SSD with the fewest bytes placed so far
// (ties: the lowest index), so reads of uneven sizes still balance; else
// the device's paired SSD.
func (h *KnobHooks) SSD(v *View, d int, bytes int64) int {
	if h.cfg.Multipath {
		best := 0
		for i := 1; i < len(h.ssdBytes); i++ {
			if h.ssdBytes[i] < h.ssdBytes[best] {
				best = i
			}
		}
		h.ssdBytes[best] += bytes
		return best
	}
	return max(d, 0) % len(h.ssdBytes)
}

// NIC is the device's paired NIC.
func (h *KnobHooks) NIC(v *View, d int) int { return max(d, 0) % v.Topology().NICs }

// Sync is StageSync's sync after every stage, or without Defer a sync
// after every kernel whose per-unit output size depends on the data (the
// host must learn it to size what follows).
func (h *KnobHooks) Sync(v *View, p int, st Stage) bool {
	if h.cfg.StageSync {
		return true
	}
	if st != StageKernel || h.cfg.Defer {
		return false
	}
	pi := &v.s.pipes[p]
	return pi.dataDep && pi.perUnitOut
}

// FlushSync is Defer's one sync per device at the end of a pipeline whose
// units' output sizes depend on the data.
func (h *KnobHooks) FlushSync(v *View, p int) bool {
	ps := &v.s.pipes[p]
	return h.cfg.Defer && ps.dataDep && ps.perUnitOut
}

// Buffer is the unit's own size under DynBuf, else the fixed slot.
func (h *KnobHooks) Buffer(v *View, st Stage, u UnitInfo, slot int64) int64 {
	if h.cfg.DynBuf {
		if st == StageRead {
			return u.ReadBytes
		}
		return u.Bytes
	}
	return slot
}

// MsgBytes is Msg for shuffles and gathers (broadcasts send a unit's whole
// output to everyone: already one large message).
func (h *KnobHooks) MsgBytes(v *View, p int) int64 {
	if k := v.s.pipes[p].sink; k == plan.OpShuffle || k == plan.OpGather {
		return h.cfg.Msg
	}
	return 0
}

// Completed learns nothing: the knobs do not change with the run.
func (h *KnobHooks) Completed(v *View, c *Completion) {}

// Queued, under adaptive regulation, lets a producer whose consumer is
// backed up (more queued than the consumer's limit) run one task fewer.
func (h *KnobHooks) Queued(v *View, d int, st Stage) {
	if h.cfg.Adaptive && st+1 < NumStages && v.Waiting(d, st+1) > int(h.limit[d][st+1]) && h.limit[d][st] > 1 {
		h.limit[d][st]--
	}
}

// Passed, under adaptive regulation, lets the producer of a consumer
// stage that has room but nothing queued (it starves) run one more task
// at a time, up to Depth.
func (h *KnobHooks) Passed(v *View, d int) bool {
	if !h.cfg.Adaptive {
		return false
	}
	grew := false
	lim := &h.limit[d]
	for st := StageH2D; st < NumStages; st++ {
		after := 0
		if st != StageOut {
			after = v.Waiting(d, st+1)
		}
		if v.Waiting(d, st) == 0 && v.InFlight(d, st)+after < int(lim[st]) &&
			producerBusy(v, d, st-1) && lim[st-1] < int32(h.cfg.Depth) {
			lim[st-1]++
			grew = true
		}
	}
	return grew
}

// producerBusy: stage st of device d has work it could take on.
func producerBusy(v *View, d int, st Stage) bool {
	if st == StageRead {
		return v.Waiting(d, StageRead) > 0
	}
	return v.Waiting(d, st) > 0 || v.InFlight(d, st) > 0
}
