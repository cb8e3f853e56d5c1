package calibrate

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"sort"
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

// Fit is a fitted profile: its YAML text (sim.MarshalProfile of the
// typed profile the fits built, with a header naming its provenance),
// Profile (that text loaded back with sim.ParseProfile) and the
// per-component fit.
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
	g, err := groupSamples(samples)
	if err != nil {
		return nil, err
	}
	f := &Fit{}
	var m fitted
	if err := m.fitMachine(g, f); err != nil {
		return nil, err
	}
	if err := m.fitCopies(g, f); err != nil {
		return nil, err
	}
	m.fitDispatch(g, f)
	if err := m.fitOperators(g, f); err != nil {
		return nil, err
	}
	built := m.profile(opts)
	if f.YAML, err = sim.MarshalProfile(built, m.header(opts)); err != nil {
		return nil, fmt.Errorf("calibrate: the fitted profile does not load (a bug): %w", err)
	}
	if f.Profile, err = sim.ParseProfile(opts.Name, f.YAML); err != nil {
		return nil, fmt.Errorf("calibrate: the fitted profile does not load (a bug): %w", err)
	}
	return f, nil
}

// sampleGroups are the samples sorted by what they measure: each
// component of the model is fitted to its own.
type sampleGroups struct {
	reads                       []costmodel.ReadSample
	h2d, gpuH2D, gpuKernels     []costmodel.OpSample
	launch, reference           []float64
	steals, coruns, completions []Sample
	ops                         map[string][]costmodel.OpSample // kernel samples by operator kind
	keyed                       map[string][]costmodel.OpSample // kernel samples of plan operators, by fingerprint
	keyOp, keyCase              map[string]string               // a fingerprint's kind and first case
}

// groupSamples sorts samples by component, converting each to what its
// fit takes. It exists to refuse what no fit can use before any runs: an
// unknown component or operator kind, a fingerprint that names two kinds
// (two different operators would share one scale), and samples without
// storage reads or kernels (the profile needs both).
func groupSamples(samples []Sample) (*sampleGroups, error) {
	g := &sampleGroups{ops: map[string][]costmodel.OpSample{}, keyed: map[string][]costmodel.OpSample{}, keyOp: map[string]string{}, keyCase: map[string]string{}}
	for _, s := range samples {
		switch s.Component {
		case CompRead:
			g.reads = append(g.reads, costmodel.ReadSample{Size: s.Bytes, Depth: s.Depth, Tasks: s.Tasks, Ns: float64(s.Ns)})
		case CompH2D:
			g.h2d = append(g.h2d, costmodel.OpSample{Bytes: float64(s.Bytes), Rows: float64(s.Rows), Ns: float64(s.Ns)})
		case CompLaunch:
			g.launch = append(g.launch, float64(s.Ns))
		case CompReference:
			g.reference = append(g.reference, float64(s.Ns))
		case CompSteal:
			g.steals = append(g.steals, s)
		case CompCorun:
			g.coruns = append(g.coruns, s)
		case CompCompletion:
			g.completions = append(g.completions, s)
		case CompGPUH2D:
			g.gpuH2D = append(g.gpuH2D, costmodel.OpSample{Bytes: float64(s.Bytes), Rows: float64(s.Rows), Ns: float64(s.Ns)})
		case CompGPUKernel:
			g.gpuKernels = append(g.gpuKernels, costmodel.OpSample{Bytes: float64(s.Bytes), Rows: float64(s.Rows), Ns: float64(s.Ns), Terms: s.Terms, StrTerms: s.StrTerms})
		case CompKernel:
			if _, err := plan.ParseOpKind(s.Op); err != nil {
				return nil, fmt.Errorf("calibrate: sample %q: %w", s.Case, err)
			}
			sample := costmodel.OpSample{Bytes: float64(s.Bytes), Rows: float64(s.Rows), Ns: float64(s.Ns), Terms: s.Terms, StrTerms: s.StrTerms, Out: float64(s.Out), Table: float64(s.Table)}
			g.ops[s.Op] = append(g.ops[s.Op], sample)
			if s.Key != "" {
				if k, ok := g.keyOp[s.Key]; ok && k != s.Op {
					return nil, fmt.Errorf("calibrate: sample %q: operator %s is a %s here and a %s in %q", s.Case, s.Key, s.Op, k, g.keyCase[s.Key])
				}
				if _, ok := g.keyOp[s.Key]; !ok {
					g.keyOp[s.Key], g.keyCase[s.Key] = s.Op, s.Case
				}
				g.keyed[s.Key] = append(g.keyed[s.Key], sample)
			}
		default:
			return nil, fmt.Errorf("calibrate: sample %q has unknown component %q", s.Case, s.Component)
		}
	}
	if len(g.reads) == 0 || len(g.ops) == 0 {
		return nil, fmt.Errorf("calibrate: need storage and kernel samples (have %d read, %d kernel kinds)", len(g.reads), len(g.ops))
	}
	return g, nil
}

// fitted is what the fits found, before it becomes a profile.
type fitted struct {
	st                      costmodel.Storage
	completion              string
	completionShare         float64
	hasCompletion, hasSteal bool
	hasCorun                bool
	steal, corun            float64
	h2d                     costmodel.Transfer
	onGPU                   bool
	gpuCopy                 costmodel.Transfer
	fused                   costmodel.OpCost
	launch, reference       costmodel.Duration
	names                   []string // the kinds fitted, in plan.OpKind order
	costs                   map[string]costmodel.OpCost
	profiled                []profiledOp
}

// fitMachine fits what the machine does beside the kernels: the disk
// (bandwidth, latency, queue-depth curve, how it completes reads) and
// what the cores take from each other (reads' steal, kernels' corun).
// Separate from the kernels because these are properties of the machine,
// not of the engine's operators.
func (m *fitted) fitMachine(g *sampleGroups, f *Fit) error {
	st, q, err := costmodel.FitStorage(g.reads, readerRequest, readerQD, readerQD)
	if err != nil {
		return err
	}
	m.st = st
	var curve []string
	for _, p := range st.Curve {
		curve = append(curve, fmt.Sprintf("qd%g %.2f", p.QD, p.Frac))
	}
	f.Components = append(f.Components, Component{"read", fmt.Sprintf("bandwidth %s latency %s curve %s",
		st.Bandwidth, st.Latency, strings.Join(curve, ", ")), q})

	var cq, sq, rq Component
	m.completion, m.completionShare, m.hasCompletion, cq = fitCompletion(g.completions)
	if m.hasCompletion {
		f.Components = append(f.Components, cq)
	}
	m.steal, m.hasSteal, sq = fitSteal(g.steals)
	if m.hasSteal {
		f.Components = append(f.Components, sq)
	}
	m.corun, m.hasCorun, rq = fitCorun(g.coruns)
	if m.hasCorun {
		f.Components = append(f.Components, rq)
	}
	return nil
}

// fitCopies fits the copies into a device: the CPU engine's h2d (views
// of the read buffers) and, for the GPU backend, its uploads and the
// fused kernel of every scan unit. Both need a positive PCIe rate in the
// profile, so an h2d free per byte gets a nominal one.
func (m *fitted) fitCopies(g *sampleGroups, f *Fit) error {
	var q costmodel.FitQuality
	var err error
	if len(g.h2d) > 0 {
		if m.h2d, q, err = costmodel.FitTransfer(g.h2d); err != nil {
			return err
		}
		f.Components = append(f.Components, Component{"h2d", fmt.Sprintf("bandwidth %s latency %s", m.h2d.Bandwidth, m.h2d.Latency), q})
	}
	if m.h2d.Bandwidth <= 0 {
		// Free per byte (or not measured): the profile still needs a
		// positive PCIe rate.
		m.h2d.Bandwidth = 1e12
	}
	m.onGPU = len(g.gpuH2D) > 0 || len(g.gpuKernels) > 0
	if !m.onGPU {
		return nil
	}
	if len(g.gpuH2D) == 0 || len(g.gpuKernels) == 0 {
		return fmt.Errorf("calibrate: GPU samples need both %s and %s (have %d, %d)", CompGPUH2D, CompGPUKernel, len(g.gpuH2D), len(g.gpuKernels))
	}
	if m.gpuCopy, q, err = costmodel.FitTransfer(g.gpuH2D); err != nil {
		return fmt.Errorf("calibrate: %s: %w", CompGPUH2D, err)
	}
	if m.gpuCopy.Bandwidth <= 0 {
		return fmt.Errorf("calibrate: %s: the fit left no bandwidth (copies that do not grow with their bytes?)", CompGPUH2D)
	}
	f.Components = append(f.Components, Component{CompGPUH2D, fmt.Sprintf("bandwidth %s latency %s", m.gpuCopy.Bandwidth, m.gpuCopy.Latency), q})
	if m.fused, q, err = costmodel.FitOpCost(g.gpuKernels); err != nil {
		return fmt.Errorf("calibrate: %s: %w", CompGPUKernel, err)
	}
	f.Components = append(f.Components, Component{CompGPUKernel, fmt.Sprintf("fixed %s bytes %s rows %s terms %s str-terms %s", m.fused.Fixed,
		rateText(m.fused.ByteRate), countText(m.fused.RowRate), termText(m.fused.TermRate), termText(m.fused.StrTermRate)), q})
	return nil
}

// fitDispatch takes the engine's task dispatch (the median launch) and
// the CPU reference workload's time (the mean): single numbers, not fits,
// so they report no R².
func (m *fitted) fitDispatch(g *sampleGroups, f *Fit) {
	if len(g.launch) > 0 {
		sort.Float64s(g.launch)
		m.launch = costmodel.Duration(math.Round(g.launch[len(g.launch)/2]))
		f.Components = append(f.Components, Component{"launch", fmt.Sprintf("%s per task", m.launch), costmodel.FitQuality{N: len(g.launch), R2: math.NaN()}})
	}
	if len(g.reference) > 0 {
		// The mean: the machine flips between two speeds, and the mean
		// follows the share of slow time (reference.go).
		m.reference = costmodel.Duration(math.Round(floats.Sum(g.reference) / float64(len(g.reference))))
		f.Components = append(f.Components, Component{"reference", fmt.Sprintf("%s (CPU reference, mean of %d)", m.reference, len(g.reference)), costmodel.FitQuality{N: len(g.reference), R2: math.NaN()}})
	}
}

// fitOperators fits every operator kind's cost, each with the fit its
// work calls for (working-set terms for builds, probes and aggregates;
// relative errors for probes), then the plan operators' scales against
// their kind's cost.
func (m *fitted) fitOperators(g *sampleGroups, f *Fit) error {
	m.names = make([]string, 0, len(g.ops))
	for k := range g.ops {
		m.names = append(m.names, k)
	}
	sort.Slice(m.names, func(i, j int) bool {
		a, _ := plan.ParseOpKind(m.names[i])
		b, _ := plan.ParseOpKind(m.names[j])
		return a < b
	})
	m.costs = map[string]costmodel.OpCost{}
	for _, k := range m.names {
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
		c, q, err := fit(g.ops[k])
		if err != nil {
			return fmt.Errorf("calibrate: %s: %w", k, err)
		}
		m.costs[k] = c
		params := fmt.Sprintf("fixed %s bytes %s rows %s terms %s out %s", c.Fixed, rateText(c.ByteRate), countText(c.RowRate), termText(c.TermRate), rateText(c.OutRate))
		if c.StrTermRate > 0 {
			params += " str-terms " + termText(c.StrTermRate)
		}
		if c.Miss > 0 {
			params += fmt.Sprintf(" miss %s/row past %.1fMiB", c.Miss, float64(c.Cache)/(1<<20))
		}
		f.Components = append(f.Components, Component{k, params, q})
	}
	var comp Component
	m.profiled, comp = fitScales(m.costs, g.keyed, g.keyOp, g.keyCase)
	if len(m.profiled) > 0 {
		f.Components = append(f.Components, comp)
	}
	return nil
}

// rate6 rounds a fitted rate to the 6 significant digits its fit's
// quality was computed on (costmodel.Round6), as the profile holds it.
func rate6(r costmodel.Rate) costmodel.Rate { return costmodel.Rate(costmodel.Round6(float64(r))) }

// profile builds the typed profile of the fits: the node mirrors the
// engine (its devices, CPU slots and memory budget; the GPU backend's
// scans on the GPU), every fitted number rounded to 6 significant digits,
// and the facts without samples (in-memory exchange, free syncs) as the
// engine has them.
func (m *fitted) profile(opts ProfileOptions) *sim.Profile {
	pv := opts.Provenance
	mem := int64(engine.DefaultMem)
	pinned := mem / 4
	p := &sim.Profile{Name: opts.Name}
	p.Node = sim.NodeSpec{GPUs: opts.Devices, SSDs: 1, NICs: 1, MergeThreads: 1, KernelThreads: 1,
		DeviceMemory: costmodel.Bytes((mem - pinned) / int64(opts.Devices)), PinnedMemory: costmodel.Bytes(pinned)}
	if m.onGPU {
		cores := opts.HostCores
		if cores <= 0 {
			cores = runtime.GOMAXPROCS(0)
		}
		p.Description = fmt.Sprintf("GPU engine on %s (%s), calibrated from %s", pv.Hostname, pv.GPU, pv.Source)
		p.Node.HostCores = float64(cores)
		p.Node.GPUScansOnly = true
	} else {
		p.Description = fmt.Sprintf("CPU engine on %s, %d cores, calibrated from %s", pv.Hostname, pv.Cores, pv.Source)
		p.Node.HostCores = float64(opts.Devices)
		p.Node.KernelsOnHost = true
		p.Node.CPUSlots = opts.Devices
	}
	if m.hasCorun && m.corun > 0 {
		p.Node.Corun = costmodel.Round6(m.corun)
	}
	p.NVMe = costmodel.Storage{Bandwidth: rate6(m.st.Bandwidth), Latency: m.st.Latency, Request: m.st.Request, TaskQD: m.st.TaskQD, DeviceQD: readerQD}
	for _, q := range m.st.Curve {
		p.NVMe.Curve = append(p.NVMe.Curve, costmodel.QDPoint{QD: q.QD, Frac: costmodel.Round6(q.Frac)})
	}
	if m.hasCompletion {
		p.NVMe.Completion = m.completion
	}
	if m.hasSteal {
		p.NVMe.CPUSteal = costmodel.Round6(m.steal)
	}
	copies := m.h2d
	if m.onGPU {
		copies = m.gpuCopy
	}
	p.PCIe = sim.PCIeSpec{H2D: rate6(copies.Bandwidth), D2H: rate6(copies.Bandwidth), Latency: copies.Latency}
	p.NIC = costmodel.Transfer{Bandwidth: 1e12, Latency: m.launch}
	p.Switch.Oversubscription = 1
	p.Intra.Path = "nic"
	if m.onGPU {
		p.GPU.Fused = &costmodel.OpCost{Fixed: m.fused.Fixed, ByteRate: rate6(m.fused.ByteRate), RowRate: rate6(m.fused.RowRate),
			TermRate: rate6(m.fused.TermRate), StrTermRate: rate6(m.fused.StrTermRate)}
	}
	p.Host.Launch, p.Host.Reference = m.launch, m.reference
	for _, k := range m.names {
		c := m.costs[k]
		kind, _ := plan.ParseOpKind(k)
		oc := costmodel.OpCost{Fixed: c.Fixed, ByteRate: rate6(c.ByteRate), RowRate: rate6(c.RowRate), TermRate: rate6(c.TermRate),
			OutRate: rate6(c.OutRate), StrTermRate: rate6(c.StrTermRate)}
		if c.Miss > 0 {
			oc.Miss, oc.Cache = c.Miss, c.Cache
		}
		p.Host.Ops[kind] = oc
	}
	if len(m.profiled) > 0 {
		p.Host.Profiled = make(map[string]costmodel.OpScale, len(m.profiled))
		for _, o := range m.profiled {
			o.Scale = costmodel.Round6(o.Scale)
			p.Host.Profiled[o.key] = o.OpScale
		}
	}
	p.Provenance = &pv
	return p
}

// header is the comment the written profile starts with: where it comes
// from, and why its fixed parts are what they are (the profile's fields
// hold only numbers).
func (m *fitted) header(opts ProfileOptions) string {
	pv := opts.Provenance
	var h strings.Builder
	if m.onGPU {
		fmt.Fprintf(&h, "Calibrated by `gostachio calibrate --gpu` (%s) on %s: a pure function of\n", pv.Source, pv.Hostname)
		fmt.Fprintf(&h, "the samples saved beside it. The node mirrors the engine's GPU backend: %d\n", opts.Devices)
		fmt.Fprintf(&h, "device(s) on %s, scan pipelines fused on the GPU, the rest on the host.\n", pv.GPU)
		fmt.Fprintf(&h, "node.gpu_scans_only: engine/gpu runs scan units' kernels and h2d on the GPU, the rest on the host.\n")
		fmt.Fprintf(&h, "pcie: a scan unit's upload from pinned read buffers (engine/gpu Upload).\n")
		fmt.Fprintf(&h, "gpu.fused: one compiled kernel per scan unit (its fixed cost holds the launch).\n")
	} else {
		fmt.Fprintf(&h, "Calibrated by `gostachio calibrate` (%s) on %s: a pure function of the\n", pv.Source, pv.Hostname)
		fmt.Fprintf(&h, "samples saved beside it. The node mirrors the CPU engine: %d worker groups\n", opts.Devices)
		fmt.Fprintf(&h, "(devices) sharing %d CPU slots, kernels on the host one core each.\n", opts.Devices)
		fmt.Fprintf(&h, "node.cpu_slots: the engine's CPU slots: a kernel waits for one, it does not share a core.\n")
		fmt.Fprintf(&h, "pcie: the CPU h2d: views of the read buffers + string-offset checks.\n")
	}
	if m.hasCorun && m.corun > 0 {
		fmt.Fprintf(&h, "node.corun: kernels beside kernels: each at 1/(1+corun) with every host core busy.\n")
	}
	fmt.Fprintf(&h, "node.device_memory: engine --mem default %d MiB, 3/4 over the devices; pinned_memory: a quarter for I/O buffers.\n", int64(engine.DefaultMem)>>20)
	fmt.Fprintf(&h, "nvme.device_qd: the reader's ring: requests in flight over all reads, first come first served.\n")
	if m.hasCompletion {
		fmt.Fprintf(&h, "nvme.completion: a %d KiB read submitted after %d of %d KiB took %.2f of their time (median of the probe's rounds).\n",
			completionSmall>>10, completionLarge, completionBig>>10, m.completionShare)
	}
	if m.hasSteal {
		fmt.Fprintf(&h, "nvme.cpu_steal: ns of every host core per byte read: reads slow the cores (each at 1/(1+steal·bytes/ns)).\n")
	}
	fmt.Fprintf(&h, "nic: exchange between worker groups is in memory: dispatch only. sync_latency: a sync on the CPU engine is free.\n")
	if m.reference > 0 {
		fmt.Fprintf(&h, "host.reference: the CPU reference workload's time here and now (validate compares its own).\n")
	}
	if len(m.profiled) > 0 {
		fmt.Fprintf(&h, "host.profiled: plan operators (fingerprint) priced from their own samples: scale × their kind's cost.\n")
	}
	return h.String()
}

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
// 6.7/6.1/5.8% → 5.8/5.5/5.3%; the 2-core development VM, 2026-11).
func fitProbes(samples []costmodel.OpSample) (costmodel.OpCost, costmodel.FitQuality, error) {
	return costmodel.FitOpCostSizedWeighted(samples, 1)
}

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
