package policies

import (
	"fmt"
	"math"

	"gostachio/plan"
	"gostachio/scheduler"
)

// littles is bandwidth-aware admission: each stage's in-flight depth comes
// from the resources' rates by Little's law, so depth needs no tuning. A
// device's pipeline moves units at the rate of its slowest stage, λ = min
// over stages of r/B (r: the device's share of the stage's resource rate,
// B: a unit's bytes there); a stage whose unit takes W = latency + B/r
// holds λ·W units in flight at that rate (Little's law), plus slack for
// variation, at most the depth knob. Rates are what completions showed
// once a resource has enough of them, else the topology's; with neither (an
// engine without a profile, before its first completions) a stage uses the
// depth knob. Everything else follows the knobs (overlap's defaults
// without adaptive regulation, which this replaces).
type littles struct {
	scheduler.KnobHooks
	slack   float64
	observe int64
	cfg     *scheduler.Config
}

var _ scheduler.Hooks = (*littles)(nil)

func init() {
	cfg := overlapDefaults()
	cfg.Adaptive = false
	scheduler.MustRegister(scheduler.PolicyInfo{
		Name:     "littles",
		Doc:      "bandwidth-aware admission: each stage's in-flight depth from the resources' rates by Little's law (observed once known, else the topology's), capped by depth; otherwise overlap",
		Defaults: cfg,
		Params: []scheduler.Param{
			{Name: "slack", Default: "1", Doc: "units in flight per stage beyond Little's law's estimate (absorbs variation)"},
			{Name: "observe", Default: "8", Doc: "completions on a resource before its observed rate replaces the topology's (0: topology rates only)"},
		},
		New: func(cfg scheduler.Config, ps scheduler.Params) (scheduler.Hooks, error) {
			slack, err := ps.Float("slack")
			if err != nil {
				return nil, err
			}
			if slack < 0 || math.IsInf(slack, 0) {
				return nil, fmt.Errorf("policies: littles: slack=%g must be finite and not negative", slack)
			}
			obs, err := ps.Int("observe")
			if err != nil {
				return nil, err
			}
			return &littles{slack: slack, observe: int64(obs)}, nil
		},
	})
}

func (h *littles) Init(v *scheduler.View) {
	h.KnobHooks.Init(v)
	h.cfg = v.Config()
}

// Admit holds a stage at its Little's-law depth (in flight plus queued
// behind it, as the knobs count), and reads within the unit window.
func (h *littles) Admit(v *scheduler.View, d int, st scheduler.Stage, u scheduler.UnitInfo) bool {
	n := v.InFlight(d, st)
	if st != scheduler.StageOut {
		n += v.Waiting(d, st+1)
	}
	if n >= h.depth(v, d, st, u) {
		return false
	}
	return st != scheduler.StageRead || h.cfg.Window == 0 || v.Window(d) < h.cfg.Window
}

// depth is stage st's in-flight depth for units like u.
func (h *littles) depth(v *scheduler.View, d int, st scheduler.Stage, u scheduler.UnitInfo) int {
	pi := v.Pipe(u.Pipeline)
	first := scheduler.StageRead
	if !pi.Scan {
		first = scheduler.StageKernel
	}
	last := scheduler.StageOut
	if !pi.PerUnitOut {
		last = scheduler.StageKernel
	}
	var w [scheduler.NumStages]float64
	lambda := math.Inf(1)
	for s := first; s <= last; s++ {
		r, lat, b := h.stage(v, d, s, pi.Sink, u)
		if r <= 0 {
			if s == st {
				return h.cfg.Depth
			}
			continue
		}
		w[s] = float64(lat) + float64(b)*1e9/r
		lambda = min(lambda, r/1e9/float64(max(b, 1)))
	}
	if math.IsInf(lambda, 1) || w[st] == 0 {
		return h.cfg.Depth
	}
	n := int(math.Ceil(lambda*w[st] + h.slack))
	return max(1, min(n, h.cfg.Depth))
}

// stage returns device d's share of the rate (bytes/s) of stage st's
// resource, its latency, and the bytes a unit like u moves there.
func (h *littles) stage(v *scheduler.View, d int, st scheduler.Stage, sink plan.OpKind, u scheduler.UnitInfo) (float64, scheduler.Time, int64) {
	topo := v.Topology()
	node := int32(v.Node())
	var kind scheduler.ResourceKind
	count, b := 1, u.Bytes
	switch st {
	case scheduler.StageRead:
		kind, count, b = scheduler.ResNVMe, topo.SSDs, u.ReadBytes
	case scheduler.StageH2D:
		kind = scheduler.ResH2D
	case scheduler.StageKernel:
		kind = scheduler.ResGPU
	default:
		kind, count, b = scheduler.ResNICOut, topo.NICs, u.Out
		if sink == plan.OpResult {
			kind, count = scheduler.ResD2H, 1
		}
	}
	known := topo.Rates[kind]
	var rate float64
	for i := 0; i < count; i++ {
		idx := int32(i)
		if count == 1 {
			idx = int32(d)
		}
		o := v.Observed(scheduler.Resource{Kind: kind, Node: node, Index: idx})
		if h.observe > 0 && o.Tasks >= h.observe && o.Rate() > 0 {
			rate += o.Rate()
		} else {
			rate += known.Bandwidth
		}
	}
	if count > 1 {
		// A node-wide resource (SSDs, NICs) is shared by the devices.
		rate /= float64(topo.Devices)
	}
	return rate, known.Latency, b
}
