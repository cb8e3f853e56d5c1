package engine

import (
	"math"
	"testing"

	"gostachio/scheduler"
)

// TestGPUEfficiency: the busiest of reads, h2d copies and the other work,
// each the union of its intervals, over the makespan (by hand).
func TestGPUEfficiency(t *testing.T) {
	ev := func(k scheduler.TaskKind, s, e scheduler.Time) scheduler.Event {
		return scheduler.Event{Kind: k, Start: s, End: e}
	}
	for _, c := range []struct {
		name string
		ev   []scheduler.Event
		want float64
	}{
		// Reads 0-40 and 30-60 (union 60), h2d 40-50, kernels 50-100
		// and 60-70 (union 50): 60 / 100.
		{"reads busiest", []scheduler.Event{ev(scheduler.TaskRead, 0, 40), ev(scheduler.TaskRead, 30, 60),
			ev(scheduler.TaskH2D, 40, 50), ev(scheduler.TaskKernel, 50, 100), ev(scheduler.TaskKernel, 60, 70)}, 0.6},
		// Serial: read 0-10, h2d 10-20, kernel 20-30, read 30-40, ...:
		// every resource busy 20 of 60.
		{"serial", []scheduler.Event{ev(scheduler.TaskRead, 0, 10), ev(scheduler.TaskH2D, 10, 20), ev(scheduler.TaskKernel, 20, 30),
			ev(scheduler.TaskRead, 30, 40), ev(scheduler.TaskH2D, 40, 50), ev(scheduler.TaskMerge, 50, 60)}, 20.0 / 60},
		{"empty", nil, 0},
	} {
		if got := gpuEfficiency(c.ev); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
