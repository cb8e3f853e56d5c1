package main

import (
	"github.com/spf13/cobra"

	"gostachio/experiments"
)

func init() { commands = append(commands, newABCmd) }

func newABCmd(g *globals) *cobra.Command {
	var a, b string
	cmd := &cobra.Command{
		Use:   "ab RESULTS --a POLICY --b POLICY",
		Short: "Compare two policies of a results folder: per-query median speedup with a 95% CI",
		Long: `Compare policies A and B (the labels of a spec's policies) in a results folder or
results.csv: per query and sweep point, the runs and median time of each, the
median speedup of B over A (time A / time B) with its 95% bootstrap interval,
warnings where repetitions are too few or the intervals of A and B overlap,
and the geometric mean over queries.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			rs, err := experiments.ReadResults(args[0])
			if err != nil {
				return err
			}
			return experiments.AB(rs, a, b, c.OutOrStdout(), g.json)
		},
	}
	f := cmd.Flags()
	f.StringVar(&a, "a", "serial", "policy A (the baseline)")
	f.StringVar(&b, "b", "overlap", "policy B")
	return cmd
}
