package sim

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
	// evTimer: an analytic transfer completes (id: its tag, gen: its
	// duration in ns).
	evTimer
	// evTimerLong: an analytic transfer of 2³² ns or more completes (id:
	// its timer, Net.timers).
	evTimerLong
)

// event is one entry of the queue. Events are ordered by (t, seq): seq is a
// counter assigned at push, so events at the same instant fire in the order
// they were scheduled, which makes every run deterministic. 24 bytes: a
// large cluster has millions in the queue.
type event struct {
	t int64 // virtual time, ns
	// sk is seq<<8 | kind: seq, the push order, breaks ties (the kind
	// below it never does: seqs are unique).
	sk  uint64
	id  int32  // flow slot (evTimer: tag; evTimerLong: timer)
	gen uint32 // flow generation when pushed (stale-event check)
}

// newEvent is an event of kind at t for flow (or timer) id at gen.
func newEvent(t int64, kind evKind, id int32, gen uint32) event {
	return event{t: t, sk: uint64(kind), id: id, gen: gen}
}

func (e *event) kind() evKind { return evKind(e.sk & 0xff) }

func (a *event) less(b *event) bool {
	return a.t < b.t || (a.t == b.t && a.sk < b.sk)
}

// eventQueue is a 4-ary min-heap of events by (t, seq), typed (no
// container/heap interface boxing) and allocation-free once grown: half the
// levels of a binary heap, whose four children share two cache lines, for
// the millions of transfers a large cluster keeps in flight. (t, seq) is a
// total order, so events pop in the same order from any correct heap.
// Rescheduled flows push a fresh event and leave the old one stale (lazy
// deletion by generation), which keeps push and pop O(log n).
type eventQueue struct {
	h   []event
	seq uint64
}

func (q *eventQueue) Len() int { return len(q.h) }

// push schedules e at e.t; its seq is assigned here.
func (q *eventQueue) push(e event) {
	e.sk = q.seq<<8 | e.sk&0xff
	q.seq++
	q.h = append(q.h, e)
	// sift up
	h := q.h
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 4
		if !e.less(&h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = e
}

// peek returns the earliest event; the queue must not be empty.
func (q *eventQueue) peek() *event { return &q.h[0] }

// pop removes and returns the earliest event; the queue must not be empty.
func (q *eventQueue) pop() event {
	h := q.h
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	if n > 0 {
		// sift down the former last event
		e := h[0]
		i := 0
		for {
			c := 4*i + 1
			if c >= n {
				break
			}
			m := c
			for k := c + 1; k < c+4 && k < n; k++ {
				if h[k].less(&h[m]) {
					m = k
				}
			}
			if !h[m].less(&e) {
				break
			}
			h[i] = h[m]
			i = m
		}
		h[i] = e
	}
	q.h = h
	return top
}

func (q *eventQueue) reset() {
	q.h = q.h[:0]
	q.seq = 0
}
