package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"gostachio/calibrate"
	"gostachio/sim"
)

func init() {
	commands = append(commands, newValidateCmd, newValidateSpreadCmd, newValidateRepriceCmd, newValidateOpsCmd, newValidateReferenceCmd)
}

func newValidateCmd(g *globals) *cobra.Command {
	var o calibrate.ValidateOptions
	var policies, set, sets, compare string
	cmd := &cobra.Command{
		Use:   "validate --profile P --data DIR --queries all --policies serial,overlap [--sets \"chunk=16MiB;chunk=64MiB\"]",
		Short: "Run queries on the engine and in the simulator and report the simulator's prediction error",
		Long: `validate runs every query x policy x knob set on the CPU engine (or with --gpu N
its GPU backend; cold, O_DIRECT;
--rounds times in a seeded random order, median; --order grouped runs each case's
rounds back to back instead) and in the simulator with the
profile on the dataset's manifest statistics, and prints per case the measured
and simulated seconds and the error, then the median, P90 and max |error| and,
per query, Kendall's tau between the engine's and the simulator's ordering of
its cases, and how many of the pairs of cases the engine separates beyond its
noise (95% median intervals of the rounds disjoint; with under 6 rounds, their
ranges; none with under 5 rounds) the simulator orders the other way; also the
simulator's bias (mean signed error) and, with 3+ rounds, the engine's noise
floor: the median |error| a simulator exact on every case would still show,
since each measured median is off the true one by its rounds' noise (more
rounds lower it). With --compare P2,P3 the same engine runs are also priced by
other profiles, summarized side by side (a change of the model measured on one set
of runs, free of the machine's drift between validations). With --out it appends
engine and sim rows to OUT/results.csv, the CPU and disk references it measured
to OUT/validations.jsonl (what validate-reprice needs) and draws
OUT/sim-vs-engine.{png,svg}.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if o.Profile == "" {
				o.Profile = localProfilePath()
			}
			for _, p := range strings.Split(policies, ",") {
				if p = strings.TrimSpace(p); p != "" {
					o.Policies = append(o.Policies, p)
				}
			}
			switch {
			case set != "" && sets != "":
				return fmt.Errorf("validate: give --set or --sets, not both")
			case sets != "":
				o.Sets = strings.Split(sets, ";")
			default:
				o.Sets = []string{set}
			}
			o.UseGPU = c.Flags().Changed("gpu")
			if o.GPUHybrid && !o.UseGPU {
				return fmt.Errorf("validate: --gpu-hybrid needs --gpu N")
			}
			for _, p := range strings.Split(compare, ",") {
				if p = strings.TrimSpace(p); p != "" {
					o.Compare = append(o.Compare, p)
				}
			}
			o.Log = c.ErrOrStderr()
			rep, err := calibrate.Validate(c.Context(), o)
			if rep == nil {
				return err
			}
			if g.json {
				if jerr := writeJSON(c.OutOrStdout(), rep); err == nil {
					err = jerr
				}
				return err
			}
			if werr := rep.WriteText(c.OutOrStdout()); err == nil {
				err = werr
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Profile, "profile", "", "profile to predict with (name or .yaml path) "+localProfileHelp)
	f.StringVar(&o.Data, "data", "", "dataset both backends run on")
	f.StringVar(&o.Queries, "queries", "all", "q1..q22, a comma-separated list, or all")
	f.StringVar(&policies, "policies", "serial,overlap", "comma-separated policies")
	f.StringVar(&set, "set", "", "one knob set for every policy, e.g. chunk=16MiB")
	f.StringVar(&sets, "sets", "", "several knob sets separated by ';', e.g. \"chunk=16MiB;chunk=64MiB\"")
	f.IntVar(&o.Rounds, "rounds", 1, "engine runs per case (median)")
	f.IntVar(&o.Warmup, "warmup", 1, "untimed engine rounds of every case first (the heap's first touch of new memory is not the steady state)")
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the engine runs' order")
	f.StringVar(&o.Order, "order", calibrate.OrderRandom, "engine runs: random (each round all cases in a new random order) or grouped (each case's warm-ups and rounds back to back: its steady state; the noise floor then omits the machine's drift between cases)")
	f.StringVar(&o.Out, "out", "", "folder for results.csv and the sim-vs-engine figure")
	f.BoolVar(&o.RescaleDisk, "rescale-disk", false, "scale the simulator's disk bandwidth by a reference read's throughput beside the engine over the profile's model of it (the disk's speed drift)")
	f.BoolVar(&o.RescaleCPU, "rescale-cpu", false, "scale the simulator's CPU prices by the CPU reference's time beside the engine over its time at calibration (the machine's speed drift; needs a profile with host.reference)")
	f.StringVar(&compare, "compare", "", "more profiles (comma-separated) priced against the same engine runs: a model A/B on one set of measurements")
	f.IntVar(&o.GPUOrdinal, "gpu", 0, "run the engine's GPU backend on this CUDA device (as query --gpu), against a profile from calibrate --micro --gpu")
	f.BoolVar(&o.GPUHybrid, "gpu-hybrid", false, "with --gpu: the scan pipelines the GPU path cannot run run on the host, in the engine and the simulator (as query --gpu-hybrid)")
	_ = cmd.MarkFlagRequired("data")
	return cmd
}

func newValidateSpreadCmd(g *globals) *cobra.Command {
	o := calibrate.SpreadOptions{MedianTarget: 0.05, MaxTarget: 0.15}
	cmd := &cobra.Command{
		Use:   "validate-spread DIR DIR DIR...",
		Short: "How well the engine predicts itself across validations (the floor under validate's error)",
		Long: `Reads the engine rows of three or more validations (validate --out folders; a
folder holding several appended validations counts as one per start time) and
predicts each validation's case medians by the median of the other
validations' medians: the error a model that knew the other runs exactly would
have. It prints per validation the median, P90 and max |error| and the bias,
how many meet --median-target and --max-target, and the same figures for every
ordered pair of validations (one predicting another). Only the cases all
validations ran are compared. On a shared machine the engine's medians move
between runs hours apart; validate's error is to be read against this floor.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, dirs []string) error {
			o.Dirs = dirs
			rep, err := calibrate.EngineSpread(o)
			if err != nil {
				return err
			}
			if g.json {
				return writeJSON(c.OutOrStdout(), rep)
			}
			return rep.WriteText(c.OutOrStdout())
		},
	}
	cmd.Flags().Float64Var(&o.MedianTarget, "median-target", 0.05, "bound on a validation's median |error| (the project's target)")
	cmd.Flags().Float64Var(&o.MaxTarget, "max-target", 0.15, "bound on a validation's max |error| (the project's target)")
	return cmd
}

func newValidateRepriceCmd(g *globals) *cobra.Command {
	var o calibrate.RepriceOptions
	var profiles string
	cmd := &cobra.Command{
		Use:   "validate-reprice --data DIR --profiles P1,P2 OUT...",
		Short: "Price saved validations' engine runs with other profiles (a model A/B on the same runs, after the fact)",
		Long: `Reads the engine rounds of validate --out folders (a folder holding several
appended validations counts as one per start time) and prices every case with
each profile of --profiles, at the CPU and disk rescales each validation
measured and applied (OUT/validations.jsonl), and summarizes each validation and
profile as validate does: median, P90 and max |error| with its case, bias, the
queries ranked alike (Kendall tau = 1) and the pairs of cases the engine
separates that the profile reverses. A profile priced against its own validation
reproduces that validation's summary; so --compare can be run later, on every
validation kept. --data is the dataset the validations ran on (its statistics
size the simulated queries).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, dirs []string) error {
			for _, p := range strings.Split(profiles, ",") {
				if p = strings.TrimSpace(p); p != "" {
					o.Profiles = append(o.Profiles, p)
				}
			}
			o.Dirs, o.Log = dirs, c.ErrOrStderr()
			rep, err := calibrate.Reprice(c.Context(), o)
			if err != nil {
				return err
			}
			if g.json {
				return writeJSON(c.OutOrStdout(), rep)
			}
			return rep.WriteText(c.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&o.Data, "data", "", "the dataset the validations ran on")
	cmd.Flags().StringVar(&profiles, "profiles", "", "profiles to price the runs with, comma-separated (names or .yaml paths)")
	_ = cmd.MarkFlagRequired("data")
	_ = cmd.MarkFlagRequired("profiles")
	return cmd
}

func newValidateOpsCmd(g *globals) *cobra.Command {
	var o calibrate.OpsOptions
	cmd := &cobra.Command{
		Use:   "validate-ops --data DIR [--profile P] [--warmup 1] TIMES.csv [TIMES-rank1.csv ...]",
		Short: "Price every operator the engine timed (query --op-times) with a profile: where the model errs inside a query",
		Long: `Reads the operator times of 'gostachio query --op-times' (every operator the
host ran in every query: its input rows and bytes, output bytes and time) and
prices each run of each operator with the profile as the simulator prices it
inside a kernel, at the measured sizes: its kind's cost, its own scale where
the calibration measured it (marked *), a probe's working set the table its
device built in that run. It prints per plan operator its wall time (waits
for a core included), its thread's CPU time (files written before the cpu_ns
column: "-"), the priced time and both ratios, then the totals per query and
per operator kind; per query also the CPU time its processes used over the
kept runs (every thread, user and system) and what of it no operator took:
reads, decoding, exchange, the network stack, page faults, the collector. The
cardinalities are the measured ones, so a ratio away from 1 is the cost per
row and byte the model gives that operator inside the query (where reads,
the other device's kernels and fresh memory share the machine), not an
estimate's error. Partial states' emits are measured, not priced. Several
files are a cluster's (worker --op-times: one a worker), priced together.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.Times = args
			if o.Data == "" {
				return fmt.Errorf("validate-ops: --data is required (the dataset the times were taken on)")
			}
			if o.Profile == "" {
				o.Profile = sim.LocalProfile("devbox-calibrated")
			}
			o.Log = c.ErrOrStderr()
			rep, err := calibrate.PriceOps(o)
			if err != nil {
				return err
			}
			if g.json {
				return writeJSON(c.OutOrStdout(), rep)
			}
			return rep.WriteText(c.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&o.Profile, "profile", "", "profile pricing the operators (default: the shipped CPU-engine profile calibrated on a machine like this one, else devbox-calibrated)")
	cmd.Flags().StringVar(&o.Data, "data", "", "the dataset the times were taken on")
	cmd.Flags().Float64Var(&o.CPUSlowdown, "cpu-slowdown", 0, "multiply every price by this factor (validate's --rescale-cpu factor; 0: as profiled)")
	cmd.Flags().IntVar(&o.Warmup, "warmup", 1, "drop each query's first runs (a process's first runs of a query fault its memory in: drop half of them)")
	return cmd
}

func newValidateReferenceCmd(g *globals) *cobra.Command {
	var o calibrate.ResponseOptions
	var seconds float64
	cmd := &cobra.Command{
		Use:   "validate-reference --data DIR [--profile P] [--queries q1,q6,q18] [--policy overlap] [--seconds 60]",
		Short: "How much of the CPU reference's speed changes the engine's query times follow (what validate --rescale-cpu assumes)",
		Long: `validate --rescale-cpu scales the simulator's CPU prices by the CPU
reference's time beside the engine over its time at calibration: it assumes
the engine slows down as the simulator so scaled says it does.
validate-reference checks that on this machine. It runs each query over and
over for --seconds (after --warmup untimed runs), each run between two
timings of the CPU reference, and fits the engine's response to the
reference: the slope of ln(time) on ln(reference) over --block windows of
consecutive runs (each window's median time against its mean reference; least
squares, with its standard error), as validate averages a whole run's
references. 1: the time follows the reference; 0: it does not move. Beside it,
the simulator's response over the same windows, its prices scaled by each
window's reference (with --rescale-disk also its disk bandwidth by a disk
reference read after every run, as validate --rescale-disk), and its median
error over the windows. On a guest whose disk slows down when its CPU does,
give --rescale-disk: without it the queries the simulator has waiting on the
disk show a low simulator response against the engine's. Also printed: the paired response, between the runs both
references put in the fast half of the machine's speeds and those both put in
the slow half; a machine that changes speed within a run blurs the halves,
and this response then falls below the windows'.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if o.Profile == "" {
				o.Profile = localProfilePath()
			}
			if !(seconds > 0) {
				return fmt.Errorf("validate-reference: --seconds %v: want a positive number of seconds per query", seconds)
			}
			o.Duration = time.Duration(seconds * float64(time.Second))
			o.Log = c.ErrOrStderr()
			rep, err := calibrate.ReferenceResponse(c.Context(), o)
			if err != nil {
				return err
			}
			if g.json {
				return writeJSON(c.OutOrStdout(), rep)
			}
			return rep.WriteText(c.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Profile, "profile", "", "profile pricing the queries, with host.reference (name or .yaml path) "+localProfileHelp)
	f.StringVar(&o.Data, "data", "", "dataset the engine runs on")
	f.StringVar(&o.Queries, "queries", "q1,q6,q18", "q1..q22, a comma-separated list, or all")
	f.StringVar(&o.Policy, "policy", "overlap", "the engine's and the simulator's policy")
	f.StringVar(&o.Set, "set", "", "knobs, e.g. chunk=16MiB")
	f.Float64Var(&seconds, "seconds", 60, "how long each query runs (about 1 s of references per run besides)")
	f.IntVar(&o.Warmup, "warmup", 2, "untimed runs of each query first")
	f.DurationVar(&o.Block, "block", 10*time.Second, "the windows of the window response: runs starting in the same window of this length make one point")
	f.BoolVar(&o.RescaleDisk, "rescale-disk", false, "read the disk reference after every run too, and scale the simulator's disk bandwidth per window by it (as validate --rescale-disk); needs SF 0.25 or more")
	_ = cmd.MarkFlagRequired("data")
	return cmd
}
