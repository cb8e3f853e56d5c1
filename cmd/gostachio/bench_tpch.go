package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"gostachio/engine"
	"gostachio/internal/units"
	"gostachio/tpch/queries"
)

// newBenchTPCHCmd is `gostachio bench tpch`.
func newBenchTPCHCmd(g *globals) *cobra.Command {
	var o engine.BenchTPCHOptions
	var policies, mem string
	cmd := &cobra.Command{
		Use:   "tpch --data DIR",
		Short: "All TPC-H queries cold under serial and overlap, side by side with DuckDB on the same data",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			o.JSON = g.json
			if o.Devices < 0 {
				return fmt.Errorf("bench tpch: --devices %d: want a positive number of worker groups (0 or no flag: the default)", o.Devices)
			}
			for _, p := range strings.Split(policies, ",") {
				if p = strings.TrimSpace(p); p != "" {
					o.Policies = append(o.Policies, p)
				}
			}
			if mem != "" {
				n, err := units.ParseBytes(mem)
				if err != nil {
					return err
				}
				o.Mem = n
			}
			o.Catalog = queries.Catalog()
			return engine.BenchTPCH(c.Context(), o, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Data, "data", "", "dataset directory (from gostachio gen)")
	f.StringVar(&o.Queries, "queries", "all", "q1..q22, a comma-separated list, or all")
	f.StringVar(&policies, "policies", "serial,overlap", "policies to compare (first: baseline, last: vs DuckDB)")
	f.StringVar(&o.Set, "set", "", "knob overrides applied to every policy")
	f.IntVar(&o.Rounds, "rounds", 1, "rounds (randomized order each round); medians are reported")
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the run order")
	f.StringVar(&o.DuckDB, "duckdb", "", "duckdb-tpch binary (default: next to this binary or on PATH; none: skip)")
	f.StringVar(&o.Parquet, "parquet", "", "Parquet export for DuckDB (default DATA/parquet, made if missing)")
	f.IntVar(&o.Devices, "devices", 0, "worker groups (default: one per CPU)")
	f.StringVar(&mem, "mem", "4GiB", "memory budget")
	_ = cmd.MarkFlagRequired("data")
	return cmd
}
