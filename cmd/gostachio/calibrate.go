package main

import (
	"time"

	"github.com/spf13/cobra"

	"gostachio/calibrate"
)

func init() { commands = append(commands, newCalibrateCmd) }

func newCalibrateCmd(g *globals) *cobra.Command {
	var o calibrate.Options
	cmd := &cobra.Command{
		Use:   "calibrate --micro --data DIR --out PROFILE | --from-samples FILE --out PROFILE | --traces DIR --out PROFILE",
		Short: "Fit a simulator profile to this machine from micro-benchmarks (or samples, or engine traces)",
		Long: `calibrate fits the simulator's cost model to this machine and writes a profile.

--micro runs micro-benchmarks (storage reads over sizes and queue depths with
the engine's O_DIRECT reader on DIR's lineitem file; a compute loop on every
core alone and beside those reads, what reads take from the cores; the plans'
leading kernels alone and beside the same kernel on every other core, what
cores computing at once take from each other; the CPU h2d decode; task
dispatch; every kernel over sizes and selectivities: the TPC-H plans'
filters, projections, aggregates and shuffles on DIR's tables, hash builds,
probes and sorts) and saves them as PROFILE.samples.csv. --from-samples
refits such a file: the same samples (and --date) give a byte-identical
profile. --traces fits from recorded engine traces instead (coarser). With
--gpu N the profile models the engine's GPU backend (query --gpu N): the
micro-benchmarks also time uploads of scan units from pinned memory and
fused pipelines that are none of the queries' on device N. It
prints each component's parameters and fit quality (R², MAPE).`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			o.UseGPU = c.Flags().Changed("gpu")
			if o.Date == "" {
				o.Date = time.Now().UTC().Format("2006-01-02")
			}
			return calibrate.Calibrate(c.Context(), o, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.Micro, "micro", false, "run the micro-benchmarks on this machine")
	f.StringVar(&o.FromSamples, "from-samples", "", "refit a samples CSV (PROFILE.samples.csv of an earlier run)")
	f.StringVar(&o.Traces, "traces", "", "fit from the engine traces in this folder")
	f.StringVar(&o.Data, "data", "out/data/sf1", "dataset for --micro (reads: its lineitem file; kernels: its tables)")
	f.StringVar(&o.Out, "out", "", "profile to write (YAML)")
	f.StringVar(&o.Name, "name", "devbox-calibrated", "the profile's name")
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the storage benchmark's order")
	f.IntVar(&o.Reps, "reps", 5, "timed repetitions per kernel point, after one untimed (their mean is the sample)")
	f.IntVar(&o.Passes, "passes", calibrate.DefaultPasses, "whole passes over the storage configurations and the kernel points, one after the other (the median of a point's passes is the sample; the kernels' passes follow an untimed warm-up pass; points whose passes differ by more than 2x are reported)")
	f.BoolVar(&o.Quick, "quick", false, "few, small points (seconds; for tests)")
	f.StringVar(&o.Date, "date", "", "date recorded in the provenance (default: today, UTC)")
	f.IntVar(&o.GPUOrdinal, "gpu", 0, "with --micro: a profile of the GPU backend on this CUDA device (its copies and fused kernels measured too)")
	f.StringVar(&o.GPUName, "gpu-name", "", "with --from-samples of a GPU calibration: the device named in the provenance")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}
