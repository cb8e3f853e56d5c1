package costmodel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"go.yaml.in/yaml/v3"
	"gonum.org/v1/gonum/mat"

	"gostachio/plan"
)

// bruteNNLS solves min ||Ax-b|| s.t. x >= 0 for small n by trying every
// support set (unconstrained LS on it, kept if feasible) — independent of
// the active-set method.
func bruteNNLS(a *mat.Dense, b []float64) ([]float64, float64) {
	m, n := a.Dims()
	best, bestRes := make([]float64, n), math.Inf(1)
	for mask := 0; mask < 1<<n; mask++ {
		var cols []int
		for j := 0; j < n; j++ {
			if mask&(1<<j) != 0 {
				cols = append(cols, j)
			}
		}
		x := make([]float64, n)
		if len(cols) > 0 {
			sub := mat.NewDense(m, len(cols), nil)
			for c, j := range cols {
				for i := 0; i < m; i++ {
					sub.Set(i, c, a.At(i, j))
				}
			}
			var s mat.VecDense
			if err := s.SolveVec(sub, mat.NewVecDense(m, b)); err != nil {
				continue
			}
			ok := true
			for c, j := range cols {
				if s.AtVec(c) < 0 {
					ok = false
				}
				x[j] = s.AtVec(c)
			}
			if !ok {
				continue
			}
		}
		if r := residual(a, x, b); r < bestRes {
			best, bestRes = x, r
		}
	}
	return best, bestRes
}

func residual(a *mat.Dense, x, b []float64) float64 {
	var r mat.VecDense
	r.MulVec(a, mat.NewVecDense(len(x), x))
	var s float64
	for i := range b {
		d := r.AtVec(i) - b[i]
		s += d * d
	}
	return math.Sqrt(s)
}

func TestNNLSKnownSolution(t *testing.T) {
	// b = A·x* exactly with x* >= 0: NNLS recovers x*.
	a := mat.NewDense(5, 3, []float64{1, 1e6, 2e5, 1, 2e6, 1e5, 1, 5e6, 9e5, 1, 1e7, 3e6, 1, 3e5, 7e4})
	want := []float64{5000, 0.25, 4}
	var bv mat.VecDense
	bv.MulVec(a, mat.NewVecDense(3, want))
	got, err := NNLS(a, bv.RawVector().Data)
	if err != nil {
		t.Fatal(err)
	}
	for j := range want {
		if math.Abs(got[j]-want[j]) > 1e-6*math.Max(1, want[j]) {
			t.Fatalf("x = %v, want %v", got, want)
		}
	}
}

func TestNNLSNonNegativeVsBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 200; trial++ {
		m, n := 4+rng.IntN(8), 1+rng.IntN(4)
		a := mat.NewDense(m, n, nil)
		b := make([]float64, m)
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				a.Set(i, j, rng.NormFloat64())
			}
			b[i] = rng.NormFloat64()
		}
		x, err := NNLS(a, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range x {
			if v < 0 {
				t.Fatalf("trial %d: negative x %v", trial, x)
			}
		}
		_, want := bruteNNLS(a, b)
		if got := residual(a, x, b); got > want*(1+1e-6)+1e-9 {
			t.Fatalf("trial %d: residual %g, brute force %g (x %v)", trial, got, want, x)
		}
	}
}

func TestFitOpCostRecovers(t *testing.T) {
	want := OpCost{Fixed: 2000, ByteRate: 2e9, RowRate: 100e6}
	var s []OpSample
	for _, r := range []float64{1e3, 1e4, 1e5, 1e6} {
		for _, w := range []float64{8, 24, 60} {
			s = append(s, OpSample{Bytes: r * w, Rows: r, Ns: want.Ns(r*w, r)})
		}
	}
	got, q, err := FitOpCost(s)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(float64(got.Fixed-want.Fixed)) > 2 || math.Abs(float64(got.ByteRate/want.ByteRate)-1) > 1e-4 ||
		math.Abs(float64(got.RowRate/want.RowRate)-1) > 1e-4 {
		t.Fatalf("fit %+v, want %+v", got, want)
	}
	if q.R2 < 0.9999 || q.MAPE > 1e-3 {
		t.Fatalf("quality %v on exact data", q)
	}
}

// A filter's cost follows its selectivity through the output term: the
// fit separates it from the per-input-byte and per-row terms, and an
// operator that writes nothing pays none of it.
func TestFitOpCostRecoversOutputTerm(t *testing.T) {
	want := OpCost{Fixed: 500, ByteRate: 20e9, RowRate: 400e6, TermRate: 2e9, OutRate: 2.5e9}
	var s []OpSample
	for _, r := range []float64{4e3, 3e4, 2.5e5} {
		for _, terms := range []float64{1, 3, 7} {
			for _, sel := range []float64{0.01, 0.3, 0.97} {
				for _, width := range []float64{8, 40} {
					in := r * width
					out := in * sel
					s = append(s, OpSample{Bytes: in, Rows: r, Terms: terms, Out: out, Ns: want.NsOut(in, r, terms, out)})
				}
			}
		}
	}
	got, q, err := FitOpCost(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want Rate
	}{{"bytes", got.ByteRate, want.ByteRate}, {"rows", got.RowRate, want.RowRate}, {"terms", got.TermRate, want.TermRate}, {"out", got.OutRate, want.OutRate}} {
		if math.Abs(float64(c.got/c.want)-1) > 1e-3 {
			t.Errorf("%s rate %v, want %v", c.name, c.got, c.want)
		}
	}
	if q.R2 < 0.9999 {
		t.Fatalf("quality %v on exact data", q)
	}
	if d := got.NsOut(1e6, 1e4, 2, 5e5) - got.NsTerms(1e6, 1e4, 2); math.Abs(d-5e5*1e9/float64(got.OutRate)) > 1 {
		t.Fatalf("output term adds %v ns for 5e5 bytes at %v", d, got.OutRate)
	}
}

// String terms get a rate of their own: samples made with one are fitted
// back to it, and samples without any fit none.
func TestFitOpCostRecoversStringTerms(t *testing.T) {
	want := OpCost{Fixed: 300, ByteRate: 20e9, TermRate: 2e9, OutRate: 2.5e9, StrTermRate: 150e6}
	var s []OpSample
	for _, r := range []float64{4e3, 3e4, 2.5e5} {
		for _, terms := range []struct{ all, str float64 }{{2, 0}, {5, 0}, {3, 2}, {9, 8}, {4, 1}} {
			for _, sel := range []float64{0.02, 0.5} {
				in := r * 24
				s = append(s, OpSample{Bytes: in, Rows: r, Terms: terms.all, StrTerms: terms.str, Out: in * sel,
					Ns: want.NsExpr(in, r, terms.all, terms.str, in*sel, in)})
			}
		}
	}
	got, q, err := FitOpCost(s)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(float64(got.StrTermRate/want.StrTermRate)-1) > 1e-3 || math.Abs(float64(got.TermRate/want.TermRate)-1) > 1e-3 {
		t.Errorf("string terms %v, terms %v; want %v, %v", got.StrTermRate, got.TermRate, want.StrTermRate, want.TermRate)
	}
	if q.R2 < 0.9999 {
		t.Errorf("quality %v on exact data", q)
	}
	for i := range s {
		s[i].StrTerms = 0
		s[i].Ns = (OpCost{ByteRate: 20e9, TermRate: 2e9}).NsExpr(s[i].Bytes, s[i].Rows, s[i].Terms, 0, s[i].Out, s[i].Bytes)
	}
	if got, _, _ := FitOpCost(s); got.StrTermRate != 0 {
		t.Errorf("no string terms, yet a string rate %v", got.StrTermRate)
	}
}

func TestFitStorageRecovers(t *testing.T) {
	want := Storage{Bandwidth: 2e9, Latency: 100000, Request: 1 << 20, TaskQD: 32,
		Curve: []QDPoint{{1, 0.4}, {4, 0.8}, {16, 1}}}
	var s []ReadSample
	for _, size := range []int64{64 << 10, 1 << 20} {
		for _, d := range []int{1, 4, 16} {
			q := float64(d * want.TaskRequests(size))
			per := float64(want.Latency) + float64(size)*float64(d)*1e9/want.BandwidthAt(q)
			s = append(s, ReadSample{Size: size, Depth: d, Tasks: 100, Ns: per * 100 / float64(d)})
		}
	}
	got, q, err := FitStorage(s, 1<<20, 32, 32)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(float64(got.Bandwidth/want.Bandwidth)-1) > 1e-4 || math.Abs(float64(got.Latency-want.Latency)) > 2 || len(got.Curve) != 3 {
		t.Fatalf("fit %+v, want %+v", got, want)
	}
	for i, p := range got.Curve {
		if p.QD != want.Curve[i].QD || math.Abs(p.Frac-want.Curve[i].Frac) > 1e-4 {
			t.Fatalf("curve %v, want %v", got.Curve, want.Curve)
		}
	}
	if q.R2 < 0.9999 {
		t.Fatalf("quality %v on exact data", q)
	}
}

// TestFitStorageCurveNeverFalls: samples whose queue depth 4 ran slower
// than depth 2 (the guest disk's noise) fit a curve that holds depth 2's
// throughput at depth 4; the rest of the fit is unchanged.
func TestFitStorageCurveNeverFalls(t *testing.T) {
	bw := map[int]float64{1: 0.5e9, 2: 1.6e9, 4: 1.0e9, 16: 2e9} // bytes/s at each depth
	var s []ReadSample
	for d, b := range bw {
		for _, size := range []int64{256 << 10, 1 << 20} {
			per := 100_000 + float64(size)*float64(d)*1e9/b
			s = append(s, ReadSample{Size: size, Depth: d, Tasks: 64, Ns: per * 64 / float64(d)})
		}
	}
	got, _, err := FitStorage(s, 1<<20, 1, 32)
	if err != nil {
		t.Fatal(err)
	}
	want := []QDPoint{{1, 0.25}, {2, 0.8}, {4, 0.8}, {16, 1}}
	if math.Abs(float64(got.Bandwidth)/2e9-1) > 1e-4 || math.Abs(float64(got.Latency)-100_000) > 2 || len(got.Curve) != len(want) {
		t.Fatalf("fit %+v", got)
	}
	for i, p := range got.Curve {
		if p.QD != want[i].QD || math.Abs(p.Frac-want[i].Frac) > 1e-4 {
			t.Fatalf("curve %v, want %v", got.Curve, want)
		}
	}
}

func TestProvenanceMismatch(t *testing.T) {
	cur := HostProvenance()
	if d := cur.Mismatch(cur); len(d) != 0 {
		t.Fatalf("this machine differs from itself: %v", d)
	}
	other := cur
	other.CPU, other.Engine, other.Cores = "Some Other CPU", "gostachio-cpu-engine/0", cur.Cores+1
	if d := other.Mismatch(cur); len(d) != 3 {
		t.Fatalf("mismatches %v, want cpu, cores and engine", d)
	}
	if d := (Provenance{}).Mismatch(cur); len(d) != 0 {
		t.Fatalf("an empty provenance should not warn: %v", d)
	}
}

// TestFitOpCostSizedRecoversCacheTerm: builds whose per-row cost rises
// past a cache size (exact data from a known OpCost with Miss and Cache
// on the fit's grid: 256 KiB·√2^8 = 4 MiB) are fitted back — the miss
// cost, the cache size and the in-cache rate; FitOpCost alone cannot
// (its R² is lower), and in-cache-only data leaves the term zero.
func TestFitOpCostSizedRecoversCacheTerm(t *testing.T) {
	want := OpCost{ByteRate: 2e9, Miss: 90, Cache: 4 << 20}
	var s, small []OpSample
	for _, r := range []float64{4096, 32768, 131072, 262144, 524288, 1 << 20, 2 << 20, 4 << 20} {
		in := 16 * r
		smp := OpSample{Bytes: in, Rows: r, Terms: 1, Ns: want.NsOut(in, r, 1, 0)}
		s = append(s, smp)
		if in <= float64(want.Cache) {
			small = append(small, smp)
		}
	}
	got, q, err := FitOpCostSized(s)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(float64(got.Miss)/float64(want.Miss)-1) > 0.02 || math.Abs(float64(got.Cache)/float64(want.Cache)-1) > 0.01 {
		t.Errorf("miss %v past %d B, want %v past %d B", got.Miss, got.Cache, want.Miss, want.Cache)
	}
	if math.Abs(float64(got.ByteRate/want.ByteRate)-1) > 0.02 {
		t.Errorf("byte rate %v, want %v", got.ByteRate, want.ByteRate)
	}
	_, plain, err := FitOpCost(s)
	if err != nil {
		t.Fatal(err)
	}
	if q.R2 < 0.999 || plain.R2 >= q.R2 {
		t.Errorf("R² sized %.4f, plain %.4f: want the sized fit near 1 and better", q.R2, plain.R2)
	}
	inCache, _, err := FitOpCostSized(small)
	if err != nil {
		t.Fatal(err)
	}
	if inCache.Miss != 0 {
		t.Errorf("in-cache samples only: miss %v, want 0", inCache.Miss)
	}
	// The term: 1 Mi rows of 16 B (16 MiB, 3/4 past a 4 MiB cache) cost
	// 90 ns · 3/4 more per row.
	if d := want.NsOut(16<<20, 1<<20, 0, 0) - (OpCost{ByteRate: 2e9}).NsOut(16<<20, 1<<20, 0, 0); math.Abs(d-90*0.75*(1<<20)) > 1 {
		t.Errorf("cache term %v ns, want %v", d, 90*0.75*(1<<20))
	}
}

func TestFitOpScale(t *testing.T) {
	kind := OpCost{Fixed: 1000, RowRate: 1e9} // 1 µs + 1 ns/row
	var samples []OpSample
	for _, rows := range []float64{4096, 32768, 131072} {
		// The operator runs 3x its kind's price.
		samples = append(samples, OpSample{Rows: rows, Ns: 3 * kind.Ns(0, rows)})
	}
	s, q, err := FitOpScale(kind, samples)
	if err != nil {
		t.Fatal(err)
	}
	if s != 3 || q.R2 < 0.999999 || q.MAPE > 1e-9 {
		t.Errorf("scale %g, %v: want 3, exact", s, q)
	}
	// Ratio of sums: the largest sample decides.
	samples[0].Ns *= 10
	s, _, _ = FitOpScale(kind, samples)
	want := (3*kind.Ns(0, 4096)*10 + 3*kind.Ns(0, 32768) + 3*kind.Ns(0, 131072)) /
		(kind.Ns(0, 4096) + kind.Ns(0, 32768) + kind.Ns(0, 131072))
	if math.Abs(s-want) > 1e-5*want {
		t.Errorf("scale %g, want %g", s, want)
	}
	if _, _, err := FitOpScale(OpCost{}, samples); err == nil {
		t.Error("a free kind gave a scale")
	}
	if _, _, err := FitOpScale(kind, nil); err == nil {
		t.Error("no samples gave a scale")
	}
}

func TestDeviceProfiledScale(t *testing.T) {
	const y = `
launch: 1us
ops:
  filter: {fixed: 0s, bytes: 0, rows: 1G/s}
profiled:
  %s: {op: filter, case: "q6 p0 filter", scale: 2.5}
`
	op := plan.Op{Kind: plan.OpFilter, In: []string{"a"}, Out: []string{"a"}, Expr: plan.SQL("a < 3"), Selectivity: 1}
	other := op
	other.Expr = plan.SQL("a < 4")
	var d Device
	if err := yaml.Unmarshal([]byte(fmt.Sprintf(y, op.Fingerprint())), &d); err != nil {
		t.Fatal(err)
	}
	if got := d.Work([]plan.Op{op}, plan.OpFilter, 0, 1000); got != 2500 {
		t.Errorf("profiled filter over 1000 rows: %g ns, want 2500", got)
	}
	if got := d.Work([]plan.Op{other}, plan.OpFilter, 0, 1000); got != 1000 {
		t.Errorf("unprofiled filter over 1000 rows: %g ns, want 1000 (the kind's)", got)
	}
	keys := OpKeys([]plan.Op{op, other})
	if got := d.WorkKeyed([]plan.Op{op, other}, plan.OpFilter, 0, 1000, nil, 1, keys); got != 3500 {
		t.Errorf("fused profiled + unprofiled: %g ns, want 3500", got)
	}
	if got := d.WorkKeyed([]plan.Op{op}, plan.OpFilter, 0, 1000, nil, 1, nil); got != 1000 {
		t.Errorf("nil keys: %g ns, want the kind's 1000", got)
	}
	// A key of another kind is ignored.
	d.Profiled[op.Fingerprint()] = OpScale{Op: "project", Scale: 9}
	if got := d.Work([]plan.Op{op}, plan.OpFilter, 0, 1000); got != 1000 {
		t.Errorf("entry of another kind applied: %g ns", got)
	}
	for _, bad := range []string{
		"launch: 1us\nprofiled:\n  abc: {op: filter, case: x, scale: 0}\n",
		"launch: 1us\nprofiled:\n  abc: {op: nosuch, case: x, scale: 1}\n",
		"launch: 1us\nprofiled:\n  abc: {op: filter, case: x, scale: 1, extra: 2}\n",
	} {
		var d Device
		if err := yaml.Unmarshal([]byte(bad), &d); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// FitOpCostSizedWeighted: the default power gives FitOpCostSized's fit;
// power 1 weighs the small samples' relative errors as the large ones',
// so on a mix of a cheap family and one costly sample whose per-row
// costs disagree, its worst relative error is smaller than the default's
// (which the large sample decides); a negative power panics.
func TestFitOpCostSizedWeighted(t *testing.T) {
	var samples []OpSample
	for _, rows := range []float64{1000, 2000, 4000, 8000} {
		samples = append(samples, OpSample{Rows: rows, Ns: 20 * rows}) // 20 ns/row
	}
	samples = append(samples, OpSample{Rows: 4e6, Ns: 5 * 4e6}, OpSample{Rows: 8e6, Ns: 5 * 8e6}) // 5 ns/row
	def, _, err := FitOpCostSized(samples)
	if err != nil {
		t.Fatal(err)
	}
	if same, _, err := FitOpCostSizedWeighted(samples, FitWeightPower); err != nil || same != def {
		t.Errorf("at the default power: %+v (%v), want FitOpCostSized's %+v", same, err, def)
	}
	rel, _, err := FitOpCostSizedWeighted(samples, 1)
	if err != nil {
		t.Fatal(err)
	}
	worst := func(c OpCost) float64 {
		w := 0.0
		for _, s := range samples {
			w = max(w, math.Abs(c.Ns(0, s.Rows)-s.Ns)/s.Ns)
		}
		return w
	}
	if !(worst(rel) < worst(def)) {
		t.Errorf("worst relative error %.3f at power 1 (%+v), %.3f at the default (%+v): want power 1's smaller", worst(rel), rel, worst(def), def)
	}
	defer func() {
		if recover() == nil {
			t.Error("a negative power did not panic")
		}
	}()
	FitOpCostSizedWeighted(samples, -1)
}
