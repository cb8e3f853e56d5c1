package main

import (
	"github.com/spf13/cobra"

	"gostachio/engine"
	"gostachio/internal/units"
)

func init() { commands = append(commands, newQueryCmd) }

func newQueryCmd(g *globals) *cobra.Command {
	var o engine.RunOptions
	var mem string
	cmd := &cobra.Command{
		Use:   "query --data DIR --query q1|all",
		Short: "Run TPC-H queries on the CPU engine, through the overlap scheduler",
		Long: `Runs TPC-H queries (the spec's validation parameters) on a dataset made by
'gostachio gen', reading it from storage (O_DIRECT unless --buffered). The result
goes to stdout in the spec's column order (decimals to 2 places, dates as
YYYY-MM-DD); a timing summary goes to stderr.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if g.json {
				o.Format = "json"
			}
			if mem != "" {
				n, err := units.ParseBytes(mem)
				if err != nil {
					return err
				}
				o.Mem = n
			}
			return engine.RunQueries(c.Context(), o, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Data, "data", "", "dataset directory (from gostachio gen)")
	f.StringVar(&o.Query, "query", "all", "q1..q22, a comma-separated list, or all")
	f.StringVar(&o.Policy, "policy", "overlap", "scheduling policy (see `gostachio policies`)")
	f.StringVar(&o.Set, "set", "", "policy knob overrides, e.g. chunk=8MiB,depth=4")
	f.StringVar(&o.Format, "format", "table", "result format: table, csv, json")
	f.StringVar(&o.Trace, "trace", "", "write a Perfetto/Chrome JSON trace to this file")
	f.StringVar(&mem, "mem", "4GiB", "memory budget (I/O buffers + intermediate data)")
	f.IntVar(&o.Devices, "devices", 0, "worker groups (default: one per CPU)")
	f.BoolVar(&o.Buffered, "buffered", false, "read through the page cache instead of O_DIRECT")
	f.StringVar(&o.IO, "io", "auto", "storage backend: auto, uring, pread")
	_ = cmd.MarkFlagRequired("data")
	return cmd
}
