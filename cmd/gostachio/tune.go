package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"gostachio/experiments/tune"
	"gostachio/sim"
)

func init() { commands = append(commands, newTuneCmd) }

func newTuneCmd(g *globals) *cobra.Command {
	var o tune.TuneOptions
	var knobs string
	var ranges []string
	cmd := &cobra.Command{
		Use:   "tune --profile P --nodes N --sf F --query Q [--policy P] [--budget N] [--seed S] [--validate --data DIR]",
		Short: "Search a policy's knobs in the simulator for the fastest configuration, with its gain over overlap and a CI",
		Long: `Search a policy's knobs (the knob table: gostachio policies) for the
configuration that runs a query fastest in the simulator, within a budget of
simulations: CMA-ES proposes candidates (one jittered run each), successive
halving races the best under repeated runs, dropping those whose median's 95%
interval lies above the leader's, and the winner and overlap then run fresh
repetitions for the predicted gain and its 95% bootstrap interval. It prints
the best configuration, the gain, and how much of the space it looked at
(candidates, simulations, share of the grid). --set fixes knobs under every
candidate and the baseline (a scenario: devmem=2GiB). --validate runs the best
finalists against overlap on the engine (dataset --data), interleaved, and
prints ab's intervals: the engine's verdict on the prediction.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			o.JSON = g.json
			o.Log = c.ErrOrStderr()
			if knobs != "" {
				o.Knobs = strings.Split(knobs, ",")
			}
			o.Ranges = map[string]string{}
			for _, r := range ranges {
				k, v, ok := strings.Cut(r, "=")
				if !ok || k == "" {
					return fmt.Errorf("tune: --range %q: want KNOB=LO:HI or KNOB=a|b|c", r)
				}
				o.Ranges[k] = v
			}
			if o.Budget < 1 {
				return fmt.Errorf("tune: --budget %d must be positive", o.Budget)
			}
			if o.Workers < 1 {
				return fmt.Errorf("tune: --workers %d must be at least 1", o.Workers)
			}
			if !c.Flags().Changed("sf") && o.Data != "" {
				o.SF = 0 // the dataset's
			}
			return tune.Tune(c.Context(), o, c.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Profile, "profile", "dgx-a100", "hardware profile simulated: "+joinNames(sim.ProfileNames())+", or a .yaml path")
	f.IntVar(&o.Nodes, "nodes", 1, "nodes in the simulated cluster")
	f.Float64Var(&o.SF, "sf", 1, "TPC-H scale factor (with --data and no --sf: the dataset's)")
	f.StringVar(&o.Query, "query", "q6", "TPC-H query")
	f.StringVar(&o.Policy, "policy", "overlap", "policy whose knobs are searched (gains are over overlap)")
	f.StringVar(&knobs, "knobs", "", "knobs searched, comma-separated (default "+strings.Join(tune.DefaultKnobs, ",")+")")
	f.StringArrayVar(&ranges, "range", nil, "levels of a searched knob: KNOB=LO:HI (ints: every value; bytes: powers of two) or KNOB=a|b|c (repeatable)")
	f.StringVar(&o.Fixed, "set", "", "knobs fixed under every candidate and the baseline, e.g. devmem=2GiB")
	f.IntVar(&o.Budget, "budget", 120, "most simulations in all (the confirmation's included)")
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the search and of the simulator's jitter")
	f.Float64Var(&o.Jitter, "jitter", 0.05, "vary every simulated latency by ±this fraction, so that repetitions differ")
	f.IntVar(&o.Workers, "workers", 1, "simulations at once (the result does not depend on it)")
	f.StringVar(&o.Data, "data", "", "dataset: sizes the simulated workload, and what --validate runs the engine on")
	f.BoolVar(&o.Validate, "validate", false, "run the best finalists against overlap on the engine (needs --data) and report ab's intervals")
	f.IntVar(&o.Finalists, "finalists", 2, "how many of the best --validate runs")
	f.IntVar(&o.Reps, "reps", 6, "repetitions of each configuration --validate runs (after one warm-up)")
	f.StringVar(&o.Out, "out", "", "folder of --validate's spec and results (default out/tune/QUERY)")
	return cmd
}
