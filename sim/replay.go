package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"gostachio/plan"
	"gostachio/scheduler"
	"gostachio/traces"
)

// ReplayOptions are the inputs of `gostachio sim --replay`.
type ReplayOptions struct {
	// Events and Meta are the recorded engine trace (traces.Load); it
	// must hold one run, named "QUERY/POLICY" as the engine names it.
	Events []traces.Event
	Meta   traces.Meta
	// Profile is the hardware profile to simulate on.
	Profile string
	// Plan is the recorded run's plan, built over the tables of its
	// dataset as the run built it (TraceRun names the query and the
	// dataset folder); SF is the scale factor it was built at (reported
	// only).
	Plan *plan.Plan
	SF   float64
	// Policy and Set: the policy to re-simulate under ("": the recorded
	// one, with Set as given).
	Policy, Set string
	JSON        bool
}

// TraceRun returns the query and policy of a recorded engine run (its Run
// "q3/overlap") and the dataset folder its title names ("engine q3
// overlap on DIR"; "" if the title has none).
func TraceRun(events []traces.Event, meta traces.Meta) (query, policy, dataDir string, err error) {
	runs := traces.Runs(events)
	if len(runs) != 1 {
		return "", "", "", fmt.Errorf("sim: replay: the trace holds %d runs, want one", len(runs))
	}
	q, pol, _ := strings.Cut(runs[0], "/")
	pol, _, _ = strings.Cut(pol, "/")
	if q == "" {
		return "", "", "", fmt.Errorf("sim: replay: run %q does not name a query (want QUERY/POLICY)", runs[0])
	}
	if _, d, ok := strings.Cut(meta.Title, " on "); ok {
		dataDir = strings.TrimSpace(d)
	}
	return q, pol, dataDir, nil
}

// RunReplay is `gostachio sim --replay`: it re-simulates the recorded
// run's plan with the kernels' and merges' real output sizes
// from the trace (Replay), under the recorded policy or another one, and
// prints the report with the recorded makespan beside it.
func RunReplay(ctx context.Context, opts ReplayOptions, stdout io.Writer) error {
	query, recPolicy, _, err := TraceRun(opts.Events, opts.Meta)
	if err != nil {
		return err
	}
	if opts.Policy == "" {
		opts.Policy = recPolicy
	}
	prof, err := LoadProfile(opts.Profile)
	if err != nil {
		return err
	}
	p := opts.Plan
	if p == nil {
		return fmt.Errorf("sim: replay: no plan to simulate")
	}
	if p.Name != query {
		return fmt.Errorf("sim: replay: the trace records %s, the plan is %s", query, p.Name)
	}
	pol, err := scheduler.NewPolicy(opts.Policy, opts.Set)
	if err != nil {
		return fmt.Errorf("sim: replay: %w", err)
	}
	rep, matched, err := Replay(ctx, p, prof, pol, opts.Events)
	if err != nil {
		return err
	}
	rep.SF = opts.SF
	recorded := traces.Makespan(opts.Events)
	if opts.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			*Report
			RecordedNs     int64  `json:"recorded_ns"`
			RecordedPolicy string `json:"recorded_policy"`
			RealSizes      int    `json:"real_sizes"`
		}{rep, recorded, recPolicy, matched})
	}
	fmt.Fprintf(stdout, "replay of %s (recorded under %s: %s); %d kernel/merge outputs from the trace\n",
		query, recPolicy, scheduler.Time(recorded), matched)
	if err := rep.WriteText(stdout); err != nil {
		return err
	}
	if opts.Policy == recPolicy && recorded > 0 {
		fmt.Fprintf(stdout, "simulated / recorded: %.3f\n", float64(rep.MakespanNs)/float64(recorded))
	}
	return nil
}

// Replay simulates p under pol on one node of prof with every kernel's
// and merge's output size taken from the recorded engine events where they
// match (see realSizes), estimates elsewhere. It returns the report and
// how many completions used a recorded size.
func Replay(ctx context.Context, p *plan.Plan, prof *Profile, pol scheduler.Policy, events []traces.Event) (*Report, int, error) {
	c, err := NewCluster(prof, 1)
	if err != nil {
		return nil, 0, err
	}
	rs := newRealSizes(events)
	matched := 0
	c.SetOutputs(func(t *scheduler.Task) (int64, int64, bool) {
		rows, ok := rs.rows(t)
		if !ok {
			return 0, 0, false
		}
		matched++
		bytes := t.EstBytes
		if t.EstRows > 0 {
			bytes = int64(float64(t.EstBytes) / float64(t.EstRows) * float64(rows))
		}
		return bytes, rows, true
	})
	res, err := scheduler.Run(ctx, p, pol, c, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("sim: replay of %s under %s: %w", p.Name, pol.Name(), err)
	}
	return c.report(p.Name, pol.Name(), res), matched, nil
}

// realSizes holds a trace's kernel and merge output rows, keyed so that
// another policy's tasks can find them:
//
//   - a scan unit's kernel: its rows spread evenly over the stored chunks
//     the unit read (from its read events), so a task covering chunks
//     [Chunk, Chunk+Chunks) of the same pipeline sums them (all must be
//     known);
//   - any other kernel: by pipeline, device and whether it is a
//     pipeline's finalize step (Unit < 0), the mean over the recorded
//     kernels of that key;
//   - a merge: by pipeline.
//
// Output bytes are not in traces; Replay scales the estimate's width.
type realSizes struct {
	chunk  map[[2]int32]float64  // pipeline, chunk -> rows
	other  map[[3]int32][2]int64 // pipeline, device, finalize -> rows, kernels
	merges map[int32]int64
}

func newRealSizes(events []traces.Event) *realSizes {
	rs := &realSizes{chunk: map[[2]int32]float64{}, other: map[[3]int32][2]int64{}, merges: map[int32]int64{}}
	unitChunks := map[[2]int32][]int32{}
	for _, e := range events {
		if e.Kind == scheduler.TaskRead && !e.Meta && e.Chunk >= 0 {
			k := [2]int32{e.Pipeline, e.Unit}
			if !slices.Contains(unitChunks[k], e.Chunk) {
				unitChunks[k] = append(unitChunks[k], e.Chunk)
			}
		}
	}
	for _, e := range events {
		switch e.Kind {
		case scheduler.TaskKernel:
			if chs := unitChunks[[2]int32{e.Pipeline, e.Unit}]; e.Unit >= 0 && len(chs) > 0 {
				for _, ch := range chs {
					rs.chunk[[2]int32{e.Pipeline, ch}] += float64(e.Rows) / float64(len(chs))
				}
				continue
			}
			fin := int32(0)
			if e.Unit < 0 {
				fin = 1
			}
			k := [3]int32{e.Pipeline, e.Device, fin}
			v := rs.other[k]
			rs.other[k] = [2]int64{v[0] + e.Rows, v[1] + 1}
		case scheduler.TaskMerge:
			rs.merges[e.Pipeline] += e.Rows
		}
	}
	return rs
}

func (rs *realSizes) rows(t *scheduler.Task) (int64, bool) {
	if t.Kind == scheduler.TaskMerge {
		r, ok := rs.merges[t.Pipeline]
		return r, ok
	}
	if t.Unit >= 0 && t.Chunk >= 0 && t.Chunks > 0 {
		var sum float64
		for ch := t.Chunk; ch < t.Chunk+t.Chunks; ch++ {
			v, ok := rs.chunk[[2]int32{t.Pipeline, ch}]
			if !ok {
				return 0, false
			}
			sum += v
		}
		return int64(sum + 0.5), true
	}
	fin := int32(0)
	if t.Unit < 0 {
		fin = 1
	}
	v, ok := rs.other[[3]int32{t.Pipeline, t.Device, fin}]
	if !ok {
		return 0, false
	}
	return (v[0] + v[1]/2) / v[1], true
}
