package traces

import (
	"slices"
	"sort"

	"gostachio/traces/event"
)

// CriticalPath returns a chain of events, in time order, that ends with
// the event that ends last (ties: the one that started last) and explains
// the run's length backwards: each event's predecessor is the
// latest-ending event of the same run that ended at or before the event's
// start and is one of
//
//  1. its data predecessor: for a unit's task (Unit >= 0), a task of the
//     same unit (run, node, pipeline, unit) of an earlier stage (metadata
//     read < data read < h2d < kernel < d2h/send; a sync is ordered with
//     every stage, since it gates the next one). For a pipeline-wide task
//     (Unit < 0) on a device, any task of the same pipeline on that node
//     and device; for a node-wide one (Device < 0, e.g. the final merge),
//     any task of the same pipeline on any node.
//  2. only when (1) finds nothing (the first tasks of a unit or of a
//     pipeline): a pipeline-wide task of its pipeline (the table's
//     metadata read) or any task of an earlier pipeline (its inputs: plans
//     number pipelines after the ones they wait for).
//  3. its resource predecessor: a task on the same resource (resource
//     contention: it waited for a slot).
//
// Ties prefer (1), then (2), then (3). The walk stops at an event with no
// candidate.
//
// This is an approximation: the trace does not record the scheduler's
// real reasons (task dependencies, memory and window limits, which
// completion freed the slot a task got), so "latest-ending candidate" is a
// guess at the binding one, a pipeline-wide task may be linked to an
// unrelated unit of its pipeline that happened to end just before, and the
// gaps between chained events (see PathSummary.Wait) are time the chain
// does not explain (scheduling latency, memory waits). It is meant to say
// which kinds of work dominate the run's length, not to be exact.
//
// Events of other runs than the last-ending event's are ignored; zero
// events give nil.
func CriticalPath(events []Event) []Event {
	n := len(events)
	if n == 0 {
		return nil
	}
	// pos orders events by (Start, End, index); a predecessor must come
	// earlier, which guarantees the walk terminates even with zero-length
	// tasks.
	order := make([]int32, n)
	for i := range order {
		order[i] = int32(i)
	}
	sort.Slice(order, func(a, b int) bool {
		ea, eb := &events[order[a]], &events[order[b]]
		if ea.Start != eb.Start {
			return ea.Start < eb.Start
		}
		if ea.End != eb.End {
			return ea.End < eb.End
		}
		return order[a] < order[b]
	})
	pos := make([]int32, n)
	for r, i := range order {
		pos[i] = int32(r)
	}
	last := int32(0)
	for i := range events {
		if events[i].End > events[last].End || events[i].End == events[last].End && pos[i] > pos[last] {
			last = int32(i)
		}
	}
	run := events[last].Run

	type pipeKey struct {
		pipeline     int32
		node, device int32 // -2: any
	}
	unitIdx := map[unitKey][]int32{}
	pipeDev := map[pipeKey][]int32{}      // all tasks of (pipeline, node, device)
	pipeAll := map[int32][]int32{}        // all tasks of a pipeline
	pipeWide := map[int32][]int32{}       // pipeline-wide tasks (Unit < 0) of a pipeline
	byRes := map[event.Resource][]int32{} // tasks of a resource
	for i := range events {
		e := &events[i]
		if e.Run != run {
			continue
		}
		ii := int32(i)
		if e.Unit >= 0 {
			k := unitKey{run, e.Node, e.Pipeline, e.Unit}
			unitIdx[k] = append(unitIdx[k], ii)
		} else {
			pipeWide[e.Pipeline] = append(pipeWide[e.Pipeline], ii)
		}
		pk := pipeKey{e.Pipeline, e.Node, e.Device}
		pipeDev[pk] = append(pipeDev[pk], ii)
		pipeAll[e.Pipeline] = append(pipeAll[e.Pipeline], ii)
		byRes[e.Res] = append(byRes[e.Res], ii)
	}
	for _, m := range []map[int32][]int32{pipeAll, pipeWide} {
		for _, l := range m {
			sortByEnd(events, l, pos)
		}
	}
	for _, l := range pipeDev {
		sortByEnd(events, l, pos)
	}
	for _, l := range byRes {
		sortByEnd(events, l, pos)
	}
	pipes := make([]int32, 0, len(pipeAll))
	for p := range pipeAll {
		pipes = append(pipes, p)
	}
	slices.Sort(pipes)

	// latest is the latest-ending event of l (sorted by End) that ended by
	// t and comes before position p; -1 if none.
	latest := func(l []int32, t int64, p int32) int32 {
		k := sort.Search(len(l), func(k int) bool { return events[l[k]].End > t }) - 1
		for ; k >= 0; k-- {
			if pos[l[k]] < p {
				return l[k]
			}
		}
		return -1
	}
	// better reports whether candidate c beats the current best b (ties
	// keep b: candidates are offered in preference order).
	better := func(c, b int32) bool {
		if c < 0 {
			return false
		}
		if b < 0 {
			return true
		}
		ec, eb := &events[c], &events[b]
		return ec.End > eb.End
	}

	path := []Event{events[last]}
	cur := last
	for {
		e := &events[cur]
		t, p := e.Start, pos[cur]
		best := int32(-1)
		if e.Unit >= 0 {
			rank := stageRank(e)
			for _, c := range unitIdx[unitKey{run, e.Node, e.Pipeline, e.Unit}] {
				ec := &events[c]
				if ec.End > t || pos[c] >= p {
					continue
				}
				rc := stageRank(ec)
				if rc >= 0 && rank >= 0 && rc >= rank {
					continue
				}
				if best < 0 || ec.End > events[best].End || ec.End == events[best].End && pos[c] > pos[best] {
					best = c
				}
			}
		} else if e.Device >= 0 {
			best = latest(pipeDev[pipeKey{e.Pipeline, e.Node, e.Device}], t, p)
		} else {
			best = latest(pipeAll[e.Pipeline], t, p)
		}
		if best < 0 {
			if c := latest(pipeWide[e.Pipeline], t, p); better(c, best) {
				best = c
			}
			for _, q := range pipes {
				if q >= e.Pipeline {
					break
				}
				if c := latest(pipeAll[q], t, p); better(c, best) {
					best = c
				}
			}
		}
		if c := latest(byRes[e.Res], t, p); better(c, best) {
			best = c
		}
		if best < 0 {
			break
		}
		path = append(path, events[best])
		cur = best
	}
	slices.Reverse(path)
	return path
}

// stageRank orders a unit's tasks along its stages; -1 for a sync, which
// is ordered with every stage.
func stageRank(e *Event) int {
	switch e.Kind {
	case event.TaskRead:
		if e.Meta {
			return 0
		}
		return 1
	case event.TaskH2D:
		return 2
	case event.TaskKernel:
		return 3
	case event.TaskD2H, event.TaskSend:
		return 4
	}
	return -1
}

// KindTime is the time a critical path spent in tasks of one kind.
type KindTime struct {
	Kind  string `json:"kind"`
	Tasks int    `json:"tasks"`
	Time  int64  `json:"time_ns"`
}

// PathSummary condenses a critical path.
type PathSummary struct {
	Tasks int `json:"tasks"`
	// End is the path's last End (the makespan when the path came from
	// CriticalPath over a whole run).
	End int64 `json:"end_ns"`
	// Busy is the sum of the path's task durations; Wait the rest of
	// [0, End]: the time before the first task plus the gaps between
	// consecutive tasks (what the chain does not explain). Busy + Wait =
	// End.
	Busy int64 `json:"busy_ns"`
	Wait int64 `json:"wait_ns"`
	// ByKind is Busy split by task kind (kinds on the path only, in
	// TaskKind order).
	ByKind []KindTime `json:"by_kind"`
}

// SummarizePath sums a path (as CriticalPath returns it: in time order,
// each event starting at or after the previous one's end).
func SummarizePath(path []Event) PathSummary {
	var s PathSummary
	s.Tasks = len(path)
	var byKind [event.NumTaskKinds + 1]KindTime
	for i := range path {
		e := &path[i]
		s.End = max(s.End, e.End)
		d := max(e.Duration(), 0)
		s.Busy += d
		k := min(int(e.Kind), event.NumTaskKinds)
		byKind[k].Kind = e.Kind.String()
		byKind[k].Tasks++
		byKind[k].Time += d
	}
	s.Wait = s.End - s.Busy
	for _, kt := range byKind {
		if kt.Tasks > 0 {
			s.ByKind = append(s.ByKind, kt)
		}
	}
	return s
}
