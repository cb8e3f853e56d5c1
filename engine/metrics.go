package engine

import (
	"time"

	"gostachio/scheduler"
	"gostachio/traces"
)

// Overlap is how well a run overlapped its I/O with its computation; see
// traces.Overlap for the definition (io busy union vs CPU work over the
// slots; bound = max; efficiency = bound / makespan).
type Overlap struct {
	Makespan, IOBusy, CPUWork, Bound time.Duration
	Efficiency                       float64
}

// OverlapOf computes Overlap from a run's scheduler events; slots is the
// number of CPU slots the kernels shared.
func OverlapOf(events []scheduler.Event, slots int) Overlap {
	ev := make([]traces.Event, len(events))
	for i := range events {
		ev[i] = traces.FromScheduler("", events[i])
	}
	o := traces.Overlap(ev, slots)
	return Overlap{Makespan: time.Duration(o.Makespan), IOBusy: time.Duration(o.IOBusy), CPUWork: time.Duration(o.CPUWork),
		Bound: time.Duration(o.Bound), Efficiency: o.Efficiency}
}
