package traces

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"gostachio/traces/event"
)

// ev builds a test event: kind k on resource r (node 0 unless r says so),
// unit u of pipeline p on device d, [s, e), b bytes.
func ev(k event.TaskKind, r event.Resource, p, u, d int32, s, e, b int64) Event {
	return Event{Node: r.Node, Device: d, Res: r, Kind: k, Pipeline: p, Unit: u, Table: -1, Chunk: -1, Start: s, End: e, Bytes: b}
}

var (
	nvme0 = event.Resource{Kind: event.ResNVMe, Index: 0}
	nvme1 = event.Resource{Kind: event.ResNVMe, Index: 1}
	h2d0  = event.Resource{Kind: event.ResH2D, Index: 0}
	gpu0  = event.Resource{Kind: event.ResGPU, Index: 0}
	host0 = event.Resource{Kind: event.ResHost, Index: 0}
)

func TestMakespanResources(t *testing.T) {
	const R, K = event.TaskRead, event.TaskKernel
	events := []Event{
		ev(R, nvme0, 0, 0, 0, 0, 100, 1000),
		ev(K, gpu0, 0, 0, 0, 150, 250, 4000),
		ev(R, nvme0, 0, 1, 0, 50, 150, 1000),
		ev(R, nvme0, 0, 2, 0, 200, 300, 500),
		ev(K, gpu0, 0, 1, 0, 300, 400, 0),
	}
	if got := Makespan(events); got != 400 {
		t.Fatalf("makespan %d, want 400", got)
	}
	if got := Makespan(nil); got != 0 {
		t.Fatalf("makespan of nothing %d", got)
	}
	got := Resources(events, 400)
	want := []ResourceStat{
		// nvme: union [0,150) ∪ [200,300) = 250 ns busy; work 3×100; 2500 B
		// in 250 ns = 10 B/ns = 1e10 B/s; two reads overlap in [50,100).
		{Res: nvme0, Name: "nvme[0.0]", Tasks: 3, Busy: 250, Work: 300, Utilization: 250.0 / 400, Bytes: 2500, Bandwidth: 1e10, Peak: 2},
		// gpu: [150,250) ∪ [300,400) = 200 ns; 4000 B / 200 ns = 2e10 B/s.
		{Res: gpu0, Name: "gpu[0.0]", Tasks: 2, Busy: 200, Work: 200, Utilization: 0.5, Bytes: 4000, Bandwidth: 2e10, Peak: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("resources\n got %+v\nwant %+v", got, want)
	}
	// Span 0: no utilization, no division by zero.
	if r := Resources(events, 0); r[0].Utilization != 0 {
		t.Fatalf("utilization with span 0: %v", r[0].Utilization)
	}
}

func TestOverlapHand(t *testing.T) {
	const R, H, K, M, S = event.TaskRead, event.TaskH2D, event.TaskKernel, event.TaskMerge, event.TaskSync
	events := []Event{
		ev(R, nvme0, 0, 0, 0, 0, 100, 0),
		ev(R, nvme1, 0, 1, 0, 50, 150, 0),
		ev(R, nvme0, 0, 2, 0, 200, 300, 0),
		ev(H, h2d0, 0, 0, 0, 100, 150, 0),
		ev(K, gpu0, 0, 0, 0, 150, 250, 0),
		ev(K, gpu0, 0, 1, 0, 300, 400, 0),
		ev(M, host0, 0, -1, -1, 400, 500, 0),
		ev(S, host0, 0, -1, 0, 450, 460, 0), // syncs are neither io nor cpu
	}
	// io = |[0,150) ∪ [200,300)| = 250; cpu = 50 + 100 + 100 + 100 = 350;
	// makespan 500.
	for _, c := range []struct {
		slots int
		want  OverlapStat
	}{
		{1, OverlapStat{Makespan: 500, IOBusy: 250, CPUWork: 350, Bound: 350, Efficiency: 0.7}},
		{0, OverlapStat{Makespan: 500, IOBusy: 250, CPUWork: 350, Bound: 350, Efficiency: 0.7}},
		{2, OverlapStat{Makespan: 500, IOBusy: 250, CPUWork: 175, Bound: 250, Efficiency: 0.5}},
		{3, OverlapStat{Makespan: 500, IOBusy: 250, CPUWork: 116, Bound: 250, Efficiency: 0.5}}, // 350/3 truncated
	} {
		if got := Overlap(events, c.slots); got != c.want {
			t.Errorf("slots %d: got %+v, want %+v", c.slots, got, c.want)
		}
	}
	if got := Overlap(nil, 4); got != (OverlapStat{}) {
		t.Errorf("no events: %+v", got)
	}
	// Peak CPU concurrency: h2d [100,150) and kernel [150,250) touch, the
	// merge and the kernel [300,400) do not overlap: 1.
	if got := CPUSlots(events); got != 1 {
		t.Errorf("CPUSlots %d, want 1", got)
	}
	events = append(events, ev(K, gpu0, 0, 3, 0, 120, 160, 0))
	if got := CPUSlots(events); got != 2 {
		t.Errorf("CPUSlots %d, want 2", got)
	}
}

// TestBusyBruteForce checks union lengths, work, peak and the overlap io
// term against a per-nanosecond count on random intervals.
func TestBusyBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 200; iter++ {
		n := 1 + rng.IntN(12)
		var events []Event
		for i := 0; i < n; i++ {
			s := rng.Int64N(200)
			e := s + rng.Int64N(60) // zero-length tasks too
			k := event.TaskRead
			if rng.IntN(3) == 0 {
				k = event.TaskKernel
			}
			events = append(events, ev(k, nvme0, 0, int32(i), 0, s, e, 1))
		}
		var cover [300]int
		var readCover [300]bool
		var work int64
		for _, e := range events {
			work += e.End - e.Start
			for t := e.Start; t < e.End; t++ {
				cover[t]++
				if e.Kind == event.TaskRead {
					readCover[t] = true
				}
			}
		}
		var busy, readBusy int64
		peak := 0
		for t := range cover {
			if cover[t] > 0 {
				busy++
			}
			if readCover[t] {
				readBusy++
			}
			peak = max(peak, cover[t])
		}
		r := Resources(events, 1000)
		if len(r) != 1 || r[0].Busy != busy || r[0].Work != work || r[0].Peak != peak {
			t.Fatalf("iter %d: got %+v, want busy %d work %d peak %d", iter, r, busy, work, peak)
		}
		if o := Overlap(events, 1); o.IOBusy != readBusy {
			t.Fatalf("iter %d: io busy %d, want %d", iter, o.IOBusy, readBusy)
		}
	}
}

func TestRunsFilter(t *testing.T) {
	events := []Event{{Run: "b", End: 5}, {Run: "a", End: 7}, {Run: "b", End: 9}}
	if got := Runs(events); !reflect.DeepEqual(got, []string{"b", "a"}) {
		t.Fatalf("runs %v", got)
	}
	if got := FilterRun(events, "b"); len(got) != 2 || got[0].End != 5 || got[1].End != 9 {
		t.Fatalf("filter %v", got)
	}
}
