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

func runHookedLog(t *testing.T, q string, h func() Hooks) (Result, []string, error) {
	t.Helper()
	return runPolicyLog(t, q, "overlap", "adaptive=off,chunk=0,units=0", h)
}

// runPolicyLog runs q under the knobs of policy name with set, with the
// hooks h builds, and returns the order of the starts too.
func runPolicyLog(t *testing.T, q, name, set string, h func() Hooks) (Result, []string, error) {
	t.Helper()
	tables, _ := queries.Stats(0.05, 5000)
	p, err := queries.Build(q, 0.05, tables)
	if err != nil {
		t.Fatal(err)
	}
	base, err := NewPolicy(name, set)
	if err != nil {
		t.Fatal(err)
	}
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

// embedded overrides nothing: every decision goes through the Hooks
// interface to the embedded KnobHooks.
type embedded struct{ KnobHooks }

// TestKnobHooksPaths: the scheduler calls KnobHooks' hot hooks directly
// when they are a policy's hooks, and through the interface when a policy
// embeds them; both must decide the same, task for task.
func TestKnobHooksPaths(t *testing.T) {
	for _, tc := range []struct{ q, policy, set string }{
		{"q6", "serial", ""},
		{"q6", "double-buffer", ""},
		{"q3", "pipeline", ""},
		{"q3", "overlap", ""},
		{"q3", "overlap", "adaptive=off,window=3,msg=0"},
		{"q6", "overlap", "multipath=off,dynbuf=off,defer=off"},
	} {
		a, la, err := runPolicyLog(t, tc.q, tc.policy, tc.set, func() Hooks { return &KnobHooks{} })
		if err != nil {
			t.Fatal(err)
		}
		b, lb, err := runPolicyLog(t, tc.q, tc.policy, tc.set, func() Hooks { return &embedded{} })
		if err != nil {
			t.Fatal(err)
		}
		if a != b || strings.Join(la, " ") != strings.Join(lb, " ") {
			t.Errorf("%s %s %q: direct and interface paths differ: %+v vs %+v", tc.q, tc.policy, tc.set, a, b)
		}
	}
}
