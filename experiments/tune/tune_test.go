package tune

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"strings"
	"sync/atomic"
	"testing"

	"gostachio/internal/units"
	"gostachio/scheduler"
)

// bowl is a synthetic objective with a known optimum, chunk=16MiB and
// depth=6 (overlap's defaults, 64MiB and 8, are 2 and 2 steps away):
//
//	t = 1 + 0.02·(log2(chunk/16MiB))² + 0.01·(depth − 6)², × (1 ± noise)
//
// the noise uniform, drawn from a hash of the candidate and repetition.
// calls counts its evaluations.
func bowl(noise float64, calls *atomic.Int64) Evaluator {
	return func(_ context.Context, c Candidate, rep int) (float64, error) {
		calls.Add(1)
		chunk, depth := 64.0*(1<<20), 8.0
		for _, it := range strings.Split(c.Set, ",") {
			k, v, _ := strings.Cut(it, "=")
			switch k {
			case "chunk":
				n, err := units.ParseBytes(v)
				if err != nil {
					return 0, err
				}
				chunk = float64(n)
			case "depth":
				fmt.Sscan(v, &depth)
			}
		}
		h := fnv.New64a()
		fmt.Fprintf(h, "%s|%s|%d", c.Policy, c.Set, rep)
		u := float64(h.Sum64()%1e6)/1e6*2 - 1
		l := math.Log2(chunk / (16 << 20))
		return (1 + 0.02*l*l + 0.01*(depth-6)*(depth-6)) * (1 + noise*u), nil
	}
}

func bowlOptions(t *testing.T, budget int, seed uint64, workers int) Options {
	t.Helper()
	sp, err := NewSpace([]string{"chunk", "depth", "adaptive"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return Options{Space: sp, Policy: "overlap", Baseline: Candidate{Policy: "overlap"}, Budget: budget, Seed: seed, Workers: workers}
}

// TestSearchFindsOptimum searches the bowl under 2% noise and must find
// its minimum, with a gain over overlap's defaults whose interval
// excludes 1 and holds the true gain.
func TestSearchFindsOptimum(t *testing.T) {
	var calls atomic.Int64
	out, err := Search(context.Background(), bowlOptions(t, 150, 1, 2), bowl(0.02, &calls))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.Best.Set, "chunk=16MiB") || !strings.Contains(out.Best.Set, "depth=6") {
		t.Errorf("best %s, want chunk=16MiB,depth=6", out.Best.Set)
	}
	// True gain: overlap's defaults cost 1 + 0.02·4 + 0.01·4 = 1.12.
	if !(out.GainLo > 1 && out.GainLo <= 1.12 && 1.12 <= out.GainHi) {
		t.Errorf("gain %.3f [%.3f, %.3f], want an interval above 1 holding 1.12", out.Gain, out.GainLo, out.GainHi)
	}
	if out.Candidates < 5 || out.Share <= 0 || out.Share > 1 || out.GridSize != 9*8*2 {
		t.Errorf("looked at %d candidates, share %v of %v", out.Candidates, out.Share, out.GridSize)
	}
	if len(out.Rounds) == 0 || out.Proposed == 0 {
		t.Errorf("rounds %v, proposed %d", out.Rounds, out.Proposed)
	}
}

// TestSearchDeterministic: the same seed gives the same outcome, whatever
// the number of workers; another seed is allowed to differ.
func TestSearchDeterministic(t *testing.T) {
	run := func(seed uint64, workers int) string {
		var calls atomic.Int64
		out, err := Search(context.Background(), bowlOptions(t, 80, seed, workers), bowl(0.05, &calls))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(out)
		return string(b)
	}
	a := run(7, 1)
	if b := run(7, 1); a != b {
		t.Errorf("seed 7 twice:\n%s\n%s", a, b)
	}
	if b := run(7, 3); a != b {
		t.Errorf("seed 7 with 1 and 3 workers:\n%s\n%s", a, b)
	}
}

// TestSearchBudget: no search runs more evaluations than its budget, and
// every one is counted.
func TestSearchBudget(t *testing.T) {
	for _, budget := range []int{20, 47, 120, 300} {
		var calls atomic.Int64
		out, err := Search(context.Background(), bowlOptions(t, budget, 3, 2), bowl(0.05, &calls))
		if err != nil {
			t.Fatal(err)
		}
		if n := int(calls.Load()); n > budget || n != out.Simulations {
			t.Errorf("budget %d: %d evaluations, %d reported", budget, n, out.Simulations)
		}
	}
	var calls atomic.Int64
	if _, err := Search(context.Background(), bowlOptions(t, 10, 1, 1), bowl(0, &calls)); err == nil || !strings.Contains(err.Error(), "budget 10") {
		t.Errorf("budget 10: %v", err)
	}
}

// TestNewSpace checks levels from the knob table, ranges and errors.
func TestNewSpace(t *testing.T) {
	sp, err := NewSpace([]string{"chunk", "depth", "dynbuf", "msg"}, map[string]string{"chunk": "4MiB:32MiB", "depth": "2:4", "msg": "0:1MiB"})
	if err != nil {
		t.Fatal(err)
	}
	want := "chunk{4MiB,8MiB,16MiB,32MiB} depth{2,3,4} dynbuf{off,on} msg{0,4KiB,8KiB,16KiB,32KiB,64KiB,128KiB,256KiB,512KiB,1MiB}"
	if got := spaceString(sp); got != want {
		t.Errorf("space %s\nwant %s", got, want)
	}
	if sp.Size() != 4*3*2*10 {
		t.Errorf("size %v", sp.Size())
	}
	if got := sp.Set(sp.Index([]float64{1, 0, 0.5, -3})); got != "chunk=32MiB,depth=2,dynbuf=on,msg=0" {
		t.Errorf("set %s", got)
	}
	for _, c := range []struct {
		knobs  []string
		ranges map[string]string
		want   string
	}{
		{[]string{"chunks"}, nil, `unknown knob "chunks"`},
		{[]string{"pinned"}, nil, `no default levels: give them with --range pinned=LO:HI`},
		{[]string{"depth"}, map[string]string{"depth": "4:2"}, `--range depth="4:2"`},
		{[]string{"depth"}, map[string]string{"chunk": "1MiB:2MiB"}, `--range chunk: the knob is not searched`},
		{[]string{"depth", "depth"}, nil, `named twice`},
		{[]string{"dynbuf"}, map[string]string{"dynbuf": "on|maybe"}, `level "maybe" of knob dynbuf`},
	} {
		if _, err := NewSpace(c.knobs, c.ranges); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v %v: %v, want %q", c.knobs, c.ranges, err, c.want)
		}
	}
}

// TestTuneSim tunes q6 on one simulated node with a small budget: the
// report names the space, the budget and a gain with its interval, and
// the text says how much of the grid it looked at.
func TestTuneSim(t *testing.T) {
	var out bytes.Buffer
	o := TuneOptions{Profile: "dgx-a100", Nodes: 1, SF: 1, Query: "q6", Knobs: []string{"chunk", "depth"}, Budget: 40, Seed: 1, Jitter: 0.05, JSON: true}
	if err := Tune(context.Background(), o, &out); err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Outcome == nil || rep.Simulations > 40 || rep.Best.Policy != "overlap" || !(rep.GainLo <= rep.Gain && rep.Gain <= rep.GainHi) || rep.ProfileHash == "" {
		t.Errorf("report %s", out.String())
	}
	out.Reset()
	o.JSON = false
	o.Fixed = "depth=4"
	if err := Tune(context.Background(), o, &out); err == nil || !strings.Contains(err.Error(), "both searched and fixed") {
		t.Errorf("depth searched and fixed: %v", err)
	}
	o.Fixed = "devmem=8GiB"
	if err := Tune(context.Background(), o, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"looked at:", "candidates of a 72-point grid", "predicted gain over overlap devmem=8GiB:", "best: overlap devmem=8GiB,chunk="} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, out.String())
		}
	}
}

// TestSearchStalls: candidates that stall within the memory budget
// (scheduler.ErrStuck) are the slowest, not errors; when the baseline
// stalls and the best does not, the gain is unbounded.
func TestSearchStalls(t *testing.T) {
	var calls atomic.Int64
	inner := bowl(0.02, &calls)
	eval := func(ctx context.Context, c Candidate, rep int) (float64, error) {
		if c.Set == "" || strings.Contains(c.Set, "depth=8") || strings.Contains(c.Set, "depth=12") || strings.Contains(c.Set, "depth=16") {
			return 0, fmt.Errorf("sim: q1: %w", scheduler.ErrStuck)
		}
		return inner(ctx, c, rep)
	}
	out, err := Search(context.Background(), bowlOptions(t, 120, 1, 1), eval)
	if err != nil {
		t.Fatal(err)
	}
	if !out.BaselineStalls || out.Gain != 0 || out.BestConfirm.Stalled != 0 || out.BaselineConfirm.Stalled != out.ConfirmReps {
		t.Errorf("outcome %+v", out)
	}
	if _, err := json.Marshal(out); err != nil {
		t.Errorf("the outcome does not encode: %v", err)
	}
}
