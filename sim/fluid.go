package sim

import (
	"errors"
	"math"
	"math/rand/v2"

	"gostachio/costmodel"
)

// maxFlowLinks is the most links one flow crosses (a cross-node GPUDirect
// send: sender D2H, NIC out, switch up, switch down, NIC in, receiver H2D,
// and the two hosts whose cores run its network stack).
const maxFlowLinks = 8

// LinkID names a link of a Net.
type LinkID int32

// FlowID names a flow slot of a Net; slots are reused after completion.
type FlowID int32

// link is a shared resource with a capacity in units per ns: bytes/ns for
// bandwidth links, busy-ns per ns (cores) for compute. A storage link's
// capacity follows its queue-depth curve: B(q) with q the outstanding
// requests of its active flows (costmodel.Storage).
type link struct {
	// hot in re-sharing: keep within the first cache line
	flows    []int32 // active flows (swap-remove via flow.pos)
	mark     uint32
	unfrozen int32
	weight   float64 // Σ weights of the unfrozen flows (solve scratch)
	residual float64
	capacity float64 // current capacity, units/ns
	dirty    bool

	peak    float64            // the most it can reach (bound)
	storage *costmodel.Storage // non-nil: capacity = storage.BandwidthAt(qd)
	qd      int                // outstanding requests of active flows
	shared  *sharedCores       // non-nil: capacity falls with oversubscription
	jobs    int                // active flows without weights (a shared-cores link's kernels)
	wflows  int                // active flows with weights (FlowSpec.Weights)
	// alone, if set (AddPortLink), is the capacity while one flow alone
	// crosses the link, portShared while more do.
	alone, portShared float64
	// batch: a storage link that completes its flows in batches
	// (costmodel.Storage.Batched): a flow whose bytes are in is held until
	// no flow is active on the link or in its latency phase bound for it
	// (arriving: counted from Start to activation).
	batch    bool
	arriving int32
	held     []int32

	// slowedBy: links whose throughput slows this one (Net.SlowBy), at
	// steal per unit of their throughput; slows: the links this one's
	// throughput slows, and that throughput (units/ns) at its last solve.
	slowedBy []int32
	steal    float64
	speed    float64 // 1/(1 + steal·T) · contention speed, at the last solve
	// contention, if set (Net.SetContention), slows every job of this
	// compute link while others run beside it.
	contention *contention
	slows      []int32
	throughput float64

	// free is when the link's first-come-first-served queue of analytic
	// transfers (FlowSpec.Analytic) has moved what it holds, in ns.
	free float64

	// statistics
	abusy     float64 // ns its analytic queue was moving transfers
	busySince int64
	busy      int64   // ns with at least one active flow
	work      float64 // units that crossed the link
}

type flowState uint8

const (
	flowFree flowState = iota
	flowLatency
	flowActive
	flowHeld // its bytes are in; its batch link has not run out of work
)

// flow is one transfer (or compute job) crossing up to maxFlowLinks links.
type flow struct {
	// Re-sharing touches a component's every flow several times: what it
	// reads is in the first cache line (finding the component, freezing)
	// and the second (bringing remaining sizes up to date), and a flow is
	// 256 bytes, so that each starts a cache line.
	links    [maxFlowLinks]int32
	mark     uint32
	gen      uint32
	n        uint8
	frozen   bool
	state    flowState
	weighted bool // FlowSpec.Weights was given
	limited  bool // limit > 0
	newRate  float64
	rate     float64

	remaining float64
	last      int64   // when remaining was last brought up to date
	pred      int64   // predicted end at the current rate (solve scratch)
	limit     float64 // own rate cap, units/ns (0: none)
	elimit    float64 // limit at the speed of its slowed links (solve scratch)
	size      float64
	start     int64 // when the flow was started (before latency)
	tag       int32 // caller's payload
	qd        int32

	// w is the flow's weight on each of its links: the link units one
	// unit of its rate uses there (FlowSpec.Weights; 1 for most, which
	// re-sharing then does not read).
	w   [maxFlowLinks]float64
	pos [maxFlowLinks]int32 // index of this flow in links[i].flows
	_   [32]byte
}

// Net is the fluid (flow-level) model of SimGrid: links with capacities,
// flows crossing sets of links, and max-min fair rates by progressive
// filling, recomputed only when a flow joins or leaves, and only over the
// connected component of links and flows it touches. A flow first waits its
// latency, then joins its links; its completion is predicted from its rate
// and remaining size and re-predicted whenever its rate changes. Isolated,
// a flow of s units on a link of capacity c with latency L takes exactly
// L + s/c (rounded up to whole ns).
//
// Net owns the virtual clock and the event queue; it is single-threaded
// and deterministic: events at one instant fire in scheduling order, and
// the only randomness is the optional latency jitter drawn from the seed
// given to SetJitter.
type Net struct {
	now   int64
	q     eventQueue
	links []link
	flows []flow
	free  []int32
	epoch uint32

	dirty     []int32
	spare     []int32 // flush's other dirty list
	capped    []int32
	atBest    []int32
	compLinks []int32
	compFlows []int32
	stack     []int32

	// timers are the analytic transfers (FlowSpec.Analytic) that take
	// longer than an event's gen can say (evTimerLong); freeTimers are
	// reusable.
	timers     []timer
	freeTimers []int32

	jitter float64
	rng    *rand.Rand

	inFlight int
	// Events counts events processed (stale ones excluded).
	Events int64
	// overflow is set when the next event lies at or past MaxTime.
	overflow bool
}

// timer is an analytic transfer in flight: its tag and start.
type timer struct {
	tag   int32
	start int64
}

// NewNet returns an empty network at time 0.
func NewNet() *Net { return &Net{} }

// SetJitter makes every flow latency L become L·(1+u), u uniform in
// [-frac, frac], drawn from a PCG source seeded with seed. frac 0 disables
// jitter (the default).
// frac is clamped to [0, 0.99] so that latencies stay positive.
func (n *Net) SetJitter(frac float64, seed uint64) {
	n.jitter = min(max(frac, 0), 0.99)
	n.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// Now is the virtual time in ns.
func (n *Net) Now() int64 { return n.now }

// InFlight is the number of started, uncompleted flows.
func (n *Net) InFlight() int { return n.inFlight }

// Remaining is what flow id has left to move now, in its units: its size
// while it waits out its latency, nothing once its bytes are in. id must
// be a flow started and not yet returned by Step.
func (n *Net) Remaining(id FlowID) float64 {
	f := &n.flows[id]
	switch f.state {
	case flowLatency:
		return f.size
	case flowActive:
		return max(f.remaining-f.rate*float64(n.now-f.last), 0)
	}
	return 0
}

// AddLink adds a link of capacity units per ns.
func (n *Net) AddLink(capacity float64) LinkID {
	n.links = append(n.links, link{capacity: capacity, peak: capacity})
	return LinkID(len(n.links) - 1)
}

// AddPortLink adds a network port of capacity shared units per ns while
// two or more flows cross it, and alone while one does: transfers from
// several senders converging on a drop-tail port lose some of its rate to
// each other, and one alone does not. It panics unless 0 < shared ≤
// alone.
func (n *Net) AddPortLink(shared, alone float64) LinkID {
	if !(shared > 0 && shared <= alone) {
		panic("sim: AddPortLink needs 0 < shared <= alone")
	}
	n.links = append(n.links, link{capacity: shared, peak: alone, alone: alone, portShared: shared})
	return LinkID(len(n.links) - 1)
}

// AddStorageLink adds an SSD whose capacity follows s's queue-depth curve
// (bytes/ns). s must be valid (costmodel.Storage.Validate) and outlive n.
func (n *Net) AddStorageLink(s *costmodel.Storage) LinkID {
	n.links = append(n.links, link{storage: s, peak: s.MaxBandwidth() / 1e9, batch: s.Batched()})
	return LinkID(len(n.links) - 1)
}

// sharedCores is a compute link of cores shared by more runnable jobs
// than it has cores: with n active jobs (flows without weights: kernels
// and merges, not the network stack's share of a send) its capacity is
//
//	cores · (1 − (1 − eff) · clamp((n − cores) / (full − cores), 0, 1))
//
// full capacity up to one flow per core, eff of it at full flows and past.
type sharedCores struct {
	cores, eff float64
	full       float64
}

func (c *sharedCores) capacity(n int) float64 {
	over := (float64(n) - c.cores) / (c.full - c.cores)
	return c.cores * (1 - (1-c.eff)*min(max(over, 0), 1))
}

// AddSharedCoresLink adds a compute link of cores (busy-ns per ns) whose
// capacity falls linearly from cores, with up to cores active flows, to
// cores·eff with full or more (sharedCores). It panics unless 0 < eff ≤ 1
// and full > cores > 0.
func (n *Net) AddSharedCoresLink(cores, eff float64, full int) LinkID {
	if !(cores > 0 && eff > 0 && eff <= 1 && float64(full) > cores) {
		panic("sim: AddSharedCoresLink needs 0 < eff <= 1 and full > cores > 0")
	}
	n.links = append(n.links, link{capacity: cores, peak: cores, shared: &sharedCores{cores: cores, eff: eff, full: float64(full)}})
	return LinkID(len(n.links) - 1)
}

// SlowBy makes link slowed run at 1/(1 + steal·T) of its capacity, T the
// sum of the throughputs (units/ns) of the links by: on a paravirtualized
// guest a read's host-side work runs on the cores the guest computes on
// (costmodel.Storage.CPUSteal). Rates are re-shared whenever T changes. It
// panics if steal is negative or not finite, if slowed is one of by, or if
// slowed is already slowed at another steal (programmer errors).
func (n *Net) SlowBy(slowed LinkID, steal float64, by ...LinkID) {
	l := &n.links[slowed]
	if !(steal >= 0) || math.IsInf(steal, 0) || (len(l.slowedBy) > 0 && l.steal != steal) {
		panic("sim: SlowBy needs one finite, non-negative steal per link")
	}
	l.steal = steal
	for _, b := range by {
		if b == slowed {
			panic("sim: a link cannot slow itself")
		}
		l.slowedBy = append(l.slowedBy, int32(b))
		n.links[b].slows = append(n.links[b].slows, int32(slowed))
	}
}

// slowedSpeed is the speed of a link others slow (SlowBy): its capacity
// and the limits of the flows on it are multiplied by it.
func (n *Net) slowedSpeed(l *link) float64 {
	t := 0.0
	for _, b := range l.slowedBy {
		t += n.links[b].throughput
	}
	return 1 / (1 + l.steal*t)
}

// contention is what the jobs of a compute link of cores take from each
// other's speed when they run at once: caches and memory bandwidth shared
// between the cores (costmodel: node.corun). With j jobs each runs at
//
//	1 / (1 + loss · (min(j, cores) − 1) / (cores − 1))
//
// of its speed alone: 1 alone, 1/(1 + loss) with every core busy (and
// past that: more jobs than cores take turns, they do not add traffic).
type contention struct {
	cores, loss float64
}

func (c *contention) speed(jobs int) float64 {
	busy := min(float64(jobs), c.cores)
	if busy <= 1 {
		return 1
	}
	return 1 / (1 + c.loss*(busy-1)/(c.cores-1))
}

// SetContention makes the jobs (flows without weights) of compute link l,
// of cores, slow each other by loss when they run at once (contention).
// It panics unless cores > 1 and loss is finite and non-negative, or if l
// already has a contention (programmer errors).
func (n *Net) SetContention(l LinkID, cores, loss float64) {
	if !(cores > 1) || !(loss >= 0) || math.IsInf(loss, 0) || n.links[l].contention != nil {
		panic("sim: SetContention needs cores > 1, a finite loss >= 0, and one contention per link")
	}
	n.links[l].contention = &contention{cores: cores, loss: loss}
}

// sped reports whether l's speed can fall below 1 (SlowBy, SetContention).
func (l *link) sped() bool { return len(l.slowedBy) > 0 || l.contention != nil }

// flowSpeed is the slowest speed of f's slowed links (1: none): a flow
// capped at one core runs at that core's speed.
func (n *Net) flowSpeed(f *flow) float64 {
	s := 1.0
	for i := 0; i < int(f.n); i++ {
		if l := &n.links[f.links[i]]; l.sped() {
			s = min(s, l.speed)
		}
	}
	return s
}

// noteThroughputs records the throughput of each link of cl that slows
// others and, where it changed, marks those for re-sharing (flush runs
// them before the clock moves).
func (n *Net) noteThroughputs(cl []int32) {
	for _, lid := range cl {
		l := &n.links[lid]
		if len(l.slows) == 0 {
			continue
		}
		t := 0.0
		for _, fid := range l.flows {
			f := &n.flows[fid]
			t += f.rate * f.weightOn(lid)
		}
		if t != l.throughput {
			l.throughput = t
			n.markDirty(l.slows)
		}
	}
}

// LinkStats reports a link's busy time (ns with at least one flow, up to
// now), the units that crossed it, and its peak capacity (units/ns).
func (n *Net) LinkStats(id LinkID) (busy int64, work, peak float64) {
	l := &n.links[id]
	busy = l.busy + int64(math.Round(l.abusy))
	if len(l.flows) > 0 {
		busy += n.now - l.busySince
	}
	return busy, l.work, l.peak
}

// NumLinks is the number of links.
func (n *Net) NumLinks() int { return len(n.links) }

// FlowSpec describes a flow to start.
type FlowSpec struct {
	Links []LinkID
	// Size in link units (bytes, or busy-ns for compute links); Latency in
	// ns before the flow joins its links.
	Size    float64
	Latency int64
	// Limit caps the flow's own rate (units/ns), e.g. the cores one merge
	// may use; 0: none.
	Limit float64
	// QD is the number of requests the flow keeps outstanding on storage
	// links (costmodel.Storage.TaskRequests).
	QD int
	// Weights, when not nil, holds for each of Links the units of that
	// link's capacity one unit of the flow's rate uses (1 where nil): a
	// transfer of r bytes/ns that also takes c busy-ns of a host's cores
	// per byte crosses the host's compute link with weight c. Rates are
	// weighted max-min fair: a link of residual capacity R shared by
	// flows of weights w_i gives each the rate R / Σ w_i. A weighted flow
	// uses a shared-cores link (AddSharedCoresLink) without counting among
	// its jobs.
	Weights []float64
	// Tag is returned with the flow's completion.
	Tag int32
	// Analytic, if set, takes the flow out of the fluid model: after its
	// latency it queues at each of its links first come first served and
	// moves at the link's full rate there (cut-through: every link serves
	// it on its own), completing when the last link has served it, as
	// ASTRA-sim's congestion-aware analytical network does. It shares no
	// rate with the links' fluid flows and re-shares nothing, so it costs
	// O(links) whatever the number of transfers in flight (Cluster's
	// NetAnalytic model of the network).
	Analytic bool
}

// Start starts a flow now. Its completion is returned by Step. An
// analytic flow (FlowSpec.Analytic) gets no flow slot: its FlowID is -1. A flow with
// no links or no size completes after its latency alone. Start panics if
// spec names more than maxFlowLinks links, or has Weights that are not
// one positive, finite number per link (programmer errors).
func (n *Net) Start(spec FlowSpec) FlowID {
	if len(spec.Links) > maxFlowLinks {
		panic("sim: flow crosses too many links")
	}
	if spec.Weights != nil {
		if len(spec.Weights) != len(spec.Links) {
			panic("sim: flow weights do not match its links")
		}
		for _, w := range spec.Weights {
			if !(w > 0) || math.IsInf(w, 0) {
				panic("sim: flow weight not positive and finite")
			}
		}
	}
	lat := spec.Latency
	if n.jitter > 0 && lat > 0 {
		lat = int64(math.Round(float64(lat) * (1 + n.jitter*(2*n.rng.Float64()-1))))
	}
	if spec.Analytic && len(spec.Links) > 0 && spec.Size > 0 {
		// A completion at a known time: the event carries the tag and,
		// when it fits, the duration; a longer one keeps its start in a
		// timer.
		end := n.reserve(&spec, n.now+lat)
		n.inFlight++
		if d := end - n.now; d <= math.MaxUint32 {
			n.q.push(newEvent(end, evTimer, spec.Tag, uint32(d)))
			return -1
		}
		id := allocSlot(&n.timers, &n.freeTimers)
		n.timers[id] = timer{tag: spec.Tag, start: n.now}
		n.q.push(newEvent(end, evTimerLong, id, 0))
		return -1
	}
	id := allocSlot(&n.flows, &n.free)
	f := &n.flows[id]
	f.n = uint8(len(spec.Links))
	f.weighted = spec.Weights != nil
	for i, l := range spec.Links {
		f.links[i] = int32(l)
		f.w[i] = 1
		if spec.Weights != nil {
			f.w[i] = spec.Weights[i]
		}
	}
	f.limit = spec.Limit
	f.limited = spec.Limit > 0
	f.size = spec.Size
	f.remaining = spec.Size
	f.rate = 0
	f.qd = int32(spec.QD)
	f.tag = spec.Tag
	f.start = n.now
	f.state = flowLatency
	n.inFlight++
	kind := evActivate
	if f.n == 0 || f.size <= 0 {
		kind = evDone
	} else {
		for i := 0; i < int(f.n); i++ {
			if l := &n.links[f.links[i]]; l.batch {
				l.arriving++
			}
		}
	}
	n.q.push(newEvent(n.now+lat, kind, id, f.gen))
	return FlowID(id)
}

// reserve queues an analytic transfer (FlowSpec.Analytic) ready at t0 at
// each of its links and returns when the last of them has moved it: a
// link serves its queue in arrival order at its peak capacity (a port
// link at its shared rate while its queue is busy), so its work is never
// late and never overlaps.
func (n *Net) reserve(spec *FlowSpec, t0 int64) int64 {
	end := float64(t0)
	for i, lid := range spec.Links {
		l := &n.links[lid]
		w := 1.0
		if spec.Weights != nil {
			w = spec.Weights[i]
		}
		c := l.peak
		if l.alone > 0 && l.free > float64(t0) {
			c = l.portShared
		}
		if !(c > 0) {
			continue
		}
		d := spec.Size * w / c
		l.free = max(l.free, float64(t0)) + d
		l.work += spec.Size * w
		l.abusy += d
		end = max(end, l.free)
	}
	return t0 + ceilNs(end-float64(t0))
}

// Step advances the clock to the next flow completion and returns the
// finished flow's tag, its start time and end time (= Now). ok is false
// when no flow is in flight (or none can progress).
func (n *Net) Step() (tag int32, start, end int64, ok bool) {
	return n.stepBefore(math.MaxInt64)
}

// stepBefore is Step limited to events before limit: it returns ok false,
// with the clock unchanged past the last event processed, when the next
// completion would not come before limit.
func (n *Net) stepBefore(limit int64) (tag int32, start, end int64, ok bool) {
	for {
		// Rates change only when the clock is about to move: every join
		// and leave of this instant is re-shared at once.
		if len(n.dirty) > 0 && (n.q.Len() == 0 || n.q.peek().t > n.now) {
			n.flush()
		}
		if n.q.Len() > 0 && n.q.peek().t >= MaxTime {
			n.overflow = true // never processed: the clock stays below MaxTime
			break
		}
		if n.q.Len() == 0 || n.q.peek().t >= limit {
			break
		}
		e := n.q.pop()
		switch e.kind() {
		case evTimer:
			n.now = e.t
			n.Events++
			n.inFlight--
			return e.id, n.now - int64(e.gen), n.now, true
		case evTimerLong:
			n.now = e.t
			n.Events++
			tm := n.timers[e.id]
			n.freeTimers = append(n.freeTimers, e.id)
			n.inFlight--
			return tm.tag, tm.start, n.now, true
		}
		f := &n.flows[e.id]
		if e.gen != f.gen {
			continue // stale prediction
		}
		n.now = e.t
		n.Events++
		switch e.kind() {
		case evActivate:
			n.activate(e.id)
		case evFinish:
			n.deactivate(e.id)
			if n.hold(e.id) {
				continue
			}
			return n.finish(e.id)
		case evDone:
			return n.finish(e.id)
		}
	}
	return 0, 0, 0, false
}

func (n *Net) finish(id int32) (tag int32, start, end int64, ok bool) {
	f := &n.flows[id]
	tag, start = f.tag, f.start
	f.state = flowFree
	f.gen++
	n.free = append(n.free, id)
	n.inFlight--
	return tag, start, n.now, true
}

// hold keeps flow id, whose bytes are in, from completing while one of
// its batch links still has work (an active or arriving flow), and
// releases the flows held on each batch link id leaves idle: they complete
// at this instant, after id, in the order their bytes came in. It reports
// whether id is held.
func (n *Net) hold(id int32) bool {
	f := &n.flows[id]
	for i := 0; i < int(f.n); i++ {
		l := &n.links[f.links[i]]
		if l.batch && (len(l.flows) > 0 || l.arriving > 0) {
			f.state = flowHeld
			f.gen++ // no prediction may finish it again
			l.held = append(l.held, id)
			return true
		}
	}
	for i := 0; i < int(f.n); i++ {
		l := &n.links[f.links[i]]
		if !l.batch {
			continue
		}
		for _, h := range l.held {
			n.q.push(newEvent(n.now, evDone, h, n.flows[h].gen))
		}
		l.held = l.held[:0]
	}
	return false
}

// activate joins flow id to its links and re-shares their component.
func (n *Net) activate(id int32) {
	f := &n.flows[id]
	f.state = flowActive
	f.last = n.now
	for i := 0; i < int(f.n); i++ {
		l := &n.links[f.links[i]]
		if l.batch {
			l.arriving--
		}
		if len(l.flows) == 0 {
			l.busySince = n.now
		}
		f.pos[i] = int32(len(l.flows))
		l.flows = append(l.flows, id)
		l.work += f.size * f.w[i]
		if l.storage != nil {
			l.qd += int(f.qd)
		}
		if !f.weighted {
			l.jobs++
		} else {
			l.wflows++
		}
	}
	n.markDirty(f.links[:f.n])
}

// markDirty queues links for re-sharing before the clock next moves.
func (n *Net) markDirty(ls []int32) {
	for _, l := range ls {
		if !n.links[l].dirty {
			n.links[l].dirty = true
			n.dirty = append(n.dirty, l)
		}
	}
}

// flush re-shares the components of every dirty link, and then those a
// changed throughput made dirty (SlowBy), until none is.
func (n *Net) flush() {
	for len(n.dirty) > 0 {
		batch := n.dirty
		n.dirty = n.spare[:0]
		for _, l := range batch {
			n.links[l].dirty = false
		}
		n.reshare(batch)
		n.spare = batch[:0]
	}
}

// deactivate removes flow id from its links and re-shares what it shared.
func (n *Net) deactivate(id int32) {
	f := &n.flows[id]
	f.remaining = 0
	for i := 0; i < int(f.n); i++ {
		lid := f.links[i]
		l := &n.links[lid]
		p := f.pos[i]
		last := l.flows[len(l.flows)-1]
		l.flows[p] = last
		l.flows = l.flows[:len(l.flows)-1]
		if last != id {
			g := &n.flows[last]
			for j := 0; j < int(g.n); j++ {
				if g.links[j] == lid {
					g.pos[j] = p
					break
				}
			}
		}
		if len(l.flows) == 0 {
			l.busy += n.now - l.busySince
		}
		if l.storage != nil {
			l.qd -= int(f.qd)
		}
		if !f.weighted {
			l.jobs--
		} else {
			l.wflows--
		}
	}
	n.markDirty(f.links[:f.n])
}

// reshare recomputes max-min fair rates over the connected components of
// the given links (links joined by shared flows; seed must not alias the
// scratch slices), brings every affected flow's remaining size up to date,
// and schedules one event per component: the completion of its earliest
// flow. Invariant: every component with active flows has exactly one live
// finish event, for the flow that finishes first at current rates (the
// others' predictions are implied and recomputed when the component is next
// re-shared, which happens at the latest when that flow leaves). This keeps
// the heap at O(components) entries instead of O(flows). No allocation once
// the scratch slices have grown.
func (n *Net) reshare(seed []int32) {
	n.epoch++
	ep := n.epoch
	for _, s := range seed {
		if n.links[s].mark == ep {
			continue // already in a component solved this round
		}
		n.links[s].mark = ep
		cl, cf, st, capped := n.compLinks[:0], n.compFlows[:0], n.stack[:0], n.capped[:0]
		st = append(st, s)
		for len(st) > 0 {
			lid := st[len(st)-1]
			st = st[:len(st)-1]
			cl = append(cl, lid)
			for _, fid := range n.links[lid].flows {
				f := &n.flows[fid]
				if f.mark == ep {
					continue
				}
				f.mark = ep
				cf = append(cf, fid)
				// solve's starting point, set while f is at hand
				f.frozen = false
				f.newRate = 0
				if f.limited {
					capped = append(capped, fid)
				}
				for i := 0; i < int(f.n); i++ {
					if m := f.links[i]; n.links[m].mark != ep {
						n.links[m].mark = ep
						st = append(st, m)
					}
				}
			}
		}
		n.compLinks, n.compFlows, n.stack, n.capped = cl, cf, st, capped
		if len(cf) > 0 {
			n.solve(cl, cf, capped)
		}
		n.noteThroughputs(cl)
	}
}

// solve runs progressive filling on one component (its links cl, its
// flows cf, unfrozen at rate 0, and those of cf with a limit, capped) and
// schedules its earliest completion.
func (n *Net) solve(cl, cf, capped []int32) {
	for _, lid := range cl {
		l := &n.links[lid]
		if l.storage != nil {
			l.capacity = l.storage.BandwidthAt(float64(l.qd)) / 1e9
		}
		if l.shared != nil {
			l.capacity = l.shared.capacity(l.jobs)
		}
		if l.alone > 0 {
			l.capacity = l.portShared
			if len(l.flows) == 1 {
				l.capacity = l.alone
			}
		}
		if l.sped() {
			base := l.peak
			if l.shared != nil {
				base = l.capacity
			}
			l.speed = 1
			if len(l.slowedBy) > 0 {
				l.speed = n.slowedSpeed(l)
			}
			if l.contention != nil {
				l.speed *= l.contention.speed(l.jobs)
			}
			l.capacity = base * l.speed
		}
		l.residual = l.capacity
		l.unfrozen = int32(len(l.flows))
		if l.wflows == 0 {
			l.weight = float64(len(l.flows)) // Σ of ones, exactly
		} else {
			l.weight = 0
			for _, fid := range l.flows {
				l.weight += n.flows[fid].weightOn(lid)
			}
		}
	}
	for _, fid := range capped {
		f := &n.flows[fid]
		f.elimit = f.limit * n.flowSpeed(f)
	}
	left := len(cf)
	for left > 0 {
		// The bottleneck: the link with the smallest fair share of its
		// residual capacity, or a flow whose own limit is smaller still.
		share := math.Inf(1)
		var bl int32 = -1
		for _, lid := range cl {
			l := &n.links[lid]
			if l.unfrozen > 0 {
				if s := l.residual / l.weight; s < share {
					share, bl = s, lid
				}
			}
		}
		var bf int32 = -1
		for _, fid := range capped {
			f := &n.flows[fid]
			if !f.frozen && f.elimit < share {
				share, bf = f.elimit, fid
			}
		}
		if share < 0 {
			share = 0
		}
		if bf >= 0 {
			n.freeze(bf, share)
			left--
			continue
		}
		if bl < 0 {
			break // unreachable: every unfrozen flow is on some link
		}
		// Freeze the flows of every link whose fair share ties the
		// minimum (symmetric exchanges tie on many links). Freezing flows
		// at the minimum keeps a tied link's share at the minimum and only
		// raises the others', so one pass over the links finds them all.
		tie := share * (1 + 1e-12)
		for _, lid := range cl {
			l := &n.links[lid]
			if l.unfrozen == 0 || l.residual > tie*l.weight {
				continue
			}
			for _, fid := range l.flows {
				if !n.flows[fid].frozen {
					n.freeze(fid, share)
					left--
				}
			}
		}
	}

	// Bring remaining sizes up to date; find the earliest completion.
	best := int64(math.MaxInt64)
	atBest := n.atBest[:0] // the flows finishing at best, in cf's order
	for _, fid := range cf {
		f := &n.flows[fid]
		if f.rate > 0 {
			f.remaining -= f.rate * float64(n.now-f.last)
			if f.remaining < 0 {
				f.remaining = 0
			}
		}
		f.last = n.now
		f.rate = f.newRate
		f.gen++ // any earlier prediction is void
		if f.rate <= 0 {
			continue // stalled until capacity frees up
		}
		f.pred = n.now + ceilNs(f.remaining/f.rate)
		if f.pred < best {
			best, atBest = f.pred, atBest[:0]
		}
		if f.pred == best {
			atBest = append(atBest, fid)
		}
	}
	// Every flow finishing at that same instant gets its event, so that
	// simultaneous completions are re-shared once (flush), not one by one.
	for _, fid := range atBest {
		n.q.push(newEvent(best, evFinish, fid, n.flows[fid].gen))
	}
	n.atBest = atBest
}

func (n *Net) freeze(fid int32, r float64) {
	f := &n.flows[fid]
	f.frozen = true
	f.newRate = r
	for i := 0; i < int(f.n); i++ {
		l := &n.links[f.links[i]]
		w := 1.0
		if f.weighted {
			w = f.w[i]
		}
		l.residual -= r * w
		if l.residual < 0 {
			l.residual = 0
		}
		l.unfrozen--
		l.weight -= w
		if l.unfrozen == 0 {
			l.weight = 0 // no rounding residue
		}
	}
}

// weightOn is f's weight on link lid (1 if f does not cross it).
func (f *flow) weightOn(lid int32) float64 {
	for i := 0; i < int(f.n); i++ {
		if f.links[i] == lid {
			return f.w[i]
		}
	}
	return 1
}

// MaxTime bounds the simulated clock, in ns (about 146 years): a run
// whose next event lies at or past it fails with ErrTimeRange instead of
// wrapping the int64 clock. Durations saturate at MaxTime (ceilNs), so a
// step from any time before it stays below 2^63.
const MaxTime int64 = 1 << 62

// MaxInFlight bounds the flows in flight at once (a run that reaches it
// holds about 5 GB). A cluster whose exchanges need more (every pair of
// devices of thousands moving data at once: 1,000 nodes of 8 devices)
// fails with ErrTooLarge instead of exhausting the machine's memory.
const MaxInFlight = 4_000_000

// ErrTooLarge: the simulation does not fit in this process's memory.
var ErrTooLarge = errors.New("sim: the simulation is larger than the simulator holds")

// ErrTimeRange: the simulated clock would pass MaxTime.
var ErrTimeRange = errors.New("sim: simulated time beyond the clock's range (about 146 years)")

// ceilNs rounds a duration in ns up to a whole ns, treating values within
// 1e-6 ns of an integer as that integer (so exact quotients such as
// 1e9 bytes / 0.5 bytes/ns stay exact despite float rounding). Durations
// of MaxTime or more (and NaN) saturate at MaxTime.
func ceilNs(d float64) int64 {
	if !(d < float64(MaxTime)) {
		return MaxTime
	}
	fl := math.Floor(d)
	if d-fl <= 1e-6 {
		return int64(fl)
	}
	return int64(fl) + 1 // also rounds d within 1e-6 below an integer up to it
}

// Overflowed reports whether the run stopped because its next event lay
// at or past MaxTime.
func (n *Net) Overflowed() bool { return n.overflow }

// nextTime is the time of the next live event (stale ones are dropped).
func (n *Net) nextTime() (int64, bool) {
	if len(n.dirty) > 0 {
		n.flush()
	}
	for n.q.Len() > 0 {
		e := n.q.peek()
		if k := e.kind(); k == evTimer || k == evTimerLong || e.gen == n.flows[e.id].gen {
			return e.t, true
		}
		n.q.pop()
	}
	return 0, false
}

// advance moves the clock to t with no event before it (for drivers that
// inject starts at given times). It panics if t is in the past or an event
// is due before t (programmer error).
func (n *Net) advance(t int64) {
	if te, ok := n.nextTime(); t < n.now || (ok && te < t) {
		panic("sim: advance past a pending event or into the past")
	}
	n.now = t
}

// allocSlot returns a free index of *slots (the last one freed), or
// appends a zero slot: flows and timers are recycled, not reallocated,
// so a run's memory is its peak in flight.
func allocSlot[T any](slots *[]T, free *[]int32) int32 {
	if k := len(*free); k > 0 {
		id := (*free)[k-1]
		*free = (*free)[:k-1]
		return id
	}
	var zero T
	*slots = append(*slots, zero)
	return int32(len(*slots) - 1)
}
