package engine

import (
	"sort"
	"time"

	"gostachio/scheduler"
)

// Overlap is how well a run overlapped its I/O with its computation.
//
//	io    = |∪ read intervals|                 (time storage was busy)
//	cpu   = Σ CPU task durations / slots       (h2d, kernel, d2h, send, merge)
//	bound = max(io, cpu)
//	efficiency = bound / makespan
//
// bound is what the run would take if the busier of the two were never
// idle and the other hid completely behind it: efficiency 1 is perfect
// overlap; a run that never overlaps gets max(io, cpu) / (io + cpu), 1/2
// when both weigh the same.
type Overlap struct {
	Makespan, IOBusy, CPUWork, Bound time.Duration
	Efficiency                       float64
}

// OverlapOf computes Overlap from a run's events; slots is the number of
// CPU slots the kernels shared.
func OverlapOf(events []scheduler.Event, slots int) Overlap {
	var o Overlap
	type iv struct{ s, e scheduler.Time }
	var reads []iv
	var cpuNs int64
	for i := range events {
		e := &events[i]
		o.Makespan = max(o.Makespan, time.Duration(e.End))
		switch e.Kind {
		case scheduler.TaskRead:
			reads = append(reads, iv{e.Start, e.End})
		case scheduler.TaskH2D, scheduler.TaskKernel, scheduler.TaskD2H, scheduler.TaskSend, scheduler.TaskMerge:
			cpuNs += int64(e.End - e.Start)
		}
	}
	sort.Slice(reads, func(i, j int) bool { return reads[i].s < reads[j].s })
	var busy int64
	var cs, ce scheduler.Time = -1, -1
	for _, r := range reads {
		if r.s > ce {
			if ce > cs {
				busy += int64(ce - cs)
			}
			cs, ce = r.s, r.e
		} else if r.e > ce {
			ce = r.e
		}
	}
	if ce > cs {
		busy += int64(ce - cs)
	}
	if slots < 1 {
		slots = 1
	}
	o.IOBusy = time.Duration(busy)
	o.CPUWork = time.Duration(cpuNs / int64(slots))
	o.Bound = max(o.IOBusy, o.CPUWork)
	if o.Makespan > 0 {
		o.Efficiency = float64(o.Bound) / float64(o.Makespan)
	}
	return o
}
