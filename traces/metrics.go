package traces

import (
	"cmp"
	"slices"
	"sort"

	"gostachio/traces/event"
)

// The metrics below are defined once, here, over []Event; both backends'
// reports and `gostachio trace stats` compute them through these functions.
// All times are nanoseconds since the run started. Unless a function says
// otherwise it treats its events as one run: filter with FilterRun first
// when a trace holds several.

// Runs returns the distinct Run values of events, in order of first
// appearance.
func Runs(events []Event) []string {
	seen := map[string]bool{}
	var runs []string
	for i := range events {
		if r := events[i].Run; !seen[r] {
			seen[r] = true
			runs = append(runs, r)
		}
	}
	return runs
}

// FilterRun returns the events of run run, in their order (a new slice;
// the events are copied).
func FilterRun(events []Event, run string) []Event {
	var out []Event
	for i := range events {
		if events[i].Run == run {
			out = append(out, events[i])
		}
	}
	return out
}

// Makespan is the run's length: the largest End (runs start at 0, so the
// time before the first task starts counts: it is startup the run paid).
// 0 for no events.
func Makespan(events []Event) int64 {
	var m int64
	for i := range events {
		m = max(m, events[i].End)
	}
	return m
}

// interval is a half-open time interval [s, e).
type interval struct{ s, e int64 }

// unionLen is the total length of the union of ivs. It sorts ivs in place.
// Intervals with e <= s contribute nothing.
func unionLen(ivs []interval) int64 {
	slices.SortFunc(ivs, func(a, b interval) int { return cmp.Compare(a.s, b.s) })
	var total int64
	open := false
	var cs, ce int64
	for _, iv := range ivs {
		if iv.e <= iv.s {
			continue
		}
		switch {
		case !open:
			cs, ce, open = iv.s, iv.e, true
		case iv.s > ce:
			total += ce - cs
			cs, ce = iv.s, iv.e
		case iv.e > ce:
			ce = iv.e
		}
	}
	if open {
		total += ce - cs
	}
	return total
}

// ResourceStat is one resource's use during a run.
type ResourceStat struct {
	Res  event.Resource `json:"-"`
	Name string         `json:"resource"` // "nvme[0.1]"
	// Tasks is the number of tasks that ran on it.
	Tasks int `json:"tasks"`
	// Busy is the length of the union of its tasks' intervals: the time at
	// least one task ran on it.
	Busy int64 `json:"busy_ns"`
	// Work is the sum of its tasks' durations; Work > Busy when tasks
	// overlapped (an SSD with a queue depth, a GPU with concurrent kernels).
	Work int64 `json:"work_ns"`
	// Utilization is Busy / span (the span Resources was given).
	Utilization float64 `json:"utilization"`
	// Bytes is the sum of its tasks' Bytes (moved by transfers, input of
	// kernels and merges); Bandwidth = Bytes / Busy in bytes per second:
	// what the resource achieved while it was in use.
	Bytes     int64   `json:"bytes"`
	Bandwidth float64 `json:"bandwidth_bytes_per_s"`
	// Peak is the most tasks that ran on it at once.
	Peak int `json:"peak_concurrency"`
}

// Resources computes per-resource statistics, sorted by resource (kind,
// node, index); span is the denominator of Utilization (normally the
// Makespan; utilization is 0 when span <= 0).
func Resources(events []Event, span int64) []ResourceStat {
	byRes := map[event.Resource][]interval{}
	stats := map[event.Resource]*ResourceStat{}
	for i := range events {
		e := &events[i]
		st := stats[e.Res]
		if st == nil {
			st = &ResourceStat{Res: e.Res, Name: e.Res.String()}
			stats[e.Res] = st
		}
		st.Tasks++
		st.Work += max(e.Duration(), 0)
		st.Bytes += e.Bytes
		byRes[e.Res] = append(byRes[e.Res], interval{e.Start, e.End})
	}
	out := make([]ResourceStat, 0, len(stats))
	for r, st := range stats {
		ivs := byRes[r]
		st.Peak = peakConcurrency(ivs)
		st.Busy = unionLen(ivs)
		if span > 0 {
			st.Utilization = float64(st.Busy) / float64(span)
		}
		if st.Busy > 0 {
			st.Bandwidth = float64(st.Bytes) * 1e9 / float64(st.Busy)
		}
		out = append(out, *st)
	}
	slices.SortFunc(out, func(a, b ResourceStat) int { return compareRes(a.Res, b.Res) })
	return out
}

func compareRes(a, b event.Resource) int {
	if c := cmp.Compare(a.Kind, b.Kind); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Node, b.Node); c != 0 {
		return c
	}
	return cmp.Compare(a.Index, b.Index)
}

// peakConcurrency is the most intervals of ivs open at one instant (an
// interval ending at t does not overlap one starting at t).
func peakConcurrency(ivs []interval) int {
	type pt struct {
		t int64
		d int
	}
	pts := make([]pt, 0, 2*len(ivs))
	for _, iv := range ivs {
		if iv.e > iv.s {
			pts = append(pts, pt{iv.s, 1}, pt{iv.e, -1})
		}
	}
	// Ends before starts at equal times.
	slices.SortFunc(pts, func(a, b pt) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		return cmp.Compare(a.d, b.d)
	})
	cur, peak := 0, 0
	for _, p := range pts {
		cur += p.d
		peak = max(peak, cur)
	}
	return peak
}

// OverlapStat is how well a run overlapped its I/O with its computation:
//
//	io    = |∪ read intervals|                 (time storage was busy)
//	cpu   = Σ CPU task durations / slots       (h2d, kernel, d2h, send, merge)
//	bound = max(io, cpu)
//	efficiency = bound / makespan
//
// bound is what the run would take if the busier of the two were never
// idle and the other hid completely behind it: efficiency 1 is perfect
// overlap; a run that never overlaps gets max(io, cpu) / (io + cpu), 1/2
// when both weigh the same. It is the formula of engine.OverlapOf (times in
// ns here), which returns the same values.
type OverlapStat struct {
	Makespan   int64   `json:"makespan_ns"`
	IOBusy     int64   `json:"io_busy_ns"`
	CPUWork    int64   `json:"cpu_work_ns"`
	Bound      int64   `json:"bound_ns"`
	Efficiency float64 `json:"efficiency"`
}

// Overlap computes OverlapStat; slots is the number of CPU slots the CPU
// tasks shared (values < 1 count as 1). CPUWork is the integer quotient
// Σ durations / slots, as in engine.OverlapOf.
func Overlap(events []Event, slots int) OverlapStat {
	var o OverlapStat
	var reads []interval
	var cpuNs int64
	for i := range events {
		e := &events[i]
		o.Makespan = max(o.Makespan, e.End)
		switch e.Kind {
		case event.TaskRead:
			reads = append(reads, interval{e.Start, e.End})
		case event.TaskH2D, event.TaskKernel, event.TaskD2H, event.TaskSend, event.TaskMerge:
			cpuNs += e.End - e.Start
		}
	}
	if slots < 1 {
		slots = 1
	}
	o.IOBusy = unionLen(reads)
	o.CPUWork = cpuNs / int64(slots)
	o.Bound = max(o.IOBusy, o.CPUWork)
	if o.Makespan > 0 {
		o.Efficiency = float64(o.Bound) / float64(o.Makespan)
	}
	return o
}

// CPUSlots estimates the CPU slots of an engine run from its trace: the
// most CPU tasks (the kinds Overlap counts as cpu) that ran at once. It is
// a lower bound of the real slot count, equal to it whenever the run ever
// saturated its slots. At least 1.
func CPUSlots(events []Event) int {
	var ivs []interval
	for i := range events {
		switch events[i].Kind {
		case event.TaskH2D, event.TaskKernel, event.TaskD2H, event.TaskSend, event.TaskMerge:
			ivs = append(ivs, interval{events[i].Start, events[i].End})
		}
	}
	return max(peakConcurrency(ivs), 1)
}

// unitKey identifies a unit; devKey a device of a run.
type unitKey struct {
	run                  string
	node, pipeline, unit int32
}

type devKey struct {
	run          string
	node, device int32
}

// sortByEnd sorts idx (indices into events) by End, then by start order.
func sortByEnd(events []Event, idx []int32, pos []int32) {
	sort.Slice(idx, func(a, b int) bool {
		ea, eb := &events[idx[a]], &events[idx[b]]
		if ea.End != eb.End {
			return ea.End < eb.End
		}
		return pos[idx[a]] < pos[idx[b]]
	})
}
