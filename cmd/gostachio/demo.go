package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"gostachio/experiments/demo"
)

func init() { commands = append(commands, newDemoCmd) }

func newDemoCmd(g *globals) *cobra.Command {
	var o demo.DemoOptions
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "The main job on an embedded default: small dataset, simulated serial vs overlap, a table and a trace",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if o.Rounds < 1 {
				return fmt.Errorf("demo: --rounds %d must be at least 1", o.Rounds)
			}
			o.JSON = g.json
			o.Now = time.Now
			return demo.Demo(c.Context(), o, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Data, "data", "out/data/sf0.01", "dataset folder (generated if missing)")
	f.StringVar(&o.Out, "out", "out/demo", "folder for traces and figures")
	f.Float64Var(&o.SF, "sf", 0.01, "scale factor of the generated dataset")
	f.IntVar(&o.ChunkRows, "chunk-rows", 8192, "rows per chunk of the generated dataset")
	f.Float64Var(&o.ClusterSF, "cluster-sf", 1000, "scale factor simulated on the DGX A100 profile")
	f.StringSliceVar(&o.Queries, "queries", nil, "queries (default: every query with a plan)")
	f.IntVar(&o.Rounds, "rounds", 5, "timed engine runs per case after a warm-up (the table shows their median)")
	return cmd
}
