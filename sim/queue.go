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
)

// event is one entry of the queue. Events are ordered by (t, seq): seq is a
// counter assigned at push, so events at the same instant fire in the order
// they were scheduled, which makes every run deterministic.
type event struct {
	t    int64  // virtual time, ns
	seq  uint64 // push order, breaks ties
	kind evKind
	id   int32  // flow slot
	gen  uint32 // flow generation when pushed (stale-event check)
}

func (a *event) less(b *event) bool {
	return a.t < b.t || (a.t == b.t && a.seq < b.seq)
}

// eventQueue is a binary min-heap of events by (t, seq), typed (no
// container/heap interface boxing) and allocation-free once grown.
// Rescheduled flows push a fresh event and leave the old one stale (lazy
// deletion by generation), which keeps push and pop O(log n).
type eventQueue struct {
	h   []event
	seq uint64
}

func (q *eventQueue) Len() int { return len(q.h) }

// push schedules e at e.t; its seq is assigned here.
func (q *eventQueue) push(e event) {
	e.seq = q.seq
	q.seq++
	q.h = append(q.h, e)
	// sift up
	i := len(q.h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !q.h[i].less(&q.h[p]) {
			break
		}
		q.h[i], q.h[p] = q.h[p], q.h[i]
		i = p
	}
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
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h[r].less(&h[l]) {
			m = r
		}
		if !h[m].less(&h[i]) {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	q.h = h
	return top
}

func (q *eventQueue) reset() {
	q.h = q.h[:0]
	q.seq = 0
}
