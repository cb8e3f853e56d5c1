package sim

import (
	"cmp"
	"math/bits"
	"slices"
)

// evKind is what an event does when it fires.
type evKind uint8

const (
	// evActivate: a flow's latency phase is over; it joins its links.
	evActivate evKind = iota + 1
	// evFinish: a flow's predicted completion (stale if gen differs).
	evFinish
	// evDone: a task completes (delay-only tasks, and flows whose bytes
	// drained): its Completion is returned by Next.
	evDone
	// evTimer: an analytic transfer completes (id: its timer, Net.timers).
	evTimer
)

// event is one entry of the queue. Events are ordered by (t, seq): seq is a
// counter assigned at push, so events at the same instant fire in the order
// they were scheduled, which makes every run deterministic.
type event struct {
	t    int64  // virtual time, ns
	seq  uint64 // push order, breaks ties
	kind evKind
	id   int32  // flow slot (evTimer: timer)
	gen  uint32 // flow generation when pushed (stale-event check)
}

func (a *event) less(b *event) bool {
	return a.t < b.t || (a.t == b.t && a.seq < b.seq)
}

// eventQueue is a radix heap of events by (t, seq) — a bucket per
// highest bit in which an event's time differs from the last one taken
// out — with a binary heap beside it for the few events scheduled earlier
// than that (a flow's completion scheduled after the queue was peeked).
// Events leave in (t, seq) order, a total order, as from any priority
// queue; a large cluster keeps millions of transfers in flight, and a
// radix heap moves each event O(log range) times through small, sequential
// buckets where a heap of that size takes a cache miss per level on every
// pop. Allocation-free once grown. Rescheduled flows push a fresh event and
// leave the old one stale (lazy deletion by generation).
type eventQueue struct {
	seq  uint64
	n    int   // events in the buckets
	last int64 // every event in the buckets has t >= last
	// b[0] holds the events at last in seq order from head; b[i] those
	// whose t differs from last first in bit i-1.
	b    [65][]event
	head int
	low  []event // binary heap of events before last
}

func (q *eventQueue) Len() int { return q.n + len(q.low) }

// push schedules e at e.t; its seq is assigned here.
func (q *eventQueue) push(e event) {
	e.seq = q.seq
	q.seq++
	if e.t < q.last {
		q.low = append(q.low, e)
		h := q.low
		i := len(h) - 1
		for i > 0 {
			p := (i - 1) / 2
			if !e.less(&h[p]) {
				break
			}
			h[i] = h[p]
			i = p
		}
		h[i] = e
		return
	}
	i := bits.Len64(uint64(e.t ^ q.last))
	q.b[i] = append(q.b[i], e)
	q.n++
}

// settle makes b[0] hold the earliest bucketed events, if any.
func (q *eventQueue) settle() {
	if q.head < len(q.b[0]) || q.n == 0 {
		return
	}
	q.b[0], q.head = q.b[0][:0], 0
	i := 1
	for len(q.b[i]) == 0 {
		i++
	}
	src := q.b[i]
	m := 0
	for k := 1; k < len(src); k++ {
		if src[k].less(&src[m]) {
			m = k
		}
	}
	q.last = src[m].t
	for k := range src {
		j := bits.Len64(uint64(src[k].t ^ q.last))
		q.b[j] = append(q.b[j], src[k])
	}
	q.b[i] = src[:0]
	if len(q.b[0]) > 1 {
		slices.SortFunc(q.b[0], func(x, y event) int { return cmp.Compare(x.seq, y.seq) })
	}
}

// peek returns the earliest event; the queue must not be empty.
func (q *eventQueue) peek() *event {
	if len(q.low) > 0 {
		return &q.low[0]
	}
	q.settle()
	return &q.b[0][q.head]
}

// pop removes and returns the earliest event; the queue must not be empty.
func (q *eventQueue) pop() event {
	if len(q.low) == 0 {
		q.settle()
		e := q.b[0][q.head]
		q.head++
		q.n--
		return e
	}
	h := q.low
	top := h[0]
	n := len(h) - 1
	e := h[n]
	h = h[:n]
	if n > 0 {
		// sift down the former last event
		i := 0
		for {
			c := 2*i + 1
			if c >= n {
				break
			}
			if r := c + 1; r < n && h[r].less(&h[c]) {
				c = r
			}
			if !h[c].less(&e) {
				break
			}
			h[i] = h[c]
			i = c
		}
		h[i] = e
	}
	q.low = h
	return top
}

func (q *eventQueue) reset() {
	for i := range q.b {
		q.b[i] = q.b[i][:0]
	}
	q.low = q.low[:0]
	q.n, q.head, q.last, q.seq = 0, 0, 0, 0
}
