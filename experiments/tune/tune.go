package tune

import (
	"context"
	"encoding/json"
	"fmt"
	"gostachio/internal/units"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"gostachio/dataset"
	"gostachio/experiments"
	"gostachio/internal/atomicfile"
	"gostachio/plan"
	"gostachio/scheduler"
	"gostachio/sim"
	"gostachio/tpch/queries"
)

// BaselinePolicy is the policy gains are measured against.
const BaselinePolicy = "overlap"

// TuneOptions are the inputs of `gostachio tune`.
type TuneOptions struct {
	// Profile is a shipped profile name or a .yaml path; Nodes the
	// cluster size; SF the scale factor (with Data: 0, the dataset's).
	Profile string
	Nodes   int
	SF      float64
	// Query is the TPC-H query tuned for.
	Query string
	// Policy is the policy whose knobs are searched (default overlap);
	// Knobs the knobs searched (default DefaultKnobs), Ranges their
	// levels (NewSpace); Fixed a --set string under every candidate and
	// the baseline (the scenario: "devmem=2GiB").
	Policy string
	Knobs  []string
	Ranges map[string]string
	Fixed  string
	// Budget is the most simulations (default 120); Seed seeds the
	// search and the simulator's jitter; Jitter varies every simulated
	// latency by ±Jitter (default 0.05), so that repetitions differ and
	// candidates are compared by intervals.
	Budget int
	Seed   uint64
	Jitter float64
	// Workers simulate at once (default 1; the outcome does not depend on
	// it).
	Workers int
	// Data, when set, sizes the simulated workload from the dataset's
	// manifest and is what Validate runs the engine on.
	Data string
	// Validate runs the best Finalists (default 2) against overlap on
	// the engine, interleaved, Reps repetitions each (default 6) after a
	// warm-up, into Out (default out/tune/QUERY), and reports ab's
	// intervals.
	Validate  bool
	Finalists int
	Reps      int
	Out       string
	// JSON prints the Report as JSON.
	JSON bool
	// Log takes progress lines (nil: none).
	Log io.Writer
}

// Report is what Tune prints.
type Report struct {
	Profile     string  `json:"profile"`
	ProfileHash string  `json:"profile_hash"`
	Nodes       int     `json:"nodes"`
	SF          float64 `json:"sf"`
	Query       string  `json:"query"`
	Policy      string  `json:"policy"`
	Fixed       string  `json:"fixed,omitempty"`
	Jitter      float64 `json:"jitter"`
	Seed        uint64  `json:"seed"`
	*Outcome
	// Validation is the engine's verdict (with --validate): ab's rows of
	// overlap against each finalist.
	Validation []experiments.ABReport `json:"validation,omitempty"`
	// ValidationDir is the results folder of the validation runs.
	ValidationDir string `json:"validation_dir,omitempty"`
}

// SimEvaluator returns an Evaluator that simulates query p's plan (built
// afresh for every run: the simulator places a plan's pipelines) on nodes
// nodes of prof with latencies jittered by ±jitter, seeded by seed, the
// candidate and the repetition (so a run draws the same latencies in any
// order).
func SimEvaluator(prof *sim.Profile, nodes int, build func() (*plan.Plan, error), jitter float64, seed uint64) Evaluator {
	return func(ctx context.Context, c Candidate, rep int) (float64, error) {
		p, err := build()
		if err != nil {
			return 0, err
		}
		pol, err := scheduler.NewPolicy(c.Policy, c.Set)
		if err != nil {
			return 0, err
		}
		h := fnv.New64a()
		fmt.Fprintf(h, "%s|%s|%d", c.Policy, c.Set, rep)
		r, err := sim.Simulate(ctx, p, prof, nodes, pol, nil, jitter, h.Sum64()^(seed*0x9e3779b97f4a7c15))
		if err != nil {
			return 0, fmt.Errorf("tune: simulate %s: %w", c, err)
		}
		return float64(r.MakespanNs) / 1e9, nil
	}
}

// Tune searches o.Policy's knobs for o.Query in the simulator (Search),
// optionally validates the finalists on the engine, and writes the Report
// to w (text, or JSON with o.JSON).
func Tune(ctx context.Context, o TuneOptions, w io.Writer) error {
	if o.Policy == "" {
		o.Policy = BaselinePolicy
	}
	if o.Budget == 0 {
		o.Budget = 120
	}
	if o.Nodes < 1 {
		return fmt.Errorf("tune: --nodes %d must be at least 1", o.Nodes)
	}
	if !(o.Jitter >= 0 && o.Jitter < 1) {
		return fmt.Errorf("tune: --jitter %v must be in [0, 1)", o.Jitter)
	}
	if o.Validate && o.Data == "" {
		return fmt.Errorf("tune: --validate runs the engine: give its dataset with --data DIR")
	}
	space, err := NewSpace(o.Knobs, o.Ranges)
	if err != nil {
		return err
	}
	for _, p := range space.Params {
		if strings.Contains(","+o.Fixed, ","+p.Name+"=") {
			return fmt.Errorf("tune: knob %s is both searched and fixed (--set); leave it out of one", p.Name)
		}
	}
	prof, err := sim.LoadProfileLog(o.Profile, o.Log)
	if err != nil {
		return err
	}
	hash, err := experiments.ProfileHash(prof)
	if err != nil {
		return err
	}
	var tables []plan.TableStats
	if o.Data != "" {
		ds, err := dataset.Open(o.Data)
		if err != nil {
			return fmt.Errorf("tune: %w", err)
		}
		tables = ds.PlanStats()
		if o.SF == 0 {
			o.SF = ds.Manifest.ScaleFactor
		}
	}
	build := func() (*plan.Plan, error) {
		p, _, err := queries.Sized(o.Query, o.SF, sim.DefaultChunkRows, tables)
		return p, err
	}
	// Built once here to refuse an unknown query before searching, and to
	// learn the dataset's scale factor.
	if _, o.SF, err = queries.Sized(o.Query, o.SF, sim.DefaultChunkRows, tables); err != nil {
		return fmt.Errorf("tune: %w", err)
	}
	eval := SimEvaluator(prof, o.Nodes, build, o.Jitter, o.Seed)
	out, err := Search(ctx, Options{Space: space, Policy: o.Policy, Fixed: o.Fixed,
		Baseline: Candidate{Policy: BaselinePolicy, Set: o.Fixed}, Budget: o.Budget, Seed: o.Seed,
		Workers: o.Workers, Finalists: max(o.Finalists, 3), Log: o.Log}, eval)
	if err != nil {
		return err
	}
	rep := &Report{Profile: o.Profile, ProfileHash: hash, Nodes: o.Nodes, SF: o.SF, Query: o.Query, Policy: o.Policy,
		Fixed: o.Fixed, Jitter: o.Jitter, Seed: o.Seed, Outcome: out}
	if o.Validate {
		if err := validate(ctx, o, rep); err != nil {
			return err
		}
	}
	if o.JSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return rep.write(w)
}

// validate runs overlap and the best finalists on the engine through an
// experiment spec written to o.Out (so the runs are interleaved and
// shuffled per repetition, stored atomically and resumable like `run`'s),
// and compares each with overlap by experiments.AB.
func validate(ctx context.Context, o TuneOptions, rep *Report) error {
	n := o.Finalists
	if n <= 0 {
		n = 2
	}
	reps := o.Reps
	if reps <= 0 {
		reps = 6
	}
	dir := o.Out
	if dir == "" {
		dir = filepath.Join("out", "tune", o.Query)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("tune: validate: %w", err)
	}
	data, err := filepath.Abs(o.Data)
	if err != nil {
		return fmt.Errorf("tune: validate: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by gostachio tune: the finalists of its search against overlap on the engine.\n")
	fmt.Fprintf(&b, "name: tune-%s\nbackend: engine\ndataset: %s\nqueries: [%s]\nreps: %d\nwarmup: 1\nseed: %d\npolicies:\n",
		o.Query, strconv.Quote(data), o.Query, reps, o.Seed)
	fmt.Fprintf(&b, "  - name: overlap\n    policy: %s\n    set: %s\n", BaselinePolicy, strconv.Quote(rep.Baseline.Set))
	var labels []string
	for i, f := range rep.Finalists[:min(n, len(rep.Finalists))] {
		if f.Candidate == rep.Baseline {
			continue
		}
		label := "tuned-" + strconv.Itoa(i+1)
		labels = append(labels, label)
		fmt.Fprintf(&b, "  - name: %s\n    policy: %s\n    set: %s\n", label, f.Policy, strconv.Quote(f.Set))
	}
	if len(labels) == 0 {
		return nil // the search kept overlap: nothing to validate
	}
	specPath := filepath.Join(dir, "tune-spec.yaml")
	if err := writeAtomic(specPath, []byte(b.String())); err != nil {
		return err
	}
	spec, err := experiments.ParseSpec(specPath)
	if err != nil {
		return err
	}
	results := filepath.Join(dir, "results")
	log := o.Log
	if log == nil {
		log = io.Discard
	}
	if err := experiments.RunSpec(ctx, experiments.RunOptions{Spec: spec, Out: results}, io.Discard, log); err != nil {
		return err
	}
	rs, err := experiments.ReadResults(results)
	if err != nil {
		return err
	}
	for _, l := range labels {
		var buf strings.Builder
		if err := experiments.AB(rs, "overlap", l, &buf, true); err != nil {
			return err
		}
		var ab experiments.ABReport
		if err := json.Unmarshal([]byte(buf.String()), &ab); err != nil {
			return fmt.Errorf("tune: validate: %w", err)
		}
		rep.Validation = append(rep.Validation, ab)
	}
	rep.ValidationDir = results
	return nil
}

// write prints the report as text.
func (r *Report) write(w io.Writer) error {
	fmt.Fprintf(w, "tune %s on %d x %s (profile hash %s), sf %g, policy %s", r.Query, r.Nodes, r.Profile, r.ProfileHash, r.SF, r.Policy)
	if r.Fixed != "" {
		fmt.Fprintf(w, ", fixed %s", r.Fixed)
	}
	fmt.Fprintf(w, "; jitter ±%g, seed %d\n", r.Jitter, r.Seed)
	fmt.Fprintf(w, "space: %s\n", spaceString(r.Space))
	fmt.Fprintf(w, "looked at: %d candidates of a %s (%.3g%%), %d simulations of a budget of %d (%d proposing by CMA-ES, race rounds %s, %d confirming)\n",
		r.Candidates, gridSize(r.GridSize), 100*r.Share, r.Simulations, r.Budget, r.Proposed, roundsString(r.Rounds), 2*r.ConfirmReps)
	fmt.Fprintf(w, "\nbest: %s\n", r.Best.Candidate)
	if r.BaselineStalls {
		fmt.Fprintf(w, "predicted gain over %s: unbounded: it stalls (no task can start within the memory budget) in %d of %d fresh repetitions; the best runs in %s [%s, %s]\n",
			r.Baseline, r.BaselineConfirm.Stalled, r.ConfirmReps, fmtSec(r.BestConfirm.Median), fmtSec(r.BestConfirm.CI.Lo), fmtSec(r.BestConfirm.CI.Hi))
	} else {
		fmt.Fprintf(w, "predicted gain over %s: %.3fx [%.3f, %.3f] (95%% CI; median %s vs %s over %d fresh repetitions each)\n",
			r.Baseline, r.Gain, r.GainLo, r.GainHi, fmtSec(r.BaselineConfirm.Median), fmtSec(r.BestConfirm.Median), r.ConfirmReps)
	}
	if !r.BaselineStalls && r.GainLo <= 1 && 1 <= r.GainHi {
		fmt.Fprintln(w, "  the interval contains 1: no significant gain over the baseline")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nfinalists\truns\tmedian [95% CI]\tset")
	for i, f := range r.Finalists {
		med := fmt.Sprintf("%s [%s, %s]", fmtSec(f.Median), fmtSec(f.CI.Lo), fmtSec(f.CI.Hi))
		if f.Stalled > 0 {
			med = fmt.Sprintf("stalls in %d of %d runs", f.Stalled, f.Runs)
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\n", i+1, f.Runs, med, f.Candidate)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, v := range r.Validation {
		fmt.Fprintf(w, "\nengine (%s): %s against %s\n", r.ValidationDir, v.B, v.A)
		for _, row := range v.Rows {
			verdict := "confirmed"
			switch {
			case row.Lo <= 1 && 1 <= row.Hi:
				verdict = "not significant"
			case row.Hi < 1:
				verdict = "refuted: slower than overlap"
			}
			fmt.Fprintf(w, "  %s: n %d/%d, median %s vs %s, speedup %.3fx [%.3f, %.3f]: %s\n", row.Query, row.NA, row.NB,
				fmtSec(row.MedianA), fmtSec(row.MedianB), row.Speedup, row.Lo, row.Hi, verdict)
			for _, wn := range row.Warnings {
				fmt.Fprintf(w, "    warning: %s\n", wn)
			}
		}
	}
	return nil
}

// writeAtomic writes data to path atomically (atomicfile).
func writeAtomic(path string, data []byte) error {
	if err := atomicfile.WriteFile(path, data); err != nil {
		return fmt.Errorf("tune: %w", err)
	}
	return nil
}

func spaceString(s Space) string {
	parts := make([]string, len(s.Params))
	for i, p := range s.Params {
		parts[i] = p.Name + "{" + strings.Join(p.Levels, ",") + "}"
	}
	return strings.Join(parts, " ")
}

func roundsString(rs []Round) string {
	if len(rs) == 0 {
		return "none"
	}
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("%d@%d->%d", r.Candidates, r.Reps, r.Kept)
	}
	return strings.Join(parts, " ")
}

// fmtSec formats seconds with a unit: 2 decimals in ms, else 3 (s) or 1 (µs).
func fmtSec(s float64) string {
	switch {
	case s >= 1e-3 && s < 1:
		return units.FormatSeconds(s, 2)
	case s < 1e-3:
		return units.FormatSeconds(s, 1)
	}
	return units.FormatSeconds(s, 3)
}
