package calibrate

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"gostachio/dataset"
	"gostachio/engine"
	"gostachio/engine/gpu"
	"gostachio/experiments"
	"gostachio/internal/cpuref"
	"gostachio/internal/diskref"
	"gostachio/internal/machine"
	"gostachio/internal/stats"
	"gostachio/plan"
	"gostachio/plots"
	"gostachio/scheduler"
	"gostachio/sim"
	"gostachio/tpch/queries"
)

// ValidateOptions are the inputs of `gostachio validate`.
type ValidateOptions struct {
	// Profile is the profile to predict with (name or .yaml path).
	Profile string
	// Data is the dataset both backends run on.
	Data string
	// Queries is "all" or a comma-separated list.
	Queries string
	// Policies and Sets: every query runs under every policy × knob set
	// ("" in Sets: the policy's defaults).
	Policies []string
	Sets     []string
	// Rounds of engine runs per case (median; default 1), arranged by
	// Order.
	Rounds int
	// Warmup is the number of untimed rounds of every case before the
	// measured ones. The engine's first runs in a process grow the Go heap
	// onto memory never touched before, and a first touch costs a page
	// fault (12 µs per 4 KiB page on the VM this was calibrated on: 0.3
	// GB/s, slower than the queries' reads); the simulator models the
	// steady state, in which the heap reuses its pages.
	Warmup int
	// Order is how the engine's runs are arranged: OrderRandom (default:
	// every round runs all cases in a new seeded random order, so each
	// case's rounds follow different queries) or OrderGrouped (the cases
	// in one seeded random order, each case's warm-ups and rounds back to
	// back: its steady state, without the previous query's heap; but a
	// drift of the machine's speed between cases then shows in no case's
	// spread, so the noise floor and the separated pairs understate the
	// uncertainty of comparing cases).
	Order string
	Seed  uint64
	// RescaleCPU scales the simulator's CPU prices (costmodel.Device.Slowed)
	// by the CPU reference's time beside the engine's runs over its time at
	// calibration (Report.CPU), for a machine whose speed drifts. It needs
	// a profile with host.reference.
	RescaleCPU bool
	// RescaleDisk scales the simulator's disk bandwidth by the disk
	// reference's throughput beside the engine's runs over what the
	// profile's storage model gives it (Report.Disk, diskref.go): the
	// disk's speed drift since calibration.
	RescaleDisk bool
	// Compare lists more profiles priced against the same engine runs
	// (their summaries in Report.Compared): two models compared on one set
	// of measurements, where validations run apart differ by the
	// machine's drift between them (on the dev VM, more than most model
	// changes).
	Compare []string
	// Out, if set, is a folder for results.csv (experiments format: engine
	// and sim rows) and the sim-vs-engine figure.
	Out string
	// UseGPU runs the engine's GPU backend on CUDA device GPUOrdinal (as
	// `query --gpu`: scan pipelines on the GPU, reads into pinned memory),
	// against a profile calibrated for it (calibrate --gpu: node
	// gpu_scans_only); the engine runs as many devices as the profile.
	UseGPU     bool
	GPUOrdinal int
	// GPUHybrid runs, with UseGPU, the scan pipelines the GPU path cannot
	// run on the host (engine.PlaceGPU), in the engine and the simulator.
	GPUHybrid bool
	// Log receives progress and warnings (nil: discarded).
	Log io.Writer
}

// Case is one query × policy × knob set: the engine's measured wall time
// (median over rounds) and the simulator's makespan, in seconds.
type Case struct {
	Query, Policy, Set string
	Engine, Sim        float64
	EngineRounds       []float64
	// SimKinds is the makespan the profile predicts without its
	// profiled operators (every operator priced by its kind alone: what
	// it predicts for operators it never measured); 0 when the profile
	// has none.
	SimKinds float64 `json:",omitempty"`
}

// Err is (sim − engine) / engine.
func (c Case) Err() float64 { return (c.Sim - c.Engine) / c.Engine }

// ErrKinds is (SimKinds − engine) / engine.
func (c Case) ErrKinds() float64 { return (c.SimKinds - c.Engine) / c.Engine }

// Report is the outcome of a validation.
type Report struct {
	Profile string
	Cases   []Case
	// MedianAbs, P90Abs, MaxAbs summarize |Err| over the cases.
	MedianAbs, P90Abs, MaxAbs float64
	// MeanErr is the mean signed Err (negative: the simulator predicts
	// less time than the engine takes); Under counts the cases it
	// under-predicts.
	MeanErr float64
	Under   int
	// NoiseFloor is the median over the cases of 0.674·SE/median of the
	// engine's rounds (experiments.MedianSE): the median |error| that a
	// simulator exact on every case's true median would still show,
	// because each measured median is off the true one by the rounds'
	// noise. Nil with fewer than 3 rounds.
	NoiseFloor *float64
	// Tau is Kendall's τ per query between the engine's and the
	// simulator's times over the query's cases (1: same ranking).
	Tau map[string]float64
	// Order is, per query, how the simulator orders the pairs of cases
	// that the engine tells apart (their runs' median intervals disjoint).
	Order   map[string]PairOrder
	Queries []string
	// RunOrder is how the engine's runs were arranged (ValidateOptions.Order).
	RunOrder string
	// Kinds summarizes Case.SimKinds as the fields above summarize Sim
	// (nil when the profile has no profiled operators).
	Kinds *KindsSummary `json:",omitempty"`
	// CPU compares the CPU reference's time beside the engine's runs with
	// the profile's (nil when the profile has none).
	CPU *CPUCheck `json:",omitempty"`
	// Disk is the disk reference beside the engine (--rescale-disk).
	Disk *DiskCheck `json:",omitempty"`
	// Figure lists the figure files written (Out).
	Figure []string
	// Compared summarizes ValidateOptions.Compare's profiles against the
	// same engine runs, in that order.
	Compared []Comparison `json:",omitempty"`
}

// Comparison is one more profile's prediction of a validation's cases:
// Profile is the name or path it was given as, Sims[i] its makespan for
// Cases[i] (seconds), the rest summarize it as Report summarizes Sim
// (rescaled with the validation's CPU ratio when that is applied).
type Comparison struct {
	Profile                            string
	Sims                               []float64
	MedianAbs, P90Abs, MaxAbs, MeanErr float64
	Under, SameRanking, Reversed       int
}

// refEvery is how many engine runs validate does between two CPU
// reference samples (each ~0.1 s).
const refEvery = 8

// CPUCheck is the CPU reference (internal/cpuref) timed before the
// engine's first run and after each of its rounds, against the profile's
// time of it.
type CPUCheck struct {
	// ProfileNs is the profile's host.reference (a mean over the
	// calibration); Ns the mean of the times beside the engine, MinNs and
	// MaxNs their range, N their count.
	ProfileNs, Ns, MinNs, MaxNs int64
	N                           int
	// Ratio is Ns / ProfileNs: above 1 the machine ran slower beside the
	// engine than at calibration.
	Ratio float64
	// Rescaled: the simulator's CPU prices were multiplied by Ratio
	// (ValidateOptions.RescaleCPU); UnscaledMedianAbs and UnscaledMeanErr
	// are the errors without it.
	Rescaled                           bool
	UnscaledMedianAbs, UnscaledMeanErr float64
}

// KindsSummary is the error of the kinds-only predictions (Case.SimKinds).
type KindsSummary struct {
	MedianAbs, P90Abs, MaxAbs, MeanErr float64
	Under, SameRanking                 int
}

// PairOrder counts a query's pairs of cases: Separated are those whose
// engine medians' intervals (experiments.MedianRankCI at 95%; with fewer
// than 6 rounds, the range of the rounds) do not overlap, so the engine
// ranks them beyond its noise; Reversed are those of them the simulator
// orders the other way. A pair inside the noise ranks neither way, and so
// does a pair of cases with fewer than minSeparationRounds rounds (their
// range covers the median with less than 90% probability).
type PairOrder struct {
	Pairs, Separated, Reversed int
}

// SameOrder counts the queries where the simulator orders every pair the
// engine separates as the engine does, and how many of them have such a
// pair at all (the others' cases are all within the engine's noise).
func (r *Report) SameOrder() (same, decided int) {
	for _, q := range r.Queries {
		o := r.Order[q]
		if o.Reversed == 0 {
			same++
		}
		if o.Separated > 0 {
			decided++
		}
	}
	return same, decided
}

// minSeparationRounds is the fewest engine rounds from which a case's
// interval says anything: the range of 5 runs holds the median with
// probability 1 − 2/32 = 94%, of 3 runs only 75%.
const minSeparationRounds = 5

// pairOrder compares the query's cases pairwise (see PairOrder).
func pairOrder(cases []Case) PairOrder {
	var o PairOrder
	ci := make([]experiments.MedianInterval, len(cases))
	for i, c := range cases {
		ci[i] = experiments.MedianRankCI(c.EngineRounds, 0.95)
	}
	for i := range cases {
		for j := i + 1; j < len(cases); j++ {
			o.Pairs++
			a, b := ci[i], ci[j]
			if a.N < minSeparationRounds || b.N < minSeparationRounds || (a.Hi >= b.Lo && b.Hi >= a.Lo) {
				continue
			}
			o.Separated++
			if sign(cases[i].Engine-cases[j].Engine)*sign(cases[i].Sim-cases[j].Sim) < 0 {
				o.Reversed++
			}
		}
	}
	return o
}

// SameRanking counts the queries whose τ is 1.
func (r *Report) SameRanking() int {
	n := 0
	for _, q := range r.Queries {
		if r.Tau[q] == 1 {
			n++
		}
	}
	return n
}

// Validate runs every case on the engine (one storage session, cold
// O_DIRECT reads) and in the simulator with the profile, on the dataset's
// manifest statistics and the same policy and knobs, and summarizes the
// prediction error. The simulator sees no measurement of the queries: the
// profile comes from micro-benchmarks (held-out check).
func Validate(ctx context.Context, opts ValidateOptions) (*Report, error) {
	logw := opts.Log
	if logw == nil {
		logw = io.Discard
	}
	if opts.Rounds <= 0 {
		opts.Rounds = 1
	}
	if opts.Warmup < 0 {
		return nil, fmt.Errorf("calibrate: validate: --warmup %d: want 0 or more untimed rounds", opts.Warmup)
	}
	if len(opts.Policies) == 0 {
		opts.Policies = []string{"serial", "overlap"}
	}
	if opts.Order == "" {
		opts.Order = OrderRandom
	}
	if opts.Order != OrderRandom && opts.Order != OrderGrouped {
		return nil, fmt.Errorf("calibrate: validate: --order %q: want %s or %s", opts.Order, OrderRandom, OrderGrouped)
	}
	if len(opts.Sets) == 0 {
		opts.Sets = []string{""}
	}
	names, err := engine.ParseQueries(opts.Queries, queries.Names())
	if err != nil {
		return nil, err
	}
	prof, err := sim.LoadProfileLog(opts.Profile, logw)
	if err != nil {
		return nil, err
	}
	switch {
	case opts.UseGPU && !prof.Node.GPUScansOnly:
		return nil, fmt.Errorf("calibrate: validate --gpu: profile %s does not model the GPU backend (node.gpu_scans_only): calibrate one with --micro --gpu", prof.Name)
	case !opts.UseGPU && prof.Node.GPUScansOnly:
		return nil, fmt.Errorf("calibrate: validate: profile %s models the GPU backend: validate it with --gpu N", prof.Name)
	case !opts.UseGPU && prof.Node.GPUs != runtime.GOMAXPROCS(0):
		fmt.Fprintf(logw, "warning: profile %s has %d devices, the engine here runs %d worker groups\n", prof.Name, prof.Node.GPUs, runtime.GOMAXPROCS(0))
	}
	ds, tables, sf, err := openPlanStats(opts.Data)
	if err != nil {
		return nil, err
	}
	var cases []Case
	for _, q := range names {
		for _, set := range opts.Sets {
			for _, pol := range opts.Policies {
				cases = append(cases, Case{Query: q, Policy: pol, Set: set})
			}
		}
	}
	var others []*sim.Profile
	for _, name := range opts.Compare {
		p, err := sim.LoadProfileLog(name, logw)
		if err != nil {
			return nil, err
		}
		if p.Node.GPUScansOnly != prof.Node.GPUScansOnly {
			return nil, fmt.Errorf("calibrate: validate --compare %s: it models the %s, %s the %s", name, backendOf(p), prof.Name, backendOf(prof))
		}
		others = append(others, p)
	}
	for _, p := range append([]*sim.Profile{prof}, others...) {
		if opts.RescaleCPU && p.Host.Reference <= 0 {
			return nil, fmt.Errorf("calibrate: validate --rescale-cpu: profile %s has no host.reference (the CPU reference's time at calibration): recalibrate it with this version", p.Name)
		}
	}
	// Simulator: deterministic, once per case (and once more without the
	// profiled operators, if the profile has any); before the engine, so
	// that a profile the simulator rejects fails in seconds.
	if err := simulateCases(ctx, cases, prof, sf, tables, opts.UseGPU && opts.GPUHybrid); err != nil {
		return nil, err
	}
	otherCases := make([][]Case, len(others))
	for i, p := range others {
		otherCases[i] = slices.Clone(cases)
		if err := simulateCases(ctx, otherCases[i], p, sf, tables, opts.UseGPU && opts.GPUHybrid); err != nil {
			return nil, err
		}
	}
	// Engine: rounds of all cases in a seeded random order.
	defer engine.TuneGC()()
	engine.FitHeapLimit(ds)
	if err := engine.VerifyOnce(ctx, ds, logw); err != nil {
		return nil, err
	}
	base := engine.QueryOptions{Log: logw, NoVerify: true}
	if opts.UseGPU {
		dev, err := gpu.Open(opts.GPUOrdinal, 0)
		if err != nil {
			return nil, fmt.Errorf("calibrate: validate --gpu %d: %w", opts.GPUOrdinal, err)
		}
		defer dev.Close()
		fmt.Fprintf(logw, "GPU %d: %s (%d SMs), pipelines %s\n", opts.GPUOrdinal, dev.Info().Name, dev.Info().SMs, dev.JIT())
		pool, unpin, err := dev.PinnedPool(engine.DefaultMem / 4)
		if err != nil {
			return nil, fmt.Errorf("calibrate: validate --gpu %d: %w", opts.GPUOrdinal, err)
		}
		defer unpin()
		base.GPU, base.Devices, base.Allocator, base.GPUHybrid = dev, prof.Node.GPUs, pool, opts.GPUHybrid
	}
	reader, err := engine.OpenSession(ctx, ds, base)
	if err != nil {
		return nil, err
	}
	defer reader.Close()
	started := time.Now().UTC().Format(time.RFC3339)
	// The CPU reference before the first run and after every refEvery
	// runs: the CPU spends seconds in each of its two speeds
	// (reference.go), and the mean of a few samples estimates the share
	// of slow time poorly (18 samples: ±11% here).
	var refs []int64
	var diskBytes int64
	var diskTime time.Duration
	diskReads := 0
	var refErr error
	reference := func() {
		if prof.Host.Reference > 0 {
			refs = append(refs, cpuref.Ns())
		}
		if opts.RescaleDisk && refErr == nil {
			b, d, err := diskReference(ctx, reader, ds, &prof.NVMe)
			diskBytes, diskTime, diskReads, refErr = diskBytes+b, diskTime+d, diskReads+1, err
		}
	}
	reference()
	for i, run := range engineRuns(len(cases), opts.Warmup, opts.Rounds, opts.Order, opts.Seed) {
		if i > 0 && i%refEvery == 0 {
			reference()
		}
		c := &cases[run.Case]
		qo := base
		qo.Policy, qo.Set, qo.Reader = c.Policy, c.Set, reader
		res, err := runQuery(ctx, ds, c.Query, qo)
		if err != nil {
			return nil, err
		}
		if run.Round < 0 {
			fmt.Fprintf(logw, "warm-up %s %s %s: engine %.3f s\n", c.Query, c.Policy, c.Set, res.Wall.Seconds())
			continue
		}
		c.EngineRounds = append(c.EngineRounds, res.Wall.Seconds())
		fmt.Fprintf(logw, "round %d %s %s %s: engine %.3f s\n", run.Round+1, c.Query, c.Policy, c.Set, res.Wall.Seconds())
	}
	reference()
	if refErr != nil {
		return nil, refErr
	}
	diskBps := 0.0
	if diskTime > 0 {
		diskBps = float64(diskBytes) / diskTime.Seconds()
	}
	rep := summarize(prof.Name, names, cases)
	// rescale re-prices cases with p's CPU prices scaled by the CPU
	// reference beside the engine over p's (--rescale-cpu).
	// and its disk bandwidth by the disk reference's ratio to its model
	// (--rescale-disk).
	rescale := func(p *sim.Profile, cases []Case) (*CPUCheck, *DiskCheck, error) {
		var cpu *CPUCheck
		if len(refs) > 0 {
			cpu = cpuCheck(int64(p.Host.Reference), refs)
		}
		var disk *DiskCheck
		if diskReads > 0 {
			model := diskref.ModelBps(&p.NVMe)
			disk = &DiskCheck{ModelBps: model, MeasuredBps: diskBps, N: diskReads, Ratio: diskBps / model, Rescaled: true}
		}
		scaleCPU := opts.RescaleCPU && cpu != nil
		if !scaleCPU && disk == nil {
			return cpu, disk, nil
		}
		var cpuRatio, diskRatio float64
		if scaleCPU {
			unscaled := summarize(p.Name, names, cases)
			cpu.Rescaled, cpu.UnscaledMedianAbs, cpu.UnscaledMeanErr = true, unscaled.MedianAbs, unscaled.MeanErr
			cpuRatio = cpu.Ratio
		}
		if disk != nil {
			diskRatio = disk.Ratio
		}
		return cpu, disk, simulateCases(ctx, cases, rescaledProfile(p, cpuRatio, diskRatio, opts.UseGPU), sf, tables, opts.UseGPU && opts.GPUHybrid)
	}
	if len(refs) > 0 || diskReads > 0 {
		cpu, disk, err := rescale(prof, cases)
		if err != nil {
			return nil, err
		}
		rep = summarize(prof.Name, names, cases)
		rep.CPU, rep.Disk = cpu, disk
	}
	for i, p := range others {
		oc := otherCases[i]
		for k := range oc {
			oc[k].EngineRounds = cases[k].EngineRounds
		}
		if len(refs) > 0 || diskReads > 0 {
			if _, _, err := rescale(p, oc); err != nil {
				return nil, err
			}
		}
		rep.Compared = append(rep.Compared, compareWith(opts.Compare[i], names, oc))
	}
	rep.RunOrder = opts.Order
	if opts.Out != "" {
		if err := writeValidation(rep, opts, prof.Name, sf, started, logw); err != nil {
			return rep, err
		}
		rec := ValidationRecord{Started: started, Profile: opts.Profile, Data: opts.Data, SF: sf,
			GPU: opts.UseGPU, GPUHybrid: opts.UseGPU && opts.GPUHybrid,
			RescaleCPU: opts.RescaleCPU && len(refs) > 0, RescaleDisk: diskReads > 0,
			CPURefN: len(refs), DiskBps: diskBps, DiskReads: diskReads}
		if len(refs) > 0 {
			var sum float64
			for _, r := range refs {
				sum += float64(r)
			}
			rec.CPURefNs = sum / float64(len(refs))
		}
		if err := appendRecord(opts.Out, rec); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// simulateCases sets every case's Sim from prof and, if prof has
// profiled operators, its SimKinds from prof without them.
// simulateCases prices cases with prof (and with its kinds only); hybrid
// places the scan pipelines as a hybrid GPU run does.
func simulateCases(ctx context.Context, cases []Case, prof *sim.Profile, sf float64, tables []plan.TableStats, hybrid bool) error {
	var kinds *sim.Profile
	if len(prof.Host.Profiled) > 0 || len(prof.GPU.Profiled) > 0 {
		k := *prof
		k.Host.Profiled, k.GPU.Profiled = nil, nil
		kinds = &k
	}
	for i := range cases {
		c := &cases[i]
		p, err := queries.Build(c.Query, sf, tables)
		if err != nil {
			return fmt.Errorf("calibrate: %w", err)
		}
		if hybrid {
			if _, err := engine.PlaceGPU(p, true); err != nil {
				return err
			}
		}
		pol, err := scheduler.NewPolicy(c.Policy, c.Set)
		if err != nil {
			return err
		}
		rep, err := sim.Simulate(ctx, p, prof, 1, pol, nil, 0, 0)
		if err != nil {
			return err
		}
		c.Sim = float64(rep.MakespanNs) / 1e9
		if kinds != nil {
			if rep, err = sim.Simulate(ctx, p, kinds, 1, pol, nil, 0, 0); err != nil {
				return err
			}
			c.SimKinds = float64(rep.MakespanNs) / 1e9
		}
	}
	return nil
}

// backendOf names the engine a profile models.
func backendOf(p *sim.Profile) string {
	if p.Node.GPUScansOnly {
		return "GPU backend"
	}
	return "CPU engine"
}

// compareWith summarizes cases (the validation's engine rounds, another
// profile's Sim) as a Comparison.
func compareWith(profile string, names []string, cases []Case) Comparison {
	r := summarize(profile, names, cases)
	c := Comparison{Profile: profile, MedianAbs: r.MedianAbs, P90Abs: r.P90Abs, MaxAbs: r.MaxAbs, MeanErr: r.MeanErr,
		Under: r.Under, SameRanking: r.SameRanking()}
	for _, cs := range cases {
		c.Sims = append(c.Sims, cs.Sim)
	}
	for _, q := range names {
		c.Reversed += r.Order[q].Reversed
	}
	return c
}

// cpuCheck summarizes the reference times refs (at least one) against the
// profile's: their mean, range and the ratio mean / profileNs.
func cpuCheck(profileNs int64, refs []int64) *CPUCheck {
	c := &CPUCheck{ProfileNs: profileNs, MinNs: slices.Min(refs), MaxNs: slices.Max(refs), N: len(refs)}
	var sum float64
	for _, r := range refs {
		sum += float64(r)
	}
	mean := sum / float64(len(refs))
	c.Ns, c.Ratio = int64(math.Round(mean)), mean/float64(profileNs)
	return c
}

// Orders of the engine's runs (ValidateOptions.Order).
const (
	OrderRandom  = "random"
	OrderGrouped = "grouped"
)

// engineRun is one engine run of a validation: case index and round
// (negative: a warm-up, not timed).
type engineRun struct{ Case, Round int }

// engineRuns is the sequence of a validation's engine runs: every case
// warmup + rounds times, rounds -warmup..rounds-1, arranged by order (see
// ValidateOptions.Order); the same seed gives the same sequence.
func engineRuns(cases, warmup, rounds int, order string, seed uint64) []engineRun {
	rng := rand.New(rand.NewPCG(seed, 0x7a11))
	perm := make([]int, cases)
	for i := range perm {
		perm[i] = i
	}
	var out []engineRun
	if order == OrderGrouped {
		rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		for _, c := range perm {
			for r := -warmup; r < rounds; r++ {
				out = append(out, engineRun{c, r})
			}
		}
		return out
	}
	for r := -warmup; r < rounds; r++ {
		rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		for _, c := range perm {
			out = append(out, engineRun{c, r})
		}
	}
	return out
}

// summarize sets every case's Engine to the median of its rounds and
// computes the report's summary over the cases (at least one, every one
// with rounds) of the queries names.
func summarize(profile string, names []string, cases []Case) *Report {
	rep := &Report{Profile: profile, Cases: cases, Tau: map[string]float64{}, Order: map[string]PairOrder{}, Queries: names}
	var abs, floors []float64
	for i := range cases {
		c := &cases[i]
		c.Engine = stats.Median(c.EngineRounds)
		abs = append(abs, math.Abs(c.Err()))
		rep.MeanErr += c.Err() / float64(len(cases))
		if c.Err() < 0 {
			rep.Under++
		}
		if se := experiments.MedianSE(c.EngineRounds); !math.IsNaN(se) {
			floors = append(floors, 0.674*se/c.Engine)
		}
	}
	if len(floors) > 0 {
		f := stats.Median(floors)
		rep.NoiseFloor = &f
	}
	slices.Sort(abs)
	rep.MedianAbs, rep.P90Abs, rep.MaxAbs = stats.Quantile(abs, 0.5), stats.Quantile(abs, 0.9), abs[len(abs)-1]
	for _, q := range names {
		var e, s []float64
		var qc []Case
		for _, c := range cases {
			if c.Query == q {
				e, s = append(e, c.Engine), append(s, c.Sim)
				qc = append(qc, c)
			}
		}
		rep.Tau[q] = KendallTau(e, s)
		rep.Order[q] = pairOrder(qc)
	}
	rep.Kinds = kindsSummary(names, cases)
	return rep
}

// kindsSummary summarizes the cases' kinds-only predictions (nil if any
// case lacks one).
func kindsSummary(names []string, cases []Case) *KindsSummary {
	k := &KindsSummary{}
	abs := make([]float64, 0, len(cases))
	for _, c := range cases {
		if !(c.SimKinds > 0) {
			return nil
		}
		abs = append(abs, math.Abs(c.ErrKinds()))
		k.MeanErr += c.ErrKinds() / float64(len(cases))
		if c.ErrKinds() < 0 {
			k.Under++
		}
	}
	slices.Sort(abs)
	k.MedianAbs, k.P90Abs, k.MaxAbs = stats.Quantile(abs, 0.5), stats.Quantile(abs, 0.9), abs[len(abs)-1]
	for _, q := range names {
		var e, s []float64
		for _, c := range cases {
			if c.Query == q {
				e, s = append(e, c.Engine), append(s, c.SimKinds)
			}
		}
		if KendallTau(e, s) == 1 {
			k.SameRanking++
		}
	}
	return k
}

// KendallTau is Kendall's τ-a of two equal-length samples: (concordant −
// discordant) / pairs; a tie in either counts as neither. Fewer than two
// values give 1.
func KendallTau(a, b []float64) float64 {
	n := len(a)
	if n < 2 || len(b) != n {
		return 1
	}
	var s float64
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			s += sign(a[i]-a[j]) * sign(b[i]-b[j])
		}
	}
	return s / float64(n*(n-1)/2)
}

func sign(v float64) float64 {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}

// WriteText prints the cases and the summary.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%-5s %-8s %-14s %9s %9s %8s", "query", "policy", "set", "engine s", "sim s", "error")
	if r.Kinds != nil {
		fmt.Fprintf(&b, " %9s %8s", "kinds s", "error")
	}
	b.WriteByte('\n')
	for _, c := range r.Cases {
		set := c.Set
		if set == "" {
			set = "-"
		}
		fmt.Fprintf(&b, "%-5s %-8s %-14s %9.3f %9.3f %+7.1f%%", c.Query, c.Policy, set, c.Engine, c.Sim, 100*c.Err())
		if r.Kinds != nil {
			fmt.Fprintf(&b, " %9.3f %+7.1f%%", c.SimKinds, 100*c.ErrKinds())
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "\n|error| over %d cases: median %.1f%%, P90 %.1f%%, max %.1f%%\n", len(r.Cases), 100*r.MedianAbs, 100*r.P90Abs, 100*r.MaxAbs)
	fmt.Fprintf(&b, "bias: mean error %+.1f%% (the simulator under-predicts %d of %d cases)\n", 100*r.MeanErr, r.Under, len(r.Cases))
	if k := r.Kinds; k != nil {
		fmt.Fprintf(&b, "kinds only (profiled operators priced by their kind, as an unmeasured operator is): median %.1f%%, P90 %.1f%%, max %.1f%%, bias %+.1f%% (%d under), same ranking %d of %d queries\n",
			100*k.MedianAbs, 100*k.P90Abs, 100*k.MaxAbs, 100*k.MeanErr, k.Under, k.SameRanking, len(r.Queries))
	}
	if c := r.CPU; c != nil {
		ms := func(ns int64) float64 { return float64(ns) / 1e6 }
		fmt.Fprintf(&b, "CPU reference: %.2f ms at calibration, %.2f ms beside the engine (mean of %d, %.2f–%.2f ms): ×%.3f", ms(c.ProfileNs), ms(c.Ns), c.N, ms(c.MinNs), ms(c.MaxNs), c.Ratio)
		if c.Rescaled {
			fmt.Fprintf(&b, "; the simulator's CPU prices are scaled by it (unscaled: median %.1f%%, bias %+.1f%%)\n", 100*c.UnscaledMedianAbs, 100*c.UnscaledMeanErr)
		} else {
			fmt.Fprintf(&b, " (not applied; --rescale-cpu applies it)\n")
		}
	}
	if d := r.Disk; d != nil {
		fmt.Fprintf(&b, "disk reference: %.3f GB/s beside the engine (%d reads of %d MiB), %.3f GB/s in the profile's model: ×%.3f; the simulator's disk bandwidth is scaled by it\n",
			d.MeasuredBps/1e9, d.N, diskref.Bytes>>20, d.ModelBps/1e9, d.Ratio)
	}
	if r.NoiseFloor == nil {
		fmt.Fprintf(&b, "engine noise floor: unknown (run 3+ rounds)\n")
	} else {
		fmt.Fprintf(&b, "engine noise floor: median |error| %.1f%% for a simulator exact on every case (each measured median is off the true one by 0.674·SE of its rounds)\n", 100**r.NoiseFloor)
	}
	switch r.RunOrder {
	case OrderGrouped:
		// A case's rounds are consecutive: a drift of the machine
		// between cases is in no case's spread.
		fmt.Fprintf(&b, "engine runs: grouped order (the floor and the separated pairs below see only each case's consecutive runs, not the machine's drift between cases)\n")
	case "":
	default:
		fmt.Fprintf(&b, "engine runs: %s order\n", r.RunOrder)
	}
	fmt.Fprintf(&b, "ranking of the cases per query (Kendall τ, engine vs sim):")
	for _, q := range r.Queries {
		fmt.Fprintf(&b, " %s %.2f", q, r.Tau[q])
	}
	fmt.Fprintf(&b, "\nsame ranking: %d of %d queries\n", r.SameRanking(), len(r.Queries))
	fmt.Fprintf(&b, "pairs of cases the engine separates (median intervals disjoint; needs %d+ rounds) / reversed by the simulator:", minSeparationRounds)
	for _, q := range r.Queries {
		o := r.Order[q]
		fmt.Fprintf(&b, " %s %d/%d", q, o.Separated, o.Reversed)
	}
	same, decided := r.SameOrder()
	fewest := minSeparationRounds
	for _, c := range r.Cases {
		fewest = min(fewest, len(c.EngineRounds))
	}
	why := "the others' cases are within the engine's noise"
	if fewest < minSeparationRounds {
		why = fmt.Sprintf("cases of %d rounds separate no pair: run %d+", fewest, minSeparationRounds)
	}
	fmt.Fprintf(&b, "\nsame order of the separated pairs: %d of %d queries (%d with a separated pair; %s)\n",
		same, len(r.Queries), decided, why)
	if len(r.Compared) > 0 {
		reversed := 0
		for _, q := range r.Queries {
			reversed += r.Order[q].Reversed
		}
		fmt.Fprintf(&b, "profiles against the same engine runs:\n%-28s %7s %7s %7s %7s %6s %8s %8s\n", "profile", "median", "P90", "max", "bias", "under", "ranking", "reversed")
		row := func(name string, med, p90, mx, bias float64, under, ranking, rev int) {
			fmt.Fprintf(&b, "%-28s %6.1f%% %6.1f%% %6.1f%% %+6.1f%% %6d %5d/%-2d %8d\n", name, 100*med, 100*p90, 100*mx, 100*bias, under, ranking, len(r.Queries), rev)
		}
		row(r.Profile, r.MedianAbs, r.P90Abs, r.MaxAbs, r.MeanErr, r.Under, r.SameRanking(), reversed)
		for _, c := range r.Compared {
			row(c.Profile, c.MedianAbs, c.P90Abs, c.MaxAbs, c.MeanErr, c.Under, c.SameRanking, c.Reversed)
		}
	}
	for _, f := range r.Figure {
		fmt.Fprintf(&b, "figure: %s\n", f)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeValidation appends the engine and sim rows to Out/results.csv and
// draws the sim-vs-engine figure there.
func writeValidation(rep *Report, opts ValidateOptions, profile string, sf float64, started string, logw io.Writer) error {
	if err := os.MkdirAll(opts.Out, 0o755); err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	host := machine.Name()
	var all []experiments.Result
	for _, c := range rep.Cases {
		base := experiments.Result{Spec: "validate", Profile: profile, Machine: host, Nodes: 1, SF: sf,
			Query: c.Query, Policy: c.Policy, Set: c.Set, Started: started}
		for i, s := range c.EngineRounds {
			r := base
			r.Backend, r.Rep, r.Seconds = "engine", i, s
			r.Key = strings.Join([]string{"validate", profile, r.Backend, c.Query, c.Policy, c.Set, fmt.Sprint(i), started}, "|")
			all = append(all, r)
		}
		r := base
		r.Backend, r.Seconds = "sim", c.Sim
		r.Key = strings.Join([]string{"validate", profile, r.Backend, c.Query, c.Policy, c.Set, "0", started}, "|")
		all = append(all, r)
	}
	for _, r := range all {
		if err := experiments.AppendResult(opts.Out, r); err != nil {
			return err
		}
	}
	files, err := drawScatter(all, opts.Out)
	if err != nil {
		fmt.Fprintf(logw, "warning: sim-vs-engine figure: %v\n", err)
	}
	rep.Figure = files
	return nil
}

// figureName is the sim-vs-engine figure's base name in Out.
const figureName = "sim-vs-engine"

func drawScatter(results []experiments.Result, out string) ([]string, error) {
	p, err := plots.Scatter(results)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, ext := range []string{"png", "svg"} {
		path := filepath.Join(out, figureName+"."+ext)
		if err := plots.Save(p, path); err != nil {
			return files, err
		}
		files = append(files, path)
	}
	return files, nil
}

// openPlanStats opens the dataset in dir and returns its plan statistics
// and scale factor (the manifest's, else inferred from the tables).
func openPlanStats(dir string) (*dataset.Dataset, []plan.TableStats, float64, error) {
	ds, err := dataset.Open(dir)
	if err != nil {
		return nil, nil, 0, err
	}
	tables := ds.PlanStats()
	sf := ds.Manifest.ScaleFactor
	if !(sf > 0) {
		if sf, err = queries.ScaleFactor(tables); err != nil {
			return nil, nil, 0, fmt.Errorf("calibrate: %s: %w", dir, err)
		}
	}
	return ds, tables, sf, nil
}
