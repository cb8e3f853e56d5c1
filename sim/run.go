package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"

	"gostachio/costmodel"
	"gostachio/plan"
	"gostachio/scheduler"
	"gostachio/traces"
)

// DefaultChunkRows is the stored chunk size callers size scale-factor-only
// workloads at: the dataset writer's default (dataset.DefaultChunkRows,
// 1 Mi rows).
const DefaultChunkRows = 1 << 20

// SimOptions are the inputs of `gostachio sim`.
type SimOptions struct {
	// Profile is a shipped profile name (ProfileNames) or a .yaml path.
	Profile string
	// Log takes the profile's provenance warning (WarnProvenance); nil is
	// os.Stderr, io.Discard silences it (a caller that warned once).
	Log io.Writer
	// Nodes is the cluster size (default 1).
	Nodes int
	// Plan is the plan to simulate (its Name names the run in the report
	// and the trace). The simulator reads it and, with Place, places its
	// pipelines: a caller that runs the same plan again passes a copy.
	Plan *plan.Plan
	// SF is the scale factor the plan was built at: reported only.
	SF float64
	// Policy and Set select the scheduling policy and its knob overrides
	// ("chunk=8MiB,depth=4").
	Policy string
	Set    string
	// Trace, if set, is a path to write a Chrome/Perfetto JSON trace to.
	Trace string
	// JSON prints the Report as one JSON document instead of text.
	JSON bool
	// Jitter (fraction) varies every latency uniformly by ±Jitter, drawn
	// from Seed; 0 is deterministic without randomness.
	Jitter float64
	Seed   uint64
	// Net is the network model of sends (NetModels; "": NetFluid, exact;
	// NetAnalytic: an approximation for large clusters).
	Net string
	// CPUSlowdown, when not 0, multiplies the host's compute prices
	// (costmodel.Device.Slowed): the CPU reference's time beside the runs
	// being predicted over its time at calibration (the profile's
	// host.reference), as `validate --rescale-cpu` and `cluster bench-sim
	// --rescale-cpu` measure it. GPU prices stay.
	CPUSlowdown float64
	// DiskSpeedup, when not 0, multiplies the NVMe bandwidth: the disk
	// reference's throughput beside the runs being predicted over what
	// the profile's storage model gives its stream (diskref.ModelBps), as
	// `validate --rescale-disk` and `cluster bench-sim --rescale-disk`
	// measure it.
	DiskSpeedup float64
	// Place, when set, places the query's pipelines before the run (on a
	// GPU-backend profile, node.gpu_scans_only: plan.Pipeline.OnHost and
	// HostFrom, as `sim --gpu-hybrid` sets them with engine.PlaceGPU, which
	// this package does not import). A profile of another kind is an
	// error: it would ignore the placement.
	Place func(*plan.Plan) error
}

// Simulate runs plan p under pol on nodes nodes of prof and reports. sink,
// if non-nil, receives every completed task's event.
func Simulate(ctx context.Context, p *plan.Plan, prof *Profile, nodes int, pol scheduler.Policy, sink scheduler.TraceSink, jitter float64, seed uint64) (*Report, error) {
	return SimulateWith(ctx, p, prof, nodes, pol, sink, RunConfig{Jitter: jitter, Seed: seed})
}

// RunConfig are a simulated run's settings beside its plan, profile,
// cluster size and policy.
type RunConfig struct {
	// Jitter varies every latency by ±Jitter, drawn from Seed.
	Jitter float64
	Seed   uint64
	// Net is the network model of sends (NetModels; "": NetFluid).
	Net string
}

// SimulateWith is Simulate with a RunConfig.
func SimulateWith(ctx context.Context, p *plan.Plan, prof *Profile, nodes int, pol scheduler.Policy, sink scheduler.TraceSink, cfg RunConfig) (*Report, error) {
	c, err := NewCluster(prof, nodes)
	if err != nil {
		return nil, err
	}
	if err := c.SetNetwork(cfg.Net); err != nil {
		return nil, err
	}
	if cfg.Jitter > 0 {
		c.SetJitter(cfg.Jitter, cfg.Seed)
	}
	c.SetPlacement(p)
	res, err := scheduler.Run(ctx, p, pol, c, sink)
	if err != nil {
		return nil, fmt.Errorf("sim: %s on %d x %s under %s: %w", p.Name, nodes, prof.Name, pol.Name(), err)
	}
	rep := c.report(p.Name, pol.Name(), res)
	rep.Net = NetFluid
	if c.analyticNet {
		rep.Net = NetAnalytic
	}
	return rep, nil
}

func (c *Cluster) report(query, policy string, res scheduler.Result) *Report {
	ms := int64(res.Makespan)
	r := &Report{Profile: c.prof.Name, Nodes: c.nodes, Query: query, Policy: policy, MakespanNs: ms,
		Tasks: res.Tasks, Events: c.net.Events, ResultRows: res.ResultRows,
		PeakPinned: res.PeakPinned, PeakDevice: res.PeakDevice, TasksByKind: map[string]int64{}}
	b, at := c.Bound()
	r.BoundNs = int64(b)
	r.BoundBy = fmt.Sprintf("%s[%d.%d]", at.Kind, at.Node, at.Index)
	if ms > 0 {
		r.Efficiency = b / float64(ms)
	}
	r.Resources = c.Resources(ms)
	for k := 1; k < scheduler.NumTaskKinds; k++ {
		if n := res.ByKind[k]; n > 0 {
			r.TasksByKind[scheduler.TaskKind(k).String()] = n
		}
	}
	return r
}

// RunSim is `gostachio sim`: it runs opts.Plan under opts.Policy on
// opts.Nodes nodes of opts.Profile, writes the report (text or JSON) to
// stdout and, with opts.Trace, a Chrome trace file.
func RunSim(ctx context.Context, opts SimOptions, stdout io.Writer) error {
	rep, err := runSim(ctx, opts)
	if err != nil {
		return err
	}
	if opts.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return fmt.Errorf("sim: write report: %w", err)
		}
		return nil
	}
	return rep.WriteText(stdout)
}

// RunReport runs the simulation RunSim describes and returns its report
// instead of printing it.
func RunReport(ctx context.Context, opts SimOptions) (*Report, error) { return runSim(ctx, opts) }

func runSim(ctx context.Context, opts SimOptions) (*Report, error) {
	if opts.Nodes == 0 {
		opts.Nodes = 1
	}
	if opts.Policy == "" {
		opts.Policy = "overlap"
	}
	if opts.Nodes < 1 {
		return nil, fmt.Errorf("sim: --nodes %d must be at least 1", opts.Nodes)
	}
	if opts.Jitter < 0 || opts.Jitter >= 1 {
		return nil, fmt.Errorf("sim: jitter %v must be in [0, 1)", opts.Jitter)
	}
	log := opts.Log
	if log == nil {
		log = os.Stderr
	}
	prof, err := LoadProfileLog(opts.Profile, log)
	if err != nil {
		return nil, err
	}
	if f := opts.CPUSlowdown; f != 0 {
		if !(f > 0) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("sim: --cpu-slowdown %v: want a positive factor", f)
		}
		prof.Host = prof.Host.Slowed(f)
	}
	if f := opts.DiskSpeedup; f != 0 {
		if !(f > 0) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("sim: --disk-speedup %v: want a positive factor", f)
		}
		prof.NVMe.Bandwidth = costmodel.Rate(float64(prof.NVMe.Bandwidth) * f)
	}
	p := opts.Plan
	if p == nil {
		return nil, fmt.Errorf("sim: no plan to simulate")
	}
	if opts.Place != nil {
		if !prof.Node.GPUScansOnly {
			return nil, fmt.Errorf("sim: profile %s does not model the engine's GPU backend (node.gpu_scans_only): it has no placement to follow", prof.Name)
		}
		if err := opts.Place(p); err != nil {
			return nil, fmt.Errorf("sim: %w", err)
		}
	}
	pol, err := scheduler.NewPolicy(opts.Policy, opts.Set)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	var tw *traces.Recorder
	var sink scheduler.TraceSink
	if opts.Trace != "" {
		tw = &traces.Recorder{Run: p.Name + "/" + opts.Policy}
		sink = tw
	}
	rep, err := SimulateWith(ctx, p, prof, opts.Nodes, pol, sink, RunConfig{Jitter: opts.Jitter, Seed: opts.Seed, Net: opts.Net})
	if err != nil {
		return nil, err
	}
	rep.SF = opts.SF
	if tw != nil {
		meta := traces.Meta{Title: rep.Profile + " " + rep.Query + " " + rep.Policy, Backend: "sim",
			Profile: fmt.Sprintf("%s, %d node(s)", rep.Profile, opts.Nodes)}
		if err := traces.Save(opts.Trace, tw.Events, meta); err != nil {
			return nil, fmt.Errorf("sim: %w", err)
		}
	}
	return rep, nil
}
