package diskref

import (
	"math"
	"testing"

	"gostachio/costmodel"
)

// The disk reference's model throughput is the storage model's bandwidth
// at the reference's depth (its curve included), unless that many
// requests in flight cannot cover the latency.
func TestModelBps(t *testing.T) {
	s := costmodel.Storage{Bandwidth: 2e9, Latency: costmodel.Duration(100_000), Request: 1 << 20, TaskQD: 8, DeviceQD: 32,
		Curve: []costmodel.QDPoint{{QD: 1, Frac: 0.25}, {QD: 32, Frac: 0.75}}}
	if got, want := ModelBps(&s), 2e9*0.75; math.Abs(got-want) > 1 {
		t.Errorf("bandwidth-bound: %g B/s, want %g", got, want)
	}
	s.Latency = costmodel.Duration(50_000_000) // 32 MiB in flight per 50 ms
	if got, want := ModelBps(&s), 32*float64(1<<20)/0.05; math.Abs(got-want) > 1 {
		t.Errorf("latency-bound: %g B/s, want %g", got, want)
	}
	s.DeviceQD, s.Latency = 0, 0 // the task's depth then
	if got, want := ModelBps(&s), 2e9*(0.25+0.5*7/31); math.Abs(got-want) > 1 {
		t.Errorf("task depth 8: %g B/s, want %g", got, want)
	}
}
