package engine

import (
	"testing"
	"time"

	"gostachio/scheduler"
)

func TestOverlapOfHandComputed(t *testing.T) {
	ms := func(v int) scheduler.Time { return scheduler.Time(time.Duration(v) * time.Millisecond) }
	ev := []scheduler.Event{
		// reads: [0,10) and [5,20) overlap -> 20 ms busy; [30,40) -> 10 more.
		{Kind: scheduler.TaskRead, Start: ms(0), End: ms(10)},
		{Kind: scheduler.TaskRead, Start: ms(5), End: ms(20)},
		{Kind: scheduler.TaskRead, Start: ms(30), End: ms(40)},
		// CPU: 10 + 30 + 20 = 60 ms over 2 slots -> 30 ms.
		{Kind: scheduler.TaskH2D, Start: ms(20), End: ms(30)},
		{Kind: scheduler.TaskKernel, Start: ms(20), End: ms(50)},
		{Kind: scheduler.TaskMerge, Start: ms(40), End: ms(60)},
		// syncs cost no CPU work.
		{Kind: scheduler.TaskSync, Start: ms(0), End: ms(60)},
	}
	o := OverlapOf(ev, 2)
	if o.IOBusy != 30*time.Millisecond || o.CPUWork != 30*time.Millisecond || o.Makespan != 60*time.Millisecond {
		t.Fatalf("got io %v cpu %v makespan %v, want 30ms 30ms 60ms", o.IOBusy, o.CPUWork, o.Makespan)
	}
	if o.Bound != 30*time.Millisecond || o.Efficiency != 0.5 {
		t.Fatalf("bound %v efficiency %v, want 30ms 0.5", o.Bound, o.Efficiency)
	}
	if z := OverlapOf(nil, 0); z.Efficiency != 0 || z.Bound != 0 {
		t.Fatalf("empty run: %+v", z)
	}
}
