package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"gostachio/engine"
	"gostachio/internal/units"
	"gostachio/sqlplan"
	"gostachio/tpch/queries"
)

// newBenchPlansCmd is `gostachio bench plans`.
func newBenchPlansCmd(g *globals) *cobra.Command {
	var o engine.BenchPlansOptions
	var mem string
	cmd := &cobra.Command{
		Use:   "plans --data DIR",
		Short: "The TPC-H queries planned from their SQL against their hand-built plans, side by side on the CPU engine",
		Long: `Runs every query twice per round, once from its hand-built plan and once
from the plan sqlplan makes of its SQL text, cold, interleaved in a random
order, and prints the median times, their ratio (SQL / hand-built), the
planning time, whether both results agree, and where the two plans differ
(pipelines, columns scanned, pruning, exchanges, joins, aggregates).`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			o.JSON = g.json
			if o.Devices < 0 {
				return fmt.Errorf("bench plans: --devices %d: want a positive number of worker groups (0 or no flag: the default)", o.Devices)
			}
			if mem != "" {
				n, err := units.ParseBytes(mem)
				if err != nil {
					return err
				}
				o.Mem = n
			}
			o.Baseline, o.BaselineLabel = queries.Catalog(), "hand-built"
			workers := o.Devices
			if workers == 0 {
				workers = runtime.GOMAXPROCS(0) // the engine's default: one worker group per CPU
			}
			o.Candidate, o.CandidateLabel = queries.SQLCatalog(sqlplan.Options{Workers: workers}), "sql"
			return engine.BenchPlans(c.Context(), o, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Data, "data", "", "dataset directory (from gostachio gen)")
	f.StringVar(&o.Queries, "queries", "all", "q1..q22, a comma-separated list, or all")
	f.StringVar(&o.Policy, "policy", "overlap", "policy every plan runs under")
	f.IntVar(&o.Rounds, "rounds", 3, "rounds (randomized order each round); medians are reported")
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the run order")
	f.IntVar(&o.Devices, "devices", 0, "worker groups (default: one per CPU); the SQL plans are sized for as many workers")
	f.StringVar(&mem, "mem", "4GiB", "memory budget")
	_ = cmd.MarkFlagRequired("data")
	return cmd
}
