package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"gostachio/traces"
)

func init() { commands = append(commands, newTraceCmd) }

func newTraceCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trace",
		Short: "Analyze and convert traces (Chrome JSON from sim/query --trace, CSV, Parquet)",
	}
	var o traces.StatsOptions
	stats := &cobra.Command{
		Use:   "stats FILE",
		Short: "Print makespan, per-resource use, overlap, starvation and the critical path of a trace (.json, .csv, .parquet)",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.JSON = g.json
			return traces.Stats(args[0], o, c.OutOrStdout())
		},
	}
	stats.Flags().IntVar(&o.Slots, "slots", 0, "CPU slots for the overlap metric (0: the most CPU tasks seen running at once)")
	convert := &cobra.Command{
		Use:   "convert IN OUT",
		Short: "Convert a trace between formats, chosen by extension (.json, .csv, .parquet)",
		Args:  cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			n, err := traces.Convert(args[0], args[1])
			if err != nil {
				return err
			}
			if g.json {
				return writeJSON(c.OutOrStdout(), map[string]any{"in": args[0], "out": args[1], "events": n})
			}
			_, err = fmt.Fprintf(c.OutOrStdout(), "%s: %d events\n", args[1], n)
			return err
		},
	}
	cmd.AddCommand(stats, convert)
	return cmd
}
