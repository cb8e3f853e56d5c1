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
// computes. Reads hold back while the device's NIC has more than hold
// bytes of sends in flight: the network, not the SSDs, paces an exchange
// and reading ahead of it only fills memory. Everything else follows the
// knobs (overlap's defaults).
type netfirst struct {
	scheduler.KnobHooks
	hold int64
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
		},
		New: func(cfg scheduler.Config, ps scheduler.Params) (scheduler.Hooks, error) {
			hold, err := ps.Bytes("hold")
			if err != nil {
				return nil, err
			}
			return &netfirst{hold: hold}, nil
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
