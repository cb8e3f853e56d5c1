package engine

import (
	"context"
	"sync"
	"testing"

	"gostachio/scheduler"
)

// ratesProbe is overlap's hooks, recording the rates its view shows.
type ratesProbe struct{ scheduler.KnobHooks }

var probed struct {
	sync.Mutex
	rates [scheduler.NumResourceKinds]scheduler.Rate
	inits int
}

func (h *ratesProbe) Init(v *scheduler.View) {
	h.KnobHooks.Init(v)
	probed.Lock()
	probed.rates, probed.inits = v.Topology().Rates, probed.inits+1
	probed.Unlock()
}

// TestQueryRatesReachPolicy: the rates a caller gives a query (a
// calibration profile's, from --rates-profile or a spec's profile) are
// what the policy's view shows.
func TestQueryRatesReachPolicy(t *testing.T) {
	overlap, err := scheduler.NewPolicy("overlap", "")
	if err != nil {
		t.Fatal(err)
	}
	scheduler.MustRegister(scheduler.PolicyInfo{Name: "test-rates-probe", Doc: "overlap, recording the rates its view shows",
		Defaults: overlap.Config(),
		New: func(scheduler.Config, scheduler.Params) (scheduler.Hooks, error) {
			return &ratesProbe{}, nil
		}})
	var rates [scheduler.NumResourceKinds]scheduler.Rate
	rates[scheduler.ResNVMe] = scheduler.Rate{Bandwidth: 2e9, Latency: 90000}
	rates[scheduler.ResGPU] = scheduler.Rate{Bandwidth: 5e9}
	ds := testData(t, 0.01)
	if _, err := runQuery(context.Background(), ds, "q6", QueryOptions{Policy: "test-rates-probe", Rates: rates}); err != nil {
		t.Fatal(err)
	}
	probed.Lock()
	defer probed.Unlock()
	if probed.inits == 0 || probed.rates != rates {
		t.Errorf("the policy saw rates %+v (%d inits), want %+v", probed.rates, probed.inits, rates)
	}
}
