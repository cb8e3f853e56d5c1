package calibrate

import (
	"context"
	"math"
	"strings"
	"testing"

	"gostachio/costmodel"
	"gostachio/dataset"
	"gostachio/sim"
)

// TestFitCompletion: the small read's time over the large ones', median
// over rounds, decides the discipline at batchedShare.
func TestFitCompletion(t *testing.T) {
	round := func(small, large int64) Sample {
		return Sample{Component: CompCompletion, Bytes: completionSmall, Ns: small, Rows: completionBig, Tasks: int(large), Depth: completionLarge}
	}
	for _, c := range []struct {
		name  string
		s     []Sample
		want  string
		share float64
	}{
		// Shares 1, 0.74, 0.35: median 0.74.
		{"batch", []Sample{round(100, 100), round(74, 100), round(35, 100)}, costmodel.CompletionBatch, 0.74},
		// Shares 0.02, 0.03, 1 (processor sharing, one round unlucky): 0.03.
		{"each", []Sample{round(2, 100), round(3, 100), round(100, 100)}, costmodel.CompletionEach, 0.03},
		// At the threshold: batched. Rounds without a time are skipped;
		// other components ignored.
		{"skips", []Sample{round(0, 100), round(90, 0), round(50, 100), {Component: CompRead, Ns: 7}}, costmodel.CompletionBatch, 0.5},
	} {
		d, share, ok, q := fitCompletion(c.s)
		if !ok || d != c.want || math.Abs(share-c.share) > 1e-12 {
			t.Errorf("%s: fitCompletion = %q %v (ok %v), want %q %v", c.name, d, share, ok, c.want, c.share)
		}
		if !strings.HasPrefix(q.Params, c.want+":") {
			t.Errorf("%s: component %q does not lead with %q", c.name, q.Params, c.want)
		}
	}
	if _, _, ok, _ := fitCompletion([]Sample{round(0, 0), {Component: CompSteal, Ns: 1, Rows: 1}}); ok {
		t.Error("fitCompletion fitted rounds without times")
	}
}

// TestMicroCompletion runs the probe on the test dataset: one sample per
// round, both times measured, and a profile fitted from samples that
// carry it names the discipline under nvme.
func TestMicroCompletion(t *testing.T) {
	ds, err := dataset.Open(testData(t))
	if err != nil {
		t.Fatal(err)
	}
	samples, err := microCompletion(context.Background(), ds, MicroOptions{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != completionRounds {
		t.Fatalf("%d samples, want %d", len(samples), completionRounds)
	}
	for i, s := range samples {
		if s.Component != CompCompletion || s.Ns <= 0 || s.Tasks <= 0 || s.Bytes != completionSmall || s.Rows != completionBig || s.Depth != completionLarge {
			t.Errorf("round %d: %+v", i+1, s)
		}
	}
	d, _, ok, _ := fitCompletion(samples)
	if !ok {
		t.Fatal("no discipline fitted from the probe's rounds")
	}
	// The rest of a profile's samples, from the fixture calibration.
	base, err := ReadSamplesFile("../sim/profiles/devbox-xeon.yaml.samples.csv")
	if err != nil {
		t.Fatal(err)
	}
	var kept []Sample
	for _, s := range base {
		if s.Component != CompCompletion {
			kept = append(kept, s)
		}
	}
	f, err := FitProfile(append(kept, samples...), ProfileOptions{Name: "probe", Devices: 2})
	if err != nil {
		t.Fatal(err)
	}
	p, err := sim.ParseProfile("probe", f.YAML)
	if err != nil {
		t.Fatalf("fitted profile does not load: %v\n%s", err, f.YAML)
	}
	if p.NVMe.Completion != d {
		t.Errorf("profile's nvme.completion %q, the probe fitted %q", p.NVMe.Completion, d)
	}
}
