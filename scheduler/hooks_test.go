package scheduler

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"gostachio/tpch/queries"
)

// badSSD places every read outside the node's SSDs.
type badSSD struct{ KnobHooks }

func (*badSSD) SSD(*View, int, int64) int { return 99 }

// reversed serves the stages in the opposite order (fill before drain)
// and gives later pipelines priority: a policy that differs from the
// knobs in two hooks.
type reversed struct{ KnobHooks }

var order = []Stage{StageRead, StageH2D, StageKernel, StageOut}

func (*reversed) Order(*View, int) []Stage    { return order }
func (*reversed) Priority(_ *View, p int) int { return p }

// counting counts what the live state showed it.
type counting struct {
	KnobHooks
	completed  int
	unobserved int
	maxBytes   int64
}

func (h *counting) Completed(v *View, c *Completion) {
	h.completed++
	if c.Task.Kind == TaskRead && v.Observed(c.Task.Res).Tasks == 0 {
		h.unobserved++
	}
}

func (h *counting) Passed(v *View, d int) bool {
	for i := 0; i < v.Topology().SSDs; i++ {
		h.maxBytes = max(h.maxBytes, v.InFlightBytes(Resource{Kind: ResNVMe, Node: int32(v.Node()), Index: int32(i)}))
	}
	return h.KnobHooks.Passed(v, d)
}

type hooked struct {
	Policy
	h func() Hooks
}

func (p hooked) Hooks() Hooks { return p.h() }

func runHooked(t *testing.T, q string, h func() Hooks) (Result, error) {
	res, _, err := runHookedLog(t, q, h)
	return res, err
}

// runHookedLog runs q under overlap's knobs (adaptive off) with the hooks
// h builds, and returns the order of the starts too.
func runHookedLog(t *testing.T, q string, h func() Hooks) (Result, []string, error) {
	t.Helper()
	tables, _ := queries.Stats(0.05, 5000)
	p, err := queries.Build(q, 0.05, tables)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := NewPolicy("overlap", "adaptive=off,chunk=0,units=0")
	topo := Topology{Nodes: 2, Devices: 2, SSDs: 2, NICs: 1, DeviceMem: 1 << 30, PinnedMem: 1 << 30}
	b := newTestBackend(topo, "fifo", 0)
	var log []string
	b.onStart = func(t *Task) { log = append(log, fmt.Sprintf("%d/%s/p%d", t.Node, t.Kind, t.Pipeline)) }
	res, err := Run(context.Background(), p, hooked{base, h}, b, nil)
	return res, log, err
}

// TestHookPlacementChecked: a policy's placement outside the topology
// ends the run with an error naming it, not a panic or a bad task.
func TestHookPlacementChecked(t *testing.T) {
	_, err := runHooked(t, "q6", func() Hooks { return &badSSD{} })
	if err == nil || !strings.Contains(err.Error(), "SSD 99 of 2") {
		t.Fatalf("err = %v, want the bad SSD named", err)
	}
}

// TestHooksDecide: overriding Order and Priority changes the run (the
// hooks are consulted), and it still completes with the same result.
func TestHooksDecide(t *testing.T) {
	a, la, err := runHookedLog(t, "q3", func() Hooks { return &KnobHooks{} })
	if err != nil {
		t.Fatal(err)
	}
	b, lb, err := runHookedLog(t, "q3", func() Hooks { return &reversed{} })
	if err != nil {
		t.Fatal(err)
	}
	if a.ResultRows != b.ResultRows || a.Tasks != b.Tasks {
		t.Fatalf("reversed order changed the work: %+v vs %+v", a, b)
	}
	if strings.Join(la, " ") == strings.Join(lb, " ") {
		t.Errorf("reversed order and priorities started the same tasks in the same order")
	}
}

// TestViewLiveState: Completed sees every completion, after the
// completion was counted in the resource's observed state.
func TestViewLiveState(t *testing.T) {
	var h *counting
	res, err := runHooked(t, "q6", func() Hooks { h = &counting{}; return h })
	if err != nil {
		t.Fatal(err)
	}
	// Two nodes: h is the last node's hooks, which saw that node's tasks.
	if h.completed == 0 || int64(h.completed) > res.Tasks || h.maxBytes <= 0 || h.unobserved > 0 {
		t.Errorf("hooks saw %d completions of %d (%d reads unobserved), %d bytes in flight at most", h.completed, res.Tasks, h.unobserved, h.maxBytes)
	}
}
