package policies

import (
	"math"

	"gostachio/scheduler"
)

// netfirst is network-aware ordering for exchange-heavy queries. When
// several pipelines run at once on a device, the one on the longest path
// to the result goes first in every queue (its rank is its scan bytes
// plus the largest rank among the pipelines waiting for it), so the
// pipelines that others wait for finish first; exchanges rank above
// pipelines that end on the device, so their sends leave while the rest
// computes. Optionally (hold) reads wait while the device's NIC has more
// than hold bytes of sends in flight: the network, not the SSDs, paces an
// exchange, and reading ahead of it only fills memory. Everything else
// follows the knobs (overlap's defaults). The path ranking decides most:
// in the simulator it gains where concurrent scans feed chains of
// different length (q8, q10 on 16 DGX nodes at SF1000, ~2%) and loses
// on others (q3 there by ~16%): a long path first is not always the
// critical one once exchanges overlap.
type netfirst struct {
	scheduler.KnobHooks
	hold int64
	path bool
	rank []int
}

var _ scheduler.Hooks = (*netfirst)(nil)

func init() {
	scheduler.MustRegister(scheduler.PolicyInfo{
		Name:     "netfirst",
		Doc:      "network-aware ordering: pipelines on the longest path to the result (exchanges first) go first in every queue, reads wait while the NIC holds more than hold bytes of sends; otherwise overlap",
		Defaults: overlapDefaults(),
		Params: []scheduler.Param{
			{Name: "hold", Default: "0", Doc: "reads of a device wait while its NIC has more than this many bytes of sends in flight (0: never)"},
			{Name: "path", Default: "on", Doc: "rank pipelines by their path to the result; off: exchanges first, otherwise order of arrival"},
		},
		New: func(cfg scheduler.Config, ps scheduler.Params) (scheduler.Hooks, error) {
			hold, err := ps.Bytes("hold")
			if err != nil {
				return nil, err
			}
			path, err := ps.Bool("path")
			if err != nil {
				return nil, err
			}
			return &netfirst{hold: hold, path: path}, nil
		},
	})
}

// Init ranks every pipeline by its path to the result (plan order is
// topological: dependents come later).
func (h *netfirst) Init(v *scheduler.View) {
	h.KnobHooks.Init(v)
	pl := v.Plan()
	n := len(pl.Pipelines)
	after := make([]float64, n)
	h.rank = make([]int, n)
	for i := n - 1; i >= 0; i-- {
		p := &pl.Pipelines[i]
		w := float64(v.ScanBytes(i)) + after[i]
		if !h.path {
			w = 0
		}
		if p.Sink().Kind.IsExchange() {
			w += 1 << 20 // an exchange outranks an equal local pipeline
		}
		h.rank[i] = int(math.Min(w/(1<<20), math.MaxInt32))
		for _, a := range p.After {
			after[a] = math.Max(after[a], w)
		}
		for _, a := range p.Source.Inputs {
			after[a] = math.Max(after[a], w)
		}
	}
}

// Priority is the pipeline's rank in MiB of the path it starts.
func (h *netfirst) Priority(v *scheduler.View, p int) int { return h.rank[p] }

// Admit holds reads while the device's NIC is backed up, and otherwise
// follows the knobs.
func (h *netfirst) Admit(v *scheduler.View, d int, st scheduler.Stage, u scheduler.UnitInfo) bool {
	if st == scheduler.StageRead && h.hold > 0 {
		nic := scheduler.Resource{Kind: scheduler.ResNICOut, Node: int32(v.Node()), Index: int32(h.NIC(v, d))}
		if v.InFlightBytes(nic) > h.hold {
			return false
		}
	}
	return h.KnobHooks.Admit(v, d, st, u)
}
