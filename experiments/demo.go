// Package experiments runs experiments: for now the demo that `make demo`
// runs (spec files, the runner and A/B statistics come with their issue).
package experiments

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"gostachio/dataset"
	"gostachio/plan"
	"gostachio/sim"
	"gostachio/tpch"
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
	JSON      bool
	Now       func() time.Time // clock for progress and timings (the CLI passes time.Now)
}

// DemoRow is one line of the demo's table.
type DemoRow struct {
	Query      string  `json:"query"`
	Profile    string  `json:"profile"`
	Nodes      int     `json:"nodes"`
	SF         float64 `json:"sf"`
	Policy     string  `json:"policy"`
	SimMs      float64 `json:"sim_ms"`
	BoundMs    float64 `json:"bound_ms"`
	BoundBy    string  `json:"bound_by"`
	Efficiency float64 `json:"overlap_efficiency"`
	// Speedup is the serial makespan over this policy's (1 for serial).
	Speedup float64 `json:"speedup"`
}

// DemoReport is what Demo prints with JSON.
type DemoReport struct {
	Dataset string    `json:"dataset"`
	Rows    []DemoRow `json:"rows"`
	Trace   string    `json:"trace"`
}

// Demo generates (or reuses) a small dataset, inspects it, and simulates
// several TPC-H queries under serial and overlap: on the devbox profile at
// the dataset's size and on one DGX A100 node at ClusterSF. It writes a
// Perfetto trace of the overlap run of the last query under opts.Out.
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
	if err := os.MkdirAll(opts.Out, 0o755); err != nil {
		return fmt.Errorf("experiments: demo: %w", err)
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
	fmt.Fprintf(text, "\n== 2. simulated: serial vs overlap ==\n")
	rep := DemoReport{Dataset: ds.Dir}
	type setup struct {
		profile string
		nodes   int
		sf      float64
		tables  []plan.TableStats // nil: sized from sf
	}
	setups := []setup{
		{"devbox", 1, ds.Manifest.ScaleFactor, tpch.PlanStats(ds)},
		{"dgx-a100", 1, opts.ClusterSF, nil},
	}
	for _, q := range opts.Queries {
		for _, su := range setups {
			var serial float64
			for _, pol := range []string{"serial", "overlap"} {
				trace := ""
				if su.profile == "dgx-a100" && pol == "overlap" {
					trace = filepath.Join(opts.Out, fmt.Sprintf("%s-%s-%s.trace.json", q, su.profile, pol))
				}
				r, err := simulate(ctx, sim.SimOptions{Profile: su.profile, Nodes: su.nodes, SF: su.sf,
					Tables: su.tables, Query: q, Policy: pol, Trace: trace})
				if err != nil {
					return fmt.Errorf("experiments: demo %s %s %s: %w", q, su.profile, pol, err)
				}
				ms := float64(r.MakespanNs) / 1e6
				if pol == "serial" {
					serial = ms
				}
				if trace != "" {
					rep.Trace = trace
				}
				rep.Rows = append(rep.Rows, DemoRow{Query: q, Profile: su.profile, Nodes: su.nodes, SF: su.sf,
					Policy: pol, SimMs: ms, BoundMs: float64(r.BoundNs) / 1e6, BoundBy: r.BoundBy,
					Efficiency: r.Efficiency, Speedup: serial / ms})
			}
		}
	}
	if opts.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	fmt.Fprintf(stdout, "%-5s %-9s %7s %-8s %12s %12s %-12s %6s %8s\n",
		"query", "profile", "sf", "policy", "sim time", "bound", "bound by", "eff", "speedup")
	for _, r := range rep.Rows {
		fmt.Fprintf(stdout, "%-5s %-9s %7v %-8s %10.3fms %10.3fms %-12s %5.1f%% %7.2fx\n",
			r.Query, r.Profile, r.SF, r.Policy, r.SimMs, r.BoundMs, r.BoundBy, 100*r.Efficiency, r.Speedup)
	}
	fmt.Fprintf(stdout, "\nPerfetto trace (open in ui.perfetto.dev): %s\n", rep.Trace)
	fmt.Fprintf(stdout, "The CPU engine's measured times join this table when the engine lands (issue 5).\n")
	return nil
}

func simulate(ctx context.Context, o sim.SimOptions) (*sim.Report, error) {
	var buf jsonBuffer
	o.JSON = true
	err := sim.RunSim(ctx, o, &buf)
	if err != nil {
		return nil, err
	}
	var r sim.Report
	if err := json.Unmarshal(buf, &r); err != nil {
		return nil, fmt.Errorf("decode sim report: %w", err)
	}
	return &r, nil
}

type jsonBuffer []byte

func (b *jsonBuffer) Write(p []byte) (int, error) { *b = append(*b, p...); return len(p), nil }

var _ io.Writer = (*jsonBuffer)(nil)
