package engine

import (
	"context"
	"sync"
	"testing"

	"gostachio/plan"
	"gostachio/scheduler"
)

type taskLog struct {
	mu sync.Mutex
	ev []scheduler.Event
}

func (l *taskLog) Record(e scheduler.Event) {
	l.mu.Lock()
	l.ev = append(l.ev, e)
	l.mu.Unlock()
}

// A partial aggregate whose sink is a shuffle (q18's quantity per order)
// ends on every device in an emission kernel that emits the state's
// groups (its rows are the groups, so the devices' add up to the orders
// seen) and finishes before any send of that pipeline starts: the sends
// only move what the kernel split.
func TestStateEmittedInAKernel(t *testing.T) {
	ds := testData(t, 0.01)
	for _, policy := range []string{"serial", "overlap"} {
		log := &taskLog{}
		if _, err := runQuery(context.Background(), ds, "q18", QueryOptions{Policy: policy, Devices: 3, Trace: log}); err != nil {
			t.Fatal(err)
		}
		emitted := map[int32]scheduler.Event{} // device -> emission of pipeline 0
		var groups int64
		for _, e := range log.ev {
			if e.Pipeline == 0 && e.Kind == scheduler.TaskKernel && e.Unit < 0 {
				if e.OpKind != plan.OpShuffle {
					t.Errorf("%s: pipeline 0 flush kernel is %s, want shuffle", policy, e.OpKind)
				}
				if _, dup := emitted[e.Device]; dup {
					t.Errorf("%s: device %d emitted its state twice", policy, e.Device)
				}
				emitted[e.Device] = e
				groups += e.Rows
			}
		}
		folded := map[int32]bool{} // devices that folded units of pipeline 0
		for _, e := range log.ev {
			if e.Pipeline == 0 && e.Kind == scheduler.TaskKernel && e.Unit >= 0 {
				folded[e.Device] = true
			}
		}
		if len(emitted) == 0 || len(emitted) != len(folded) {
			t.Fatalf("%s: %d devices emitted pipeline 0's state, %d folded units of it", policy, len(emitted), len(folded))
		}
		// Orders at SF0.01: 15,000; every one has lines, and a device's
		// state holds the orders of the lines it read (lineitem is stored
		// by order, so an order is split over devices only at chunk edges).
		if groups < 15000 || groups > 15000+64 {
			t.Errorf("%s: the devices emitted %d groups, want the 15000 orders (+ a few split at chunk edges)", policy, groups)
		}
		for _, e := range log.ev {
			if e.Pipeline == 0 && e.Kind == scheduler.TaskSend {
				if em := emitted[e.Device]; e.Start < em.End {
					t.Errorf("%s: send %d of device %d started at %d, before its state was emitted (%d)", policy, e.Task, e.Device, e.Start, em.End)
				}
			}
		}
	}
}
