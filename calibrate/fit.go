package calibrate

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/floats"

	"gostachio/costmodel"
	"gostachio/engine"
	"gostachio/plan"
	"gostachio/sim"
)

// ProfileOptions describe the machine a fitted profile models, beyond what
// the samples say.
type ProfileOptions struct {
	// Name of the profile (default "devbox-calibrated").
	Name string
	// Devices is the engine's worker groups and CPU slots (default
	// GOMAXPROCS, as the engine's).
	Devices int
	// Provenance goes into the profile as is (the caller fills Date and
	// Source; FitProfile never reads the clock, so refits are identical).
	Provenance costmodel.Provenance
	// HostCores, for a GPU profile (samples of the GPU backend), is the
	// host's cores for the kernels and merges it runs (default
	// GOMAXPROCS).
	HostCores int
}

// Component is one fitted part of the model and its fit quality.
type Component struct {
	Name    string
	Params  string
	Quality costmodel.FitQuality
}

// Fit is a fitted profile: its YAML text (loads with sim.ParseProfile) and
// the per-component fit.
type Fit struct {
	YAML       []byte
	Profile    *sim.Profile
	Components []Component
}

// WriteReport prints one line per component: parameters, R², MAPE.
func (f *Fit) WriteReport(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%-12s %5s %7s %7s  %s\n", "component", "n", "R²", "MAPE", "parameters")
	for _, c := range f.Components {
		fmt.Fprintf(&b, "%-12s %5d %7.3f %6.1f%%  %s\n", c.Name, c.Quality.N, c.Quality.R2, 100*c.Quality.MAPE, c.Params)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Engine facts the profile mirrors (engine.NewBackend): the storage
// reader's request size and queue depth, and the default memory budget
// (a quarter pinned for I/O, the rest split over the devices).
const (
	readerRequest = 1 << 20
	readerQD      = 32
)

// FitProfile fits a profile to samples: storage (latency, bandwidth and
// queue-depth curve), the h2d decode (latency + bytes/bandwidth), task
// dispatch (the host's launch) and per operator kind fixed + per-byte +
// per-row host costs, each by non-negative least squares (residuals
// weighted by costmodel.FitWeightPower). Components without samples keep the engine's facts: a free
// gather, broadcast, result and scan (the kernel does nothing for them),
// free syncs and in-memory exchange. The result is a pure function of
// samples and opts.
func FitProfile(samples []Sample, opts ProfileOptions) (*Fit, error) {
	if opts.Name == "" {
		opts.Name = "devbox-calibrated"
	}
	if opts.Devices <= 0 {
		opts.Devices = runtime.GOMAXPROCS(0)
	}
	var reads []costmodel.ReadSample
	var h2d, gpuH2D, gpuKernels []costmodel.OpSample
	var launch, reference []float64
	var steals, coruns, completions []Sample
	ops := map[string][]costmodel.OpSample{}
	// Samples of plan operators, by fingerprint, for their scales.
	keyed := map[string][]costmodel.OpSample{}
	keyOp, keyCase := map[string]string{}, map[string]string{}
	for _, s := range samples {
		switch s.Component {
		case CompRead:
			reads = append(reads, costmodel.ReadSample{Size: s.Bytes, Depth: s.Depth, Tasks: s.Tasks, Ns: float64(s.Ns)})
		case CompH2D:
			h2d = append(h2d, costmodel.OpSample{Bytes: float64(s.Bytes), Rows: float64(s.Rows), Ns: float64(s.Ns)})
		case CompLaunch:
			launch = append(launch, float64(s.Ns))
		case CompReference:
			reference = append(reference, float64(s.Ns))
		case CompSteal:
			steals = append(steals, s)
		case CompCorun:
			coruns = append(coruns, s)
		case CompCompletion:
			completions = append(completions, s)
		case CompGPUH2D:
			gpuH2D = append(gpuH2D, costmodel.OpSample{Bytes: float64(s.Bytes), Rows: float64(s.Rows), Ns: float64(s.Ns)})
		case CompGPUKernel:
			gpuKernels = append(gpuKernels, costmodel.OpSample{Bytes: float64(s.Bytes), Rows: float64(s.Rows), Ns: float64(s.Ns), Terms: s.Terms, StrTerms: s.StrTerms})
		case CompKernel:
			if _, err := plan.ParseOpKind(s.Op); err != nil {
				return nil, fmt.Errorf("calibrate: sample %q: %w", s.Case, err)
			}
			sample := costmodel.OpSample{Bytes: float64(s.Bytes), Rows: float64(s.Rows), Ns: float64(s.Ns), Terms: s.Terms, StrTerms: s.StrTerms, Out: float64(s.Out), Table: float64(s.Table)}
			ops[s.Op] = append(ops[s.Op], sample)
			if s.Key != "" {
				if k, ok := keyOp[s.Key]; ok && k != s.Op {
					return nil, fmt.Errorf("calibrate: sample %q: operator %s is a %s here and a %s in %q", s.Case, s.Key, s.Op, k, keyCase[s.Key])
				}
				if _, ok := keyOp[s.Key]; !ok {
					keyOp[s.Key], keyCase[s.Key] = s.Op, s.Case
				}
				keyed[s.Key] = append(keyed[s.Key], sample)
			}
		default:
			return nil, fmt.Errorf("calibrate: sample %q has unknown component %q", s.Case, s.Component)
		}
	}
	if len(reads) == 0 || len(ops) == 0 {
		return nil, fmt.Errorf("calibrate: need storage and kernel samples (have %d read, %d kernel kinds)", len(reads), len(ops))
	}
	f := &Fit{}
	st, q, err := costmodel.FitStorage(reads, readerRequest, readerQD, readerQD)
	if err != nil {
		return nil, err
	}
	var curve []string
	for _, p := range st.Curve {
		curve = append(curve, fmt.Sprintf("qd%g %.2f", p.QD, p.Frac))
	}
	f.Components = append(f.Components, Component{"read", fmt.Sprintf("bandwidth %s latency %s curve %s",
		st.Bandwidth, st.Latency, strings.Join(curve, ", ")), q})

	completion, completionShare, hasCompletion, completionQ := fitCompletion(completions)
	if hasCompletion {
		f.Components = append(f.Components, completionQ)
	}
	steal, hasSteal, stealQ := fitSteal(steals)
	if hasSteal {
		f.Components = append(f.Components, stealQ)
	}
	corun, hasCorun, corunQ := fitCorun(coruns)
	if hasCorun {
		f.Components = append(f.Components, corunQ)
	}

	var h2dT costmodel.Transfer
	if len(h2d) > 0 {
		if h2dT, q, err = costmodel.FitTransfer(h2d); err != nil {
			return nil, err
		}
		f.Components = append(f.Components, Component{"h2d", fmt.Sprintf("bandwidth %s latency %s", h2dT.Bandwidth, h2dT.Latency), q})
	}
	if h2dT.Bandwidth <= 0 {
		// Free per byte (or not measured): the profile still needs a
		// positive PCIe rate.
		h2dT.Bandwidth = 1e12
	}
	onGPU := len(gpuH2D) > 0 || len(gpuKernels) > 0
	var gpuCopy costmodel.Transfer
	var fused costmodel.OpCost
	if onGPU {
		if len(gpuH2D) == 0 || len(gpuKernels) == 0 {
			return nil, fmt.Errorf("calibrate: GPU samples need both %s and %s (have %d, %d)", CompGPUH2D, CompGPUKernel, len(gpuH2D), len(gpuKernels))
		}
		if gpuCopy, q, err = costmodel.FitTransfer(gpuH2D); err != nil {
			return nil, fmt.Errorf("calibrate: %s: %w", CompGPUH2D, err)
		}
		if gpuCopy.Bandwidth <= 0 {
			return nil, fmt.Errorf("calibrate: %s: the fit left no bandwidth (copies that do not grow with their bytes?)", CompGPUH2D)
		}
		f.Components = append(f.Components, Component{CompGPUH2D, fmt.Sprintf("bandwidth %s latency %s", gpuCopy.Bandwidth, gpuCopy.Latency), q})
		if fused, q, err = costmodel.FitOpCost(gpuKernels); err != nil {
			return nil, fmt.Errorf("calibrate: %s: %w", CompGPUKernel, err)
		}
		f.Components = append(f.Components, Component{CompGPUKernel, fmt.Sprintf("fixed %s bytes %s rows %s terms %s str-terms %s", fused.Fixed,
			rateText(fused.ByteRate), countText(fused.RowRate), termText(fused.TermRate), termText(fused.StrTermRate)), q})
	}
	var launchNs costmodel.Duration
	if len(launch) > 0 {
		sort.Float64s(launch)
		launchNs = costmodel.Duration(math.Round(launch[len(launch)/2]))
		f.Components = append(f.Components, Component{"launch", fmt.Sprintf("%s per task", launchNs), costmodel.FitQuality{N: len(launch), R2: math.NaN()}})
	}

	var referenceNs costmodel.Duration
	if len(reference) > 0 {
		// The mean: the machine flips between two speeds, and the mean
		// follows the share of slow time (reference.go).
		referenceNs = costmodel.Duration(math.Round(floats.Sum(reference) / float64(len(reference))))
		f.Components = append(f.Components, Component{"reference", fmt.Sprintf("%s (CPU reference, mean of %d)", referenceNs, len(reference)), costmodel.FitQuality{N: len(reference), R2: math.NaN()}})
	}

	names := make([]string, 0, len(ops))
	for k := range ops {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		a, _ := plan.ParseOpKind(names[i])
		b, _ := plan.ParseOpKind(names[j])
		return a < b
	})
	costs := map[string]costmodel.OpCost{}
	for _, k := range names {
		fit := costmodel.FitOpCost
		switch k {
		case plan.OpHashBuild.String(), plan.OpHashProbe.String(), plan.OpAggPartial.String(), plan.OpAggFinal.String():
			// A build's table is its input, a probe's the table it probes,
			// an aggregate's its group state: past the caches every row
			// costs misses (a build: measured 13 ns/row at 4 Ki rows, 100+
			// at 1 Mi; q21's final over 750 K orders a device: 108 ns/row,
			// twice its price from chunk-sized states).
			fit = costmodel.FitOpCostSized
		}
		if k == plan.OpHashProbe.String() {
			fit = fitProbes
		}
		c, q, err := fit(ops[k])
		if err != nil {
			return nil, fmt.Errorf("calibrate: %s: %w", k, err)
		}
		costs[k] = c
		params := fmt.Sprintf("fixed %s bytes %s rows %s terms %s out %s", c.Fixed, rateText(c.ByteRate), countText(c.RowRate), termText(c.TermRate), rateText(c.OutRate))
		if c.StrTermRate > 0 {
			params += " str-terms " + termText(c.StrTermRate)
		}
		if c.Miss > 0 {
			params += fmt.Sprintf(" miss %s/row past %.1fMiB", c.Miss, float64(c.Cache)/(1<<20))
		}
		f.Components = append(f.Components, Component{k, params, q})
	}
	profiled, comp := fitScales(costs, keyed, keyOp, keyCase)
	if len(profiled) > 0 {
		f.Components = append(f.Components, comp)
	}

	var y strings.Builder
	pv := opts.Provenance
	mem := int64(engine.DefaultMem)
	pinned := mem / 4
	if onGPU {
		cores := opts.HostCores
		if cores <= 0 {
			cores = runtime.GOMAXPROCS(0)
		}
		fmt.Fprintf(&y, "# Calibrated by `gostachio calibrate --gpu` (%s) on %s: a pure function of\n", pv.Source, pv.Hostname)
		fmt.Fprintf(&y, "# the samples saved beside it. The node mirrors the engine's GPU backend: %d\n", opts.Devices)
		fmt.Fprintf(&y, "# device(s) on %s, scan pipelines fused on the GPU, the rest on the host.\n", pv.GPU)
		fmt.Fprintf(&y, "name: %s\n", opts.Name)
		fmt.Fprintf(&y, "description: %s\n", strconv.Quote(fmt.Sprintf("GPU engine on %s (%s), calibrated from %s", pv.Hostname, pv.GPU, pv.Source)))
		fmt.Fprintf(&y, "node:\n  gpus: %d\n  ssds: 1\n  nics: 1\n  host_cores: %d\n  merge_threads: 1\n  kernels_on_host: false\n", opts.Devices, cores)
		fmt.Fprintf(&y, "  gpu_scans_only: true  # engine/gpu: scan units' kernels and h2d on the GPU, the rest on the host\n  kernel_threads: 1\n")
	} else {
		fmt.Fprintf(&y, "# Calibrated by `gostachio calibrate` (%s) on %s: a pure function of the\n", pv.Source, pv.Hostname)
		fmt.Fprintf(&y, "# samples saved beside it. The node mirrors the CPU engine: %d worker groups\n", opts.Devices)
		fmt.Fprintf(&y, "# (devices) sharing %d CPU slots, kernels on the host one core each.\n", opts.Devices)
		fmt.Fprintf(&y, "name: %s\n", opts.Name)
		fmt.Fprintf(&y, "description: %s\n", strconv.Quote(fmt.Sprintf("CPU engine on %s, %d cores, calibrated from %s", pv.Hostname, pv.Cores, pv.Source)))
		fmt.Fprintf(&y, "node:\n  gpus: %d\n  ssds: 1\n  nics: 1\n  host_cores: %d\n  merge_threads: 1\n  kernels_on_host: true\n  kernel_threads: 1\n",
			opts.Devices, opts.Devices)
		fmt.Fprintf(&y, "  cpu_slots: %d  # the engine's CPU slots: a kernel waits for one, it does not share a core\n", opts.Devices)
	}
	if hasCorun && corun > 0 {
		fmt.Fprintf(&y, "  corun: %s  # kernels beside kernels: each at 1/(1+corun) with every host core busy\n", num(corun))
	}
	fmt.Fprintf(&y, "  device_memory: %d  # engine --mem default %d MiB: 3/4 over the devices\n  pinned_memory: %d  # a quarter for I/O buffers\n",
		(mem-pinned)/int64(opts.Devices), mem>>20, pinned)
	fmt.Fprintf(&y, "nvme:\n  bandwidth: %s  # %s\n  latency: %dns\n  request: %d\n  task_qd: %d\n  device_qd: %d  # the reader's ring: requests in flight over all reads, first come first served\n  qd_curve:\n",
		num(float64(st.Bandwidth)), st.Bandwidth, st.Latency, int64(st.Request), st.TaskQD, readerQD)
	for _, p := range st.Curve {
		fmt.Fprintf(&y, "    - {qd: %g, frac: %s}\n", p.QD, num(p.Frac))
	}
	if hasCompletion {
		fmt.Fprintf(&y, "  completion: %s  # a %d KiB read submitted after %d of %d KiB took %.2f of their time (median of the probe's rounds)\n",
			completion, completionSmall>>10, completionLarge, completionBig>>10, completionShare)
	}
	if hasSteal {
		fmt.Fprintf(&y, "  cpu_steal: %s  # ns of every host core per byte read: reads slow the cores (each at 1/(1+steal·bytes/ns))\n", num(steal))
	}
	if onGPU {
		fmt.Fprintf(&y, "pcie:  # a scan unit's upload from pinned read buffers (engine/gpu Upload)\n  h2d: %s\n  d2h: %s\n  latency: %dns\n  gpudirect_nic: false\n",
			num(float64(gpuCopy.Bandwidth)), num(float64(gpuCopy.Bandwidth)), gpuCopy.Latency)
	} else {
		fmt.Fprintf(&y, "pcie:  # the CPU h2d: views of the read buffers + string-offset checks\n  h2d: %s\n  d2h: %s\n  latency: %dns\n  gpudirect_nic: false\n",
			num(float64(h2dT.Bandwidth)), num(float64(h2dT.Bandwidth)), h2dT.Latency)
	}
	fmt.Fprintf(&y, "nic:  # exchange between worker groups is in memory: dispatch only\n  bandwidth: 1e12\n  latency: %dns\n", launchNs)
	fmt.Fprintf(&y, "switch:\n  oversubscription: 1\nintra_node:\n  path: nic\nsync_latency: 0s  # a sync on the CPU engine is free\n")
	if onGPU {
		fmt.Fprintf(&y, "gpu:\n  launch: 0s  # in fused.fixed\n  fused: {fixed: %dns, bytes: %s, rows: %s, terms: %s, str_terms: %s}  # one compiled kernel per scan unit\n",
			fused.Fixed, num(float64(fused.ByteRate)), num(float64(fused.RowRate)), num(float64(fused.TermRate)), num(float64(fused.StrTermRate)))
	} else {
		fmt.Fprintf(&y, "gpu:\n  launch: 0s  # unused: kernels_on_host\n")
	}
	fmt.Fprintf(&y, "host:\n  launch: %dns\n", launchNs)
	if referenceNs > 0 {
		fmt.Fprintf(&y, "  reference: %dns  # the CPU reference workload's time here and now (validate compares its own)\n", referenceNs)
	}
	fmt.Fprintf(&y, "  ops:\n")
	for _, k := range names {
		c := costs[k]
		miss := ""
		if c.StrTermRate > 0 {
			miss = fmt.Sprintf(", str_terms: %s", num(float64(c.StrTermRate)))
		}
		if c.Miss > 0 {
			miss += fmt.Sprintf(", miss: %dns, cache: %d", c.Miss, c.Cache)
		}
		fmt.Fprintf(&y, "    %s: {fixed: %dns, bytes: %s, rows: %s, terms: %s, out: %s%s}\n", k, c.Fixed, num(float64(c.ByteRate)), num(float64(c.RowRate)), num(float64(c.TermRate)), num(float64(c.OutRate)), miss)
	}
	if len(profiled) > 0 {
		fmt.Fprintf(&y, "  profiled:  # plan operators (fingerprint) priced from their own samples: scale × their kind's cost\n")
		for _, p := range profiled {
			fmt.Fprintf(&y, "    %q: {op: %s, case: %s, scale: %s}\n", p.key, p.Op, strconv.Quote(p.Case), num(p.Scale))
		}
	}
	fmt.Fprintf(&y, "provenance:\n  hostname: %s\n  cpu: %s\n  cores: %d\n  os: %s\n  engine: %s\n  revision: %s\n  date: %s\n  source: %s\n",
		strconv.Quote(pv.Hostname), strconv.Quote(pv.CPU), pv.Cores, strconv.Quote(pv.OS), strconv.Quote(pv.Engine),
		strconv.Quote(pv.Revision), strconv.Quote(pv.Date), strconv.Quote(pv.Source))
	if pv.GPU != "" {
		fmt.Fprintf(&y, "  gpu: %s\n", strconv.Quote(pv.GPU))
	}
	f.YAML = []byte(y.String())
	p, err := sim.ParseProfile(opts.Name, f.YAML)
	if err != nil {
		return nil, fmt.Errorf("calibrate: the fitted profile does not load (a bug): %w", err)
	}
	f.Profile = p
	return f, nil
}

// num formats a profile number: 6 significant digits (what the fit's
// quality was computed on), "0" for zero.
// fitProbes fits the hash-probe kind with relative errors (every sample
// alike, costmodel.FitOpCostSizedWeighted with power 1), not the default
// ½. The probe samples are families that differ in what they cost per row
// and in their output: under the default the largest samples (millions of
// rows with most of them matching) set the rates, the output term took the
// cost the per-row term lacked, and the families that find nothing — what
// most of the queries' probes are — came out at 1.17–1.45x their price
// (median per probed table, devbox-xeon's own samples), the small ones
// where every row matches at 0.6x. Refitted so, devbox-xeon and another
// calibration of 2026-11-26 predicted three validations' engine runs
// better each time (median 5.8/4.9/4.7% → 5.7/4.5/4.1% and
// 6.7/6.1/5.8% → 5.8/5.5/5.3%; README, issue 7).
func fitProbes(samples []costmodel.OpSample) (costmodel.OpCost, costmodel.FitQuality, error) {
	return costmodel.FitOpCostSizedWeighted(samples, 1)
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

func rateText(r costmodel.Rate) string {
	if r <= 0 {
		return "free"
	}
	return r.String()
}

func termText(r costmodel.Rate) string {
	if r <= 0 {
		return "free"
	}
	return strings.TrimSuffix(r.String(), "B/s") + "terms/s"
}

func countText(r costmodel.Rate) string {
	if r <= 0 {
		return "free"
	}
	return strings.TrimSuffix(r.String(), "B/s") + "rows/s"
}

// profiledOp is one fitted Device.Profiled entry.
type profiledOp struct {
	key string
	costmodel.OpScale
}

// fitScales fits every plan operator with samples (keyed, by fingerprint)
// a scale against its kind's fitted cost (costmodel.FitOpScale), in the
// order of their cases. Operators whose kind prices their samples at
// nothing keep the kind's price. The component reports the scales' range
// and the quality of the scaled costs over all these samples.
func fitScales(costs map[string]costmodel.OpCost, keyed map[string][]costmodel.OpSample, keyOp, keyCase map[string]string) ([]profiledOp, Component) {
	keys := make([]string, 0, len(keyed))
	for k := range keyed {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if a, b := keyCase[keys[i]], keyCase[keys[j]]; a != b {
			return a < b
		}
		return keys[i] < keys[j]
	})
	var out []profiledOp
	var pred, meas, scales []float64
	for _, k := range keys {
		c := costs[keyOp[k]]
		sc, _, err := costmodel.FitOpScale(c, keyed[k])
		if err != nil {
			continue // priced at nothing by its kind: no ratio to fit
		}
		out = append(out, profiledOp{k, costmodel.OpScale{Op: keyOp[k], Case: keyCase[k], Scale: sc}})
		scales = append(scales, sc)
		for _, s := range keyed[k] {
			pred = append(pred, sc*c.NsExpr(s.Bytes, s.Rows, s.Terms, s.StrTerms, s.Out, s.WorkingSet()))
			meas = append(meas, s.Ns)
		}
	}
	if len(out) == 0 {
		return nil, Component{}
	}
	sort.Float64s(scales)
	params := fmt.Sprintf("%d plan operators, scale of their kind's cost: median %.2f, from %.2f to %.2f",
		len(out), scales[len(scales)/2], scales[0], scales[len(scales)-1])
	return out, Component{"profiled", params, costmodel.Quality(pred, meas)}
}
