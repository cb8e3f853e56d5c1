package calibrate

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"
	"time"
)

// TestSplitResponse: runs alternating between a fast machine (reference 4
// ms) and a slow one (6 ms), the query's time (ref/4)^0.5 of 0.2 s, so its
// response is 0.5 exactly; runs whose two references straddle the median
// are left out of both halves.
func TestSplitResponse(t *testing.T) {
	var times, r1, r2 []float64
	for i := range 40 {
		ref := 4e6
		if i%2 == 1 {
			ref = 6e6
		}
		times, r1, r2 = append(times, 0.2*math.Sqrt(ref/4e6)), append(r1, ref), append(r2, ref)
	}
	// Two straddling runs, timed absurdly: they must not count.
	times, r1, r2 = append(times, 9, 9), append(r1, 4e6, 6e6), append(r2, 6e6, 4e6)
	r := QueryResponse{Query: "q1", Policy: "overlap"}
	splitResponse(&r, times, r1, r2)
	if !r.Split || r.Runs != 42 || r.Fast != 20 || r.Slow != 20 {
		t.Fatalf("split %v, runs %d, fast %d, slow %d; want true, 42, 20, 20", r.Split, r.Runs, r.Fast, r.Slow)
	}
	if r.Query != "q1" || r.Policy != "overlap" {
		t.Errorf("query and policy lost: %q %q", r.Query, r.Policy)
	}
	if r.RefRatio != 1.5 || r.EngineFast != 0.2 {
		t.Errorf("reference ratio %v, fast median %v; want 1.5, 0.2", r.RefRatio, r.EngineFast)
	}
	if math.Abs(r.EngineResponse-0.5) > 1e-12 {
		t.Errorf("response %v, want 0.5", r.EngineResponse)
	}
}

// TestSplitResponseUnsplit: too few runs in a half, or halves whose
// references are within 5%, measure no response.
func TestSplitResponseUnsplit(t *testing.T) {
	for _, c := range []struct {
		name      string
		fast, dur float64
		n         int
	}{
		{"too few runs", 6e6, 0, 8},
		{"references within 5%", 4.1e6, 0, 40},
	} {
		var times, r1, r2 []float64
		for i := range c.n {
			ref := 4e6
			if i%2 == 1 {
				ref = c.fast
			}
			times, r1, r2 = append(times, 0.1+float64(i)*1e-3), append(r1, ref), append(r2, ref)
		}
		r := QueryResponse{Query: "q6"}
		splitResponse(&r, times, r1, r2)
		if r.Split || r.EngineResponse != 0 {
			t.Errorf("%s: split %v, response %v; want false, 0", c.name, r.Split, r.EngineResponse)
		}
		var buf bytes.Buffer
		if err := (&ResponseReport{Queries: []QueryResponse{r}}).WriteText(&buf); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), "not split") || !strings.Contains(buf.String(), "q6") {
			t.Errorf("%s: the report does not say q6 was not split:\n%s", c.name, buf.String())
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("splitResponse with a missing reference did not panic")
		}
	}()
	splitResponse(&QueryResponse{}, []float64{1, 2}, []float64{1, 2}, []float64{1})
}

// TestReferenceResponseRuns measures SF0.01 briefly: every run is
// counted once in the halves and once in the windows, and every window is
// priced, higher where its reference is slower.
func TestReferenceResponseRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the engine")
	}
	rep, err := ReferenceResponse(context.Background(), ResponseOptions{Profile: "devbox-xeon", Data: testData(t), Queries: "q6,q1", Duration: 1500 * time.Millisecond, Warmup: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Queries) != 2 || rep.Queries[0].Query != "q6" || rep.Queries[1].Query != "q1" {
		t.Fatalf("queries %+v, want q6 then q1", rep.Queries)
	}
	for _, q := range rep.Queries {
		if q.Runs < 2 || q.Fast+q.Slow > q.Runs {
			t.Errorf("%s: %d runs, %d fast, %d slow", q.Query, q.Runs, q.Fast, q.Slow)
		}
		runs := 0
		for i, w := range q.Windows {
			runs += w.Runs
			if !(w.Sim > 0 && w.Engine > 0) || (i > 0 && w.Start <= q.Windows[i-1].Start) {
				t.Errorf("%s: window %d %+v", q.Query, i, w)
			}
			for _, v := range q.Windows[:i] {
				if (v.RefNs < w.RefNs) != (v.Sim <= w.Sim) && v.RefNs != w.RefNs {
					t.Errorf("%s: reference %v priced %v, %v priced %v", q.Query, v.RefNs, v.Sim, w.RefNs, w.Sim)
				}
			}
		}
		if runs != q.Runs {
			t.Errorf("%s: the windows hold %d runs of %d", q.Query, runs, q.Runs)
		}
	}
}

// TestReferenceResponseBadInput: each mistake is named.
func TestReferenceResponseBadInput(t *testing.T) {
	data := testData(t)
	for _, c := range []struct {
		o    ResponseOptions
		want string
	}{
		{ResponseOptions{Profile: "devbox-xeon", Data: data, Duration: -time.Second}, "--seconds"},
		{ResponseOptions{Profile: "devbox-xeon", Data: data, Warmup: -1}, "--warmup"},
		{ResponseOptions{Profile: "devbox-xeon", Data: data, Queries: "q23"}, "q23"},
		{ResponseOptions{Profile: "devbox-xeon", Data: data, Policy: "fastest"}, "fastest"},
		{ResponseOptions{Profile: "h100-gpu-calibrated", Data: data}, "GPU backend"},
		{ResponseOptions{Profile: "devbox-xeon", Data: t.TempDir()}, "manifest"},
		// The disk reference reads 128 MiB of lineitem: SF0.01's is smaller.
		{ResponseOptions{Profile: "devbox-xeon", Data: data, Queries: "q6", RescaleDisk: true}, "SF 0.25"},
	} {
		_, err := ReferenceResponse(context.Background(), c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one naming %q", c.o, err, c.want)
		}
	}
}

// TestBlockResponse: windows of 10 s whose mean reference moves 4–6 ms,
// each run's time (ref/4)^0.6 of 0.2 s times a noise that cancels within
// its window's median, give a slope of 0.6 and no error; windows are cut
// at the multiples of the block length, and too few windows give none.
func TestBlockResponse(t *testing.T) {
	var times, refs, at []float64
	for k := range 6 {
		ref := 4e6 + float64(k%3)*1e6
		for j := range 5 {
			noise := []float64{0.9, 1, 1.1, 1.2, 1 / 1.2}[j] // median 1
			times, refs, at = append(times, 0.2*math.Pow(ref/4e6, 0.6)*noise), append(refs, ref), append(at, float64(10*k)+float64(j)*1.9)
		}
	}
	var r QueryResponse
	blockResponse(&r, times, refs, refs, at, 10)
	if len(r.Windows) != 6 || math.Abs(r.BlockResponse-0.6) > 1e-9 || r.BlockSE > 1e-9 {
		t.Errorf("windows %d, response %v ± %v; want 6, 0.6 ± 0", len(r.Windows), r.BlockResponse, r.BlockSE)
	}
	// The references before and after agree exactly: reliability 1,
	// nothing to correct.
	if math.Abs(r.RefReliability-1) > 1e-12 || math.Abs(r.BlockCorrected-r.BlockResponse) > 1e-12 {
		t.Errorf("exact references: reliability %v, corrected %v; want 1, %v", r.RefReliability, r.BlockCorrected, r.BlockResponse)
	}
	if w := r.Windows[1]; w.Start != 10 || w.Runs != 5 || w.RefNs != 5e6 || math.Abs(w.Engine-0.2*math.Pow(1.25, 0.6)) > 1e-12 {
		t.Errorf("window 1: %+v", w)
	}
	// A simulator whose time goes as the reference's square root, 10%
	// above the engine at 4 ms: response 0.5, median error between.
	if err := priceWindows(&r, func(w ResponseWindow) (float64, error) { return 0.22 * math.Sqrt(w.RefNs/4e6), nil }); err != nil {
		t.Fatal(err)
	}
	if math.Abs(r.SimResponse-0.5) > 1e-9 {
		t.Errorf("sim response %v, want 0.5", r.SimResponse)
	}
	// Errors 1.1·(ref/4)^-0.1 − 1 over references 4, 5, 6, 4, 5, 6 ms:
	// the median is the mean of the two at 5 ms.
	if want := 1.1*math.Pow(1.25, -0.1) - 1; math.Abs(r.SimErrMedian-want) > 1e-9 {
		t.Errorf("sim error median %v, want %v", r.SimErrMedian, want)
	}
	// 20 s windows hold two of the 10 s ones: 3 windows, no response.
	blockResponse(&r, times, refs, refs, at, 20)
	if len(r.Windows) != 3 || r.BlockResponse != 0 {
		t.Errorf("20 s windows: %d, response %v; want 3, 0", len(r.Windows), r.BlockResponse)
	}
	defer func() {
		if recover() == nil {
			t.Error("blockResponse with a zero window did not panic")
		}
	}()
	blockResponse(&r, times, refs, refs, at, 0)
}

// TestRefReliability: two readings ln a = x + d and ln b = x − d of a
// true ln speed x, their error d uncorrelated with x, correlate at
// ρ = (var x − var d)/(var x + var d); their mean's reliability is
// 2ρ/(1+ρ). With var x = 1.5 and var d = 1: ρ = 0.2, reliability 1/3.
func TestRefReliability(t *testing.T) {
	x := []float64{-1.5, 0, 1.5, -1.5, 0, 1.5}
	d := []float64{1, 1, 1, -1, -1, -1}
	a, b := make([]float64, len(x)), make([]float64, len(x))
	for i := range x {
		a[i], b[i] = math.Exp(x[i]+d[i]), math.Exp(x[i]-d[i])
	}
	if got := refReliability(a, b); math.Abs(got-1.0/3) > 1e-12 {
		t.Errorf("reliability %v, want 1/3", got)
	}
	if got := refReliability(a, a); math.Abs(got-1) > 1e-12 {
		t.Errorf("identical readings: reliability %v, want 1", got)
	}
	// Readings that anti-correlate say nothing of the windows' speed.
	if got := refReliability([]float64{1, 2, 3, 4}, []float64{4, 3, 2, 1}); got != 0 {
		t.Errorf("anti-correlated readings: reliability %v, want 0", got)
	}
	if got := refReliability(a[:3], b[:3]); got != 0 {
		t.Errorf("3 windows: reliability %v, want 0 (under minBlocks)", got)
	}

	// blockResponse divides the windows' slope by it: engine times that
	// follow the true speed x at 0.8, fitted on the mean of two readings
	// whose errors (uncorrelated with x and with each other) flatten it.
	x = []float64{-0.3, 0, 0.3, -0.3, 0, 0.3}
	d1 := []float64{0.2, 0.2, 0.2, -0.2, -0.2, -0.2}
	d2 := []float64{0.1, -0.2, 0.1, -0.1, 0.2, -0.1}
	var times, r1, r2, at []float64
	for k := range x {
		for j := range 5 {
			times = append(times, 0.2*math.Exp(0.8*x[k])*[]float64{0.97, 1, 1.03, 1.01, 0.99}[j])
			r1, r2 = append(r1, 5e6*math.Exp(x[k]+d1[k])), append(r2, 5e6*math.Exp(x[k]+d2[k]))
			at = append(at, float64(10*k)+float64(j))
		}
	}
	var r QueryResponse
	blockResponse(&r, times, r1, r2, at, 10)
	want := refReliability(r1Means(r1, 5), r1Means(r2, 5))
	if !(want > 0 && want < 1) || math.Abs(r.RefReliability-want) > 1e-12 || math.Abs(r.BlockCorrected-r.BlockResponse/want) > 1e-12 || math.Abs(r.CorrectedSE-r.BlockSE/want) > 1e-12 {
		t.Errorf("reliability %v (want %v in (0, 1)), corrected %v ± %v from %v ± %v", r.RefReliability, want, r.BlockCorrected, r.CorrectedSE, r.BlockResponse, r.BlockSE)
	}
	if !(r.BlockResponse < 0.7 && math.Abs(r.BlockCorrected-0.8) < math.Abs(r.BlockResponse-0.8)) {
		t.Errorf("the noisy reference should flatten the slope below 0.8 and the correction bring it closer: %v -> %v", r.BlockResponse, r.BlockCorrected)
	}
	t.Logf("true 0.8: fitted %.3f ± %.3f, reliability %.3f, corrected %.3f ± %.3f", r.BlockResponse, r.BlockSE, r.RefReliability, r.BlockCorrected, r.CorrectedSE)
}

// r1Means is the mean of every n consecutive values.
func r1Means(v []float64, n int) []float64 {
	var out []float64
	for i := 0; i < len(v); i += n {
		var s float64
		for _, x := range v[i : i+n] {
			s += x
		}
		out = append(out, s/float64(n))
	}
	return out
}
