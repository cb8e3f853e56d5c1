package main

import (
	"github.com/spf13/cobra"

	"gostachio/engine"
	"gostachio/tpch/queries"
)

func init() { commands = append(commands, newQueryCmd) }

func newQueryCmd(g *globals) *cobra.Command {
	var o engine.RunOptions
	var rf *runFlags
	cmd := &cobra.Command{
		Use:   "query --data DIR --query q1|all",
		Short: "Run TPC-H queries on the engine (CPU, or --gpu), through the overlap scheduler",
		Long: `Runs TPC-H queries (the spec's validation parameters) on a dataset made by
'gostachio gen', reading it from storage (O_DIRECT unless --buffered). The result
goes to stdout in the spec's column order (decimals to 2 places, dates as
YYYY-MM-DD); a timing summary goes to stderr.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := rf.resolve(g); err != nil {
				return err
			}
			o.Catalog = queries.Catalog()
			return engine.RunQueries(c.Context(), o, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	rf = addRunFlags(cmd.Flags(), &o, false)
	_ = cmd.MarkFlagRequired("data")
	return cmd
}
