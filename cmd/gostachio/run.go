package main

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"gostachio/experiments"
)

func init() { commands = append(commands, newRunCmd, newMergeCmd) }

func newRunCmd(g *globals) *cobra.Command {
	var out, shard string
	cmd := &cobra.Command{
		Use:   "run SPEC [--out DIR] [--shard i/n]",
		Short: "Run an experiment spec (YAML) into a results folder; re-running resumes",
		Long: `Run every run of an experiment spec (see experiments/specs/*.yaml), appending
each finished run to DIR/results.csv. Runs already stored are skipped, so an
interrupted experiment resumes. --shard i/n runs the i-th of n disjoint parts
(0-based; e.g. a SLURM array job: --shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT);
combine the parts with 'gostachio merge'.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			spec, err := experiments.ParseSpec(args[0])
			if err != nil {
				return err
			}
			i, n, err := experiments.ParseShard(shard)
			if err != nil {
				return err
			}
			if out == "" {
				out = filepath.Join("out", "runs", spec.Name)
			}
			return experiments.RunSpec(c.Context(), experiments.RunOptions{Spec: spec, Out: out, Shard: i, NumShards: n,
				Now: time.Now, JSON: g.json}, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&out, "out", "", "results folder (default out/runs/<spec name>)")
	f.StringVar(&shard, "shard", "", "run only shard i of n (i/n, 0 <= i < n)")
	return cmd
}

func newMergeCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "merge DST SRC...",
		Short: "Merge results folders (shards of one spec) into DST, dropping duplicate runs",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			sum, err := experiments.MergeResults(args[0], args[1:]...)
			if err != nil {
				return err
			}
			if g.json {
				return writeJSON(c.OutOrStdout(), sum)
			}
			_, err = fmt.Fprintf(c.OutOrStdout(), "%s: %d runs (%d added from %d sources)\n", sum.Dst, sum.Runs, sum.Added, sum.Sources)
			return err
		},
	}
}
