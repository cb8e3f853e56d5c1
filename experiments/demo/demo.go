// Package demo is what `make demo` runs: a small dataset, TPC-H queries on
// the CPU engine and in the simulator under serial and overlap, a table,
// figures and Perfetto traces, and a query of its own written in SQL. (It sits apart from package experiments
// because it draws with package plots, which reads experiments' results.)
package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"gostachio/dataset"
	"gostachio/engine"
	"gostachio/experiments"
	"gostachio/internal/machine"
	"gostachio/internal/stats"
	"gostachio/plan"
	"gostachio/plots"
	"gostachio/sim"
	"gostachio/tpch"
	"gostachio/tpch/queries"
	"gostachio/traces"
)

// DemoOptions configure Demo.
type DemoOptions struct {
	Data      string  // dataset folder (generated if missing)
	Out       string  // where traces and figures go
	SF        float64 // scale factor of the generated dataset
	ChunkRows int     // rows per chunk of the generated dataset
	// ClusterSF is the scale factor simulated on the paper's hardware.
	ClusterSF float64
	Queries   []string
	// Rounds is how many timed engine runs each case gets after one
	// untimed warm-up run (default 5); the table shows their median.
	Rounds int
	JSON   bool
	Now    func() time.Time // clock for progress and timings (the CLI passes time.Now)
}

// DemoRow is one line of the demo's table.
type DemoRow struct {
	Query   string  `json:"query"`
	Profile string  `json:"profile"`
	Nodes   int     `json:"nodes"`
	SF      float64 `json:"sf"`
	Policy  string  `json:"policy"`
	SimMs   float64 `json:"sim_ms"`
	// EngineMs is the CPU engine's measured time of the same plan on the
	// dataset (devbox rows only; 0 elsewhere): the median of EngineRoundsMs,
	// the timed runs after a warm-up. ErrorPct is (sim-engine)/engine.
	EngineMs       float64   `json:"engine_ms,omitempty"`
	EngineRoundsMs []float64 `json:"engine_rounds_ms,omitempty"`
	ErrorPct       float64   `json:"error_pct,omitempty"`
	BoundMs        float64   `json:"bound_ms"`
	BoundBy        string    `json:"bound_by"`
	Efficiency     float64   `json:"overlap_efficiency"`
	// Speedup is the serial makespan over this policy's (1 for serial).
	Speedup float64 `json:"speedup"`
}

// DemoReport is what Demo prints with JSON.
type DemoReport struct {
	Dataset string    `json:"dataset"`
	Rows    []DemoRow `json:"rows"`
	Trace   string    `json:"trace"`
	// EngineTrace is a Perfetto trace of the engine's overlap run of the
	// last query.
	EngineTrace string `json:"engine_trace"`
	// Figures are the PNG files drawn from the rows and traces.
	Figures []string `json:"figures"`
	// SQL is the demo's own query, from SQL, on both backends.
	SQL *DemoSQL `json:"sql"`
}

// demoResults turns the demo's rows into experiment results (one
// repetition each) for the figures: engine rows, and simulated rows of
// each profile.
func demoResults(rep *DemoReport, sf float64) []experiments.Result {
	var out []experiments.Result
	for _, r := range rep.Rows {
		sim := experiments.Result{Key: r.Query + "|" + r.Profile + "|" + r.Policy, Backend: "sim", Profile: r.Profile,
			Nodes: r.Nodes, SF: r.SF, Query: r.Query, Policy: r.Policy, Rep: 1, Seconds: r.SimMs / 1e3,
			Bound: r.BoundMs / 1e3, Efficiency: r.Efficiency}
		out = append(out, sim)
		if r.EngineMs > 0 {
			out = append(out, experiments.Result{Key: r.Query + "|engine|" + r.Policy, Backend: "engine", Profile: r.Profile,
				Machine: machine.Name(), Nodes: 1, SF: sf, Query: r.Query, Policy: r.Policy, Rep: 1, Seconds: r.EngineMs / 1e3})
		}
	}
	return out
}

// Demo generates (or reuses) a small dataset, runs several TPC-H queries
// under serial and overlap on the CPU engine, and simulates the same plans:
// on the devbox profile at the dataset's size (next to the engine's
// measured time) and on one DGX A100 node at ClusterSF. It writes Perfetto
// traces of the overlap runs of the last query (engine and simulated)
// under opts.Out.
func Demo(ctx context.Context, opts DemoOptions, stdout, stderr io.Writer) error {
	if opts.SF == 0 {
		opts.SF = 0.01
	}
	if opts.ChunkRows == 0 {
		opts.ChunkRows = 8192
	}
	if opts.ClusterSF == 0 {
		opts.ClusterSF = 1000
	}
	if len(opts.Queries) == 0 {
		opts.Queries = []string{"q1", "q3", "q6"}
	}
	if opts.Rounds == 0 {
		opts.Rounds = 5
	}
	if opts.Rounds < 0 {
		return fmt.Errorf("demo: --rounds %d: want 1 or more", opts.Rounds)
	}
	if err := os.MkdirAll(opts.Out, 0o755); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	text := stdout
	if opts.JSON {
		text = io.Discard
	}
	fmt.Fprintf(text, "== 1. dataset: TPC-H SF%v (dbgen-exact) ==\n", opts.SF)
	if err := tpch.Gen(ctx, tpch.GenOptions{ScaleFactor: opts.SF, Out: opts.Data, ChunkRows: opts.ChunkRows,
		IfMissing: true, Now: opts.Now}, text, stderr); err != nil {
		return err
	}
	ds, err := dataset.Open(opts.Data)
	if err != nil {
		return err
	}
	fmt.Fprintf(text, "\n== 2. engine (measured on this machine) and simulator: serial vs overlap ==\n")
	defer engine.TuneGC()()
	engine.FitHeapLimit(ds)
	if err := engine.VerifyOnce(ctx, ds, stderr); err != nil {
		return err
	}
	reader, err := engine.OpenSession(ctx, ds, engine.QueryOptions{Log: stderr})
	if err != nil {
		return err
	}
	defer reader.Close()
	rep := DemoReport{Dataset: ds.Dir}
	// The CPU engine's profile: one calibrated on a machine like this one
	// where one is shipped.
	local, localWhy := sim.LocalProfile(""), " like this one"
	if local == "" {
		local, localWhy = "devbox-calibrated", ""
	}
	type setup struct {
		profile string
		nodes   int
		sf      float64
		tables  []plan.TableStats // nil: sized from sf
	}
	setups := []setup{
		{local, 1, ds.Manifest.ScaleFactor, ds.PlanStats()},
		{"dgx-a100", 1, opts.ClusterSF, nil},
	}
	// Each profile's provenance warning once, not once a case.
	for _, su := range setups {
		if _, err := sim.LoadProfileLog(su.profile, stderr); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
	}
	for _, q := range opts.Queries {
		for _, su := range setups {
			var serial float64
			for _, pol := range []string{"serial", "overlap"} {
				trace := ""
				if su.profile == "dgx-a100" && pol == "overlap" {
					trace = filepath.Join(opts.Out, fmt.Sprintf("%s-%s-%s.trace.json", q, su.profile, pol))
				}
				p, sf, err := queries.Sized(q, su.sf, sim.DefaultChunkRows, su.tables)
				if err != nil {
					return fmt.Errorf("demo %s %s %s: %w", q, su.profile, pol, err)
				}
				r, err := simulate(ctx, sim.SimOptions{Profile: su.profile, Log: io.Discard, Nodes: su.nodes, SF: sf,
					Plan: p, Policy: pol, Trace: trace})
				if err != nil {
					return fmt.Errorf("demo %s %s %s: %w", q, su.profile, pol, err)
				}
				ms := float64(r.MakespanNs) / 1e6
				if trace != "" {
					rep.Trace = trace
				}
				row := DemoRow{Query: q, Profile: su.profile, Nodes: su.nodes, SF: su.sf,
					Policy: pol, SimMs: ms, BoundMs: float64(r.BoundNs) / 1e6, BoundBy: r.BoundBy,
					Efficiency: r.Efficiency}
				base := ms
				if su.tables != nil {
					// The dataset's own size: run the engine on it too, a
					// warm-up and then the timed rounds (the last one
					// traced under overlap).
					// The simulations before (SF1000 on the DGX profile)
					// leave a large heap behind: collected during the
					// engine's runs, it made them 3-5x as long (q6: 10-22
					// ms against 2-4). Collect it first, keeping the
					// memory (returned to the system, the runs fault it
					// back in: 1.5-2x as long).
					runtime.GC()
					var tr *traces.Recorder
					for round := 0; round <= opts.Rounds; round++ {
						qo := engine.QueryOptions{Policy: pol, Reader: reader, Log: stderr, NoVerify: true}
						if pol == "overlap" && round == opts.Rounds {
							tr = &traces.Recorder{Run: q + "/" + pol}
							qo.Trace = tr
						}
						p, err := engine.BuildQuery(ds, queries.Catalog(), q)
						if err != nil {
							return fmt.Errorf("demo engine %s %s: %w", q, pol, err)
						}
						er, err := engine.Query(ctx, ds, p, qo)
						if err != nil {
							return fmt.Errorf("demo engine %s %s: %w", q, pol, err)
						}
						if round > 0 {
							row.EngineRoundsMs = append(row.EngineRoundsMs, float64(er.Wall.Nanoseconds())/1e6)
						}
					}
					row.EngineMs = stats.Median(row.EngineRoundsMs)
					row.ErrorPct = 100 * (ms - row.EngineMs) / row.EngineMs
					base = row.EngineMs
					if tr != nil {
						path := filepath.Join(opts.Out, fmt.Sprintf("%s-engine-%s.trace.json", q, pol))
						meta := traces.Meta{Title: fmt.Sprintf("engine %s %s on %s", q, pol, ds.Dir), Backend: "engine", Machine: machine.Name()}
						if err := traces.Save(path, tr.Events, meta); err != nil {
							return fmt.Errorf("demo: %w", err)
						}
						rep.EngineTrace = path
					}
				}
				if pol == "serial" {
					serial = base
				}
				row.Speedup = serial / base
				rep.Rows = append(rep.Rows, row)
			}
		}
	}
	rep.SQL, err = demoSQL(ctx, ds, engine.QueryOptions{Reader: reader, Log: stderr, NoVerify: true}, opts.ClusterSF, 4, opts.Now)
	if err != nil {
		return err
	}
	figDir := filepath.Join(opts.Out, "figures")
	figs, err := plots.DrawAll(demoResults(&rep, ds.Manifest.ScaleFactor), []string{rep.EngineTrace, rep.Trace}, figDir, []string{"png"}, io.Discard)
	if err != nil {
		return fmt.Errorf("demo: figures: %w", err)
	}
	rep.Figures = figs
	if opts.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	fmt.Fprintf(stdout, "%-5s %-17s %7s %-8s %12s %12s %8s %12s %-12s %6s %8s\n",
		"query", "profile", "sf", "policy", "engine", "sim time", "error", "bound", "bound by", "eff", "speedup")
	for _, r := range rep.Rows {
		eng, errPct := "-", "-"
		if r.EngineMs > 0 {
			eng, errPct = fmt.Sprintf("%.3fms", r.EngineMs), fmt.Sprintf("%+.0f%%", r.ErrorPct)
		}
		fmt.Fprintf(stdout, "%-5s %-17s %7v %-8s %12s %10.3fms %8s %10.3fms %-12s %5.1f%% %7.2fx\n",
			r.Query, r.Profile, r.SF, r.Policy, eng, r.SimMs, errPct, r.BoundMs, r.BoundBy, 100*r.Efficiency, r.Speedup)
	}
	fmt.Fprintf(stdout, "\nengine: median of %d runs after a warm-up, on this machine.\n", opts.Rounds)
	fmt.Fprintf(stdout, "speedup: serial time / this policy's (engine time where measured, else simulated).\n")
	fmt.Fprintf(stdout, "error: simulated (profile %s: fitted from micro-benchmarks on a development VM%s; `make calibrate` refits it here) vs measured.\n", local, localWhy)
	fmt.Fprintf(stdout, "Perfetto traces (open in ui.perfetto.dev): %s (simulated), %s (engine)\n", rep.Trace, rep.EngineTrace)
	fmt.Fprintf(stdout, "Figures (%d) in %s:\n", len(figs), figDir)
	for _, f := range figs {
		fmt.Fprintf(stdout, "  %s\n", f)
	}
	rep.SQL.write(stdout)
	return nil
}

func simulate(ctx context.Context, o sim.SimOptions) (*sim.Report, error) {
	return sim.RunReport(ctx, o)
}

// jsonBuffer collects output in memory (tests).
type jsonBuffer []byte

func (b *jsonBuffer) Write(p []byte) (int, error) { *b = append(*b, p...); return len(p), nil }

var _ io.Writer = (*jsonBuffer)(nil)
