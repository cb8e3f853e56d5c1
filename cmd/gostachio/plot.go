package main

import (
	"encoding/json"
	"strings"

	"github.com/spf13/cobra"

	"gostachio/experiments"
	"gostachio/plots"
)

func init() { commands = append(commands, newPlotCmd) }

func newPlotCmd(g *globals) *cobra.Command {
	var traceFiles []string
	var out, formats string
	cmd := &cobra.Command{
		Use:   "plot [RESULTS] [--trace T.json ...] --out FIGDIR",
		Short: "Draw every figure a results folder (or results.csv) and traces support, as PNG, SVG and PDF",
		Long: `plot draws, per machine/profile in RESULTS: the speedup per query over the baseline
policy with 95% confidence intervals, utilization per resource kind and policy,
a line figure per sweep axis, the simulator-vs-engine scatter when both backends
ran the same configurations, and a timeline per --trace file (Chrome JSON or CSV).
It prints the files written and the figures skipped, with the reason (with --json:
{"files": [...]} on stdout, the rest on stderr).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			var results []experiments.Result
			if len(args) == 1 {
				var err error
				if results, err = experiments.ReadResults(args[0]); err != nil {
					return err
				}
			}
			var fs []string
			for _, f := range strings.Split(formats, ",") {
				if f = strings.TrimSpace(strings.TrimPrefix(strings.ToLower(f), ".")); f != "" {
					fs = append(fs, f)
				}
			}
			if !g.json {
				_, err := plots.DrawAll(results, traceFiles, out, fs, c.OutOrStdout())
				return err
			}
			// JSON: the files written on stdout, the log on stderr.
			files, err := plots.DrawAll(results, traceFiles, out, fs, c.ErrOrStderr())
			if files == nil {
				files = []string{}
			}
			enc := json.NewEncoder(c.OutOrStdout())
			enc.SetIndent("", "  ")
			if jerr := enc.Encode(map[string][]string{"files": files}); err == nil {
				err = jerr
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&traceFiles, "trace", nil, "a trace file to draw a timeline of (repeatable)")
	f.StringVar(&out, "out", "", "folder to write the figures to (created if missing)")
	f.StringVar(&formats, "format", strings.Join(plots.Formats, ","), "comma-separated formats: png, svg, pdf")
	cmd.MarkFlagRequired("out")
	return cmd
}
