package traces

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"gostachio/traces/event"
)

// slowReads is one device whose reads are slow: each unit's read takes
// 100 ns, its copy 10 and its kernel 20, so the kernel mostly waits.
//
//	unit 0: read [0,100)   h2d [100,110)  kernel [110,130)
//	unit 1: read [100,200) h2d [200,210)  kernel [215,235)  (5 ns queued)
//	unit 2: read [200,300) h2d [300,310)  kernel [310,330)
func slowReads() []Event {
	const R, H, K = event.TaskRead, event.TaskH2D, event.TaskKernel
	return []Event{
		ev(R, nvme0, 0, 0, 0, 0, 100, 100),
		ev(H, h2d0, 0, 0, 0, 100, 110, 100),
		ev(R, nvme0, 0, 1, 0, 100, 200, 100),
		ev(K, gpu0, 0, 0, 0, 110, 130, 100),
		ev(H, h2d0, 0, 1, 0, 200, 210, 100),
		ev(R, nvme0, 0, 2, 0, 200, 300, 100),
		ev(K, gpu0, 0, 1, 0, 215, 235, 100),
		ev(H, h2d0, 0, 2, 0, 300, 310, 100),
		ev(K, gpu0, 0, 2, 0, 310, 330, 100),
	}
}

func TestStarvationSlowReads(t *testing.T) {
	got := Starvation(slowReads())
	want := []StageStarvation{
		{
			// h2d window [100,310) = 210; busy [100,110) [200,210)
			// [300,310) = 30; idle 180; reads end exactly when copies start,
			// so nothing is ever queued: all 180 idle ns are starved.
			Producer: StageRead, Consumer: StageH2D, Units: 3,
			Window: 210, Busy: 30, Idle: 180, Starved: 180, Blocked: 0,
		},
		{
			// kernel window [110,330) = 220; busy [110,130) [215,235)
			// [310,330) = 60; idle [130,215) and [235,310) = 160; unit 1
			// was ready in [210,215): 5 ns blocked, 155 starved. Queue:
			// 1 from 210, 0 from 215; mean 5/220.
			Producer: StageH2D, Consumer: StageKernel, Units: 3,
			Window: 220, Busy: 60, Idle: 160, Starved: 155, Blocked: 5,
			MaxQueue: 1, MeanQueue: 5.0 / 220,
			Queue: []QueueSample{{210, 1}, {215, 0}},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("starvation\n got %+v\nwant %+v", got, want)
	}
	var b bytes.Buffer
	if err := WriteStarvation(&b, got); err != nil {
		t.Fatal(err)
	}
	// 155/220 = 70.5%; the copies were starved too (180/210), so reads are
	// the root.
	if !strings.Contains(b.String(), "node 0 device 0: kernel starved by read (through h2d) 70.5% of its span") {
		t.Fatalf("verdict:\n%s", b.String())
	}
}

func TestStarvationFastReads(t *testing.T) {
	// Reads long done before the kernel runs: the kernel (window [100,160),
	// busy throughout but for [120,130)) is never starved: when it idles a
	// unit is ready (blocked, not starved).
	const R, H, K = event.TaskRead, event.TaskH2D, event.TaskKernel
	events := []Event{
		ev(R, nvme0, 0, 0, 0, 0, 10, 1), ev(R, nvme0, 0, 1, 0, 10, 20, 1),
		ev(H, h2d0, 0, 0, 0, 20, 30, 1), ev(H, h2d0, 0, 1, 0, 30, 40, 1),
		ev(K, gpu0, 0, 0, 0, 100, 120, 1), ev(K, gpu0, 0, 1, 0, 130, 160, 1),
	}
	got := Starvation(events)
	k := got[1]
	// Queue: unit 0 ready [30,100), unit 1 [40,130): 1 at 30, 2 at 40, 1
	// at 100, 0 at 130. Window [100,160): idle [120,130) with unit 1 ready.
	if k.Consumer != StageKernel || k.Window != 60 || k.Idle != 10 || k.Starved != 0 || k.Blocked != 10 || k.MaxQueue != 2 {
		t.Fatalf("kernel pair %+v", k)
	}
	if !reflect.DeepEqual(k.Queue, []QueueSample{{30, 1}, {40, 2}, {100, 1}, {130, 0}}) {
		t.Fatalf("queue %v", k.Queue)
	}
	// Mean over the window [100,160): 1 for 30 ns, 0 for 30 ns.
	if k.MeanQueue != 0.5 {
		t.Fatalf("mean queue %v", k.MeanQueue)
	}
	if v := Verdict(got); !strings.HasPrefix(v, "kernel not starved") {
		t.Fatalf("verdict %q", v)
	}
}

// TestStarvationBruteForce compares Starvation with a per-nanosecond
// evaluation of its definition on random units of two devices and two
// pipelines, with pipeline-wide kernels among them.
func TestStarvationBruteForce(t *testing.T) {
	const R, H, K = event.TaskRead, event.TaskH2D, event.TaskKernel
	rng := rand.New(rand.NewPCG(3, 4))
	const T = 400
	for iter := 0; iter < 100; iter++ {
		var events []Event
		type unit struct {
			dev, pipe    int32
			endP, startC [3]int64 // by pair: producer end, consumer start
			has          [4]bool
		}
		var units []unit
		for u := int32(0); u < int32(2+rng.IntN(8)); u++ {
			d, p := int32(rng.IntN(2)), int32(rng.IntN(2))
			gpu := event.Resource{Kind: event.ResGPU, Index: d}
			un := unit{dev: d, pipe: p}
			t0 := rng.Int64N(150)
			var st [4][2]int64
			for s, k := range []event.TaskKind{R, H, K} {
				if rng.IntN(6) == 0 && s == 0 {
					continue // a unit without reads
				}
				n := 1 + rng.IntN(2)
				lo, hi := t0, t0
				for i := 0; i < n; i++ {
					s0 := t0 + rng.Int64N(10)
					e0 := s0 + rng.Int64N(30)
					res := gpu
					if k == R {
						res = nvme0
					} else if k == H {
						res = h2d0
					}
					events = append(events, ev(k, res, p, u, d, s0, e0, 1))
					if i == 0 || s0 < lo {
						lo = s0
					}
					hi = max(hi, e0)
				}
				un.has[s] = true
				st[s] = [2]int64{lo, hi}
				t0 = hi + rng.Int64N(20)
			}
			for pr := 0; pr < 2; pr++ {
				un.endP[pr], un.startC[pr] = st[pr][1], st[pr+1][0]
			}
			units = append(units, un)
		}
		// Pipeline-wide kernels keep the consumer busy but are no unit.
		for i := 0; i < rng.IntN(3); i++ {
			s := rng.Int64N(300)
			events = append(events, ev(K, gpu0, 0, -1, 0, s, s+rng.Int64N(20), 1))
		}
		got := Starvation(events)
		var want []StageStarvation
		for d := int32(0); d < 2; d++ {
			for pr := 0; pr < 2; pr++ {
				c := Stage(pr + 1)
				var win, ready [T]int
				var busy [T]bool
				n := 0
				for p := int32(0); p < 2; p++ {
					lo, hi, any := int64(0), int64(0), false
					for i, u := range units {
						if u.dev != d || u.pipe != p || !u.has[pr] || !u.has[pr+1] {
							continue
						}
						// consumer stage end: latest End of its tasks
						var ce int64
						for _, e := range events {
							if e.Unit == int32(i) && e.Unit >= 0 {
								if s, _ := stageOf(e.Kind); s == c {
									ce = max(ce, e.End)
								}
							}
						}
						if !any || u.startC[pr] < lo {
							lo = u.startC[pr]
						}
						hi, any = max(hi, ce), true
						n++
						for t := u.endP[pr]; t < u.startC[pr]; t++ {
							ready[t]++
						}
					}
					for t := lo; any && t < hi; t++ {
						win[t]++
					}
				}
				if n == 0 {
					continue
				}
				for _, e := range events {
					if s, ok := stageOf(e.Kind); ok && s == c && e.Device == d {
						for t := e.Start; t < e.End; t++ {
							busy[t] = true
						}
					}
				}
				s := StageStarvation{Device: d, Producer: Stage(pr), Consumer: c, Units: n}
				for t := 0; t < T; t++ {
					if win[t] == 0 {
						continue
					}
					s.Window++
					if !busy[t] {
						s.Idle++
						if ready[t] == 0 {
							s.Starved++
						}
					}
				}
				s.Busy, s.Blocked = s.Window-s.Idle, s.Idle-s.Starved
				want = append(want, s)
			}
		}
		// Compare the measures (device order may differ: Starvation sorts
		// by device, as want does).
		if len(got) != len(want) {
			t.Fatalf("iter %d: %d pairs, want %d\n got %+v\nwant %+v", iter, len(got), len(want), got, want)
		}
		for i := range got {
			g := got[i]
			g.Queue, g.MaxQueue, g.MeanQueue = nil, 0, 0
			if !reflect.DeepEqual(g, want[i]) {
				t.Fatalf("iter %d pair %d:\n got %+v\nwant %+v", iter, i, g, want[i])
			}
		}
	}
}
