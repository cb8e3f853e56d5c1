package traces

import (
	"reflect"
	"testing"

	"gostachio/traces/event"
)

func TestCriticalPathHand(t *testing.T) {
	const R, H, K, M = event.TaskRead, event.TaskH2D, event.TaskKernel, event.TaskMerge
	h2d1 := event.Resource{Kind: event.ResH2D, Index: 1}
	r0 := ev(R, nvme0, 0, 0, 0, 0, 100, 0)
	h0 := ev(H, h2d0, 0, 0, 0, 100, 110, 0)
	k0 := ev(K, gpu0, 0, 0, 0, 110, 200, 0)
	r1 := ev(R, nvme1, 0, 1, 0, 0, 150, 0)
	h1 := ev(H, h2d1, 0, 1, 0, 150, 160, 0)
	k1 := ev(K, gpu0, 0, 1, 0, 200, 260, 0) // data ready at 160, GPU busy until 200
	m := ev(M, host0, 0, -1, -1, 270, 280, 0)
	other := ev(K, gpu0, 0, 0, 0, 0, 50, 0)
	other.Run = "other run" // ignored: not the last-ending event's run
	events := []Event{m, k1, r1, other, h1, k0, h0, r0}
	// Backwards from the merge (ends last at 280): a node-wide task of
	// pipeline 0 → the latest-ending task of the pipeline by 270 is k1
	// (260). k1: its unit's h2d ended at 160 but k0 freed the GPU at 200 →
	// k0. k0 → its copy h0 (110) → its read r0 (100) → nothing before 0.
	got := CriticalPath(events)
	want := []Event{r0, h0, k0, k1, m}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("path\n got %+v\nwant %+v", got, want)
	}
	// busy 100 + 10 + 90 + 60 + 10 = 270 of 280; the gap [260,270) waits.
	sum := SummarizePath(got)
	wantSum := PathSummary{Tasks: 5, End: 280, Busy: 270, Wait: 10, ByKind: []KindTime{
		{"read", 1, 100}, {"h2d", 1, 10}, {"kernel", 2, 150}, {"merge", 1, 10}}}
	if !reflect.DeepEqual(sum, wantSum) {
		t.Fatalf("summary\n got %+v\nwant %+v", sum, wantSum)
	}
	if CriticalPath(nil) != nil {
		t.Fatal("path of nothing")
	}
}

func TestCriticalPathDependencies(t *testing.T) {
	const R, K, S = event.TaskRead, event.TaskKernel, event.TaskSync
	// Pipeline 1's first read (unit 0) starts at 300 after pipeline 0's
	// last task (a sync ending at 290); its own metadata read (pipeline
	// wide) ended earlier, at 120, and the previous read on its SSD at 100:
	// the pipeline dependency is the latest → the sync.
	meta := ev(R, nvme1, 1, -1, -1, 20, 120, 0)
	meta.Meta = true
	p0r := ev(R, nvme0, 0, 0, 0, 0, 100, 0)
	p0k := ev(K, gpu0, 0, 0, 0, 100, 280, 0)
	p0s := ev(S, host0, 0, -1, 0, 285, 290, 0)
	p1r := ev(R, nvme0, 1, 0, 0, 300, 400, 0)
	// Another read of the same unit, ended just before: reads of a unit
	// do not wait for each other, so it is no predecessor of p1r.
	p1r2 := ev(R, nvme1, 1, 0, 0, 290, 295, 0)
	// Zero-length syncs at the same instant must not loop.
	z1 := ev(S, host0, 1, -1, 0, 400, 400, 0)
	z2 := ev(S, host0, 1, -1, 0, 400, 400, 0)
	got := CriticalPath([]Event{meta, p0r, p0k, p0s, p1r, p1r2, z1, z2})
	// z2 (last by index among equal ones) ← z1 (same pipeline and device,
	// earlier position) ← p1r ← p0s ← p0k ← p0r.
	want := []Event{p0r, p0k, p0s, p1r, z1, z2}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("path\n got %+v\nwant %+v", got, want)
	}
}
