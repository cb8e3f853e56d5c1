package costmodel

import (
	"fmt"
	"math"
	"sort"
	"strconv"

	"gonum.org/v1/gonum/mat"
)

// FitQuality is how well a fitted cost function reproduces the samples it
// was fitted on: the coefficient of determination R² (1: perfect; ≤ 0: no
// better than the mean) and the mean absolute percentage error.
type FitQuality struct {
	N    int
	R2   float64
	MAPE float64
}

func (q FitQuality) String() string {
	return fmt.Sprintf("n=%d R²=%.3f MAPE=%.1f%%", q.N, q.R2, 100*q.MAPE)
}

// Quality compares predictions with measurements (equal lengths; entries
// with a non-positive measurement are left out of the MAPE).
func Quality(pred, meas []float64) FitQuality {
	q := FitQuality{N: len(meas)}
	if len(meas) == 0 || len(pred) != len(meas) {
		return q
	}
	var mean float64
	for _, v := range meas {
		mean += v
	}
	mean /= float64(len(meas))
	var ssRes, ssTot, ape float64
	nape := 0
	for i, v := range meas {
		d := pred[i] - v
		ssRes += d * d
		ssTot += (v - mean) * (v - mean)
		if v > 0 {
			ape += math.Abs(d) / v
			nape++
		}
	}
	if ssTot > 0 {
		q.R2 = 1 - ssRes/ssTot
	} else if ssRes == 0 {
		q.R2 = 1
	}
	if nape > 0 {
		q.MAPE = ape / float64(nape)
	}
	return q
}

// Round6 rounds v to 6 significant digits: what a profile file stores, so
// a fit's quality is computed on the numbers the profile will hold.
func Round6(v float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 6, 64), 64)
	return r
}

// OpSample is one measured run of an operator: input bytes and rows, and
// the time it took (ns).
type OpSample struct {
	Bytes, Rows, Ns float64
	// Terms is the operator's expression terms per row (plan.Op.Terms),
	// StrTerms the part of them on strings (plan.Op.StrTerms).
	Terms, StrTerms float64
	// Out is the bytes the operator wrote (0: not measured).
	Out float64
	// Table is the working set of a probe: the bytes of the table it
	// probes (0: Bytes, the operator's input, is its working set).
	Table float64
}

// WorkingSet is what OpCost's cache term sees for s.
func (s OpSample) WorkingSet() float64 {
	if s.Table > 0 {
		return s.Table
	}
	return s.Bytes
}

// FitWeightPower sets how fits weigh samples: each residual is divided by
// y^FitWeightPower. 1 minimizes squared relative errors (every sample
// counts alike), 0 plain squared errors (the longest samples decide);
// the default ½ is between: one operator kind lumps expressions whose
// per-row costs differ 50x, and a query's time is made of its large
// kernels, which relative weighting would let the many cheap ones
// outvote.
var FitWeightPower = 0.5

// relNNLS fits y ≈ X·c, c ≥ 0, minimizing Σ((X·c − y)/y^power)².
func relNNLS(x [][]float64, y []float64, power float64) ([]float64, error) {
	if len(x) == 0 {
		return nil, fmt.Errorf("costmodel: fit: no samples")
	}
	n := len(x[0])
	a := mat.NewDense(len(x), n, nil)
	b := make([]float64, len(x))
	for i, row := range x {
		w := 1.0
		if y[i] > 0 {
			w = math.Pow(y[i], -power)
		}
		for j, v := range row {
			a.Set(i, j, v*w)
		}
		b[i] = y[i] * w
	}
	return NNLS(a, b)
}

// FitOpCost fits OpCost (Fixed + bytes/ByteRate + rows/RowRate +
// rows·terms/TermRate + out/OutRate, all terms non-negative) to samples by non-negative least squares, residuals
// weighted by FitWeightPower. Coefficients are rounded as a profile stores them (Round6,
// whole ns) before the quality is computed. Fewer than one sample is an
// error.
func FitOpCost(samples []OpSample) (OpCost, FitQuality, error) {
	return fitOpCost(samples, FitWeightPower)
}

// fitOpCost is FitOpCost with residuals divided by y^power.
func fitOpCost(samples []OpSample, power float64) (OpCost, FitQuality, error) {
	if len(samples) == 0 {
		return OpCost{}, FitQuality{}, fmt.Errorf("costmodel: fit operator cost: no samples")
	}
	x := make([][]float64, len(samples))
	y := make([]float64, len(samples))
	for i, s := range samples {
		x[i] = []float64{1, s.Bytes, s.Rows, s.Rows * s.Terms, s.Out, s.Rows * s.StrTerms}
		y[i] = s.Ns
	}
	c, err := relNNLS(x, y, power)
	if err != nil {
		return OpCost{}, FitQuality{}, err
	}
	oc := opCostOf(c)
	pred := make([]float64, len(samples))
	for i, s := range samples {
		pred[i] = oc.NsExpr(s.Bytes, s.Rows, s.Terms, s.StrTerms, s.Out, s.Bytes)
	}
	return oc, Quality(pred, y), nil
}

// FitOpCostSized is FitOpCost with the working-set term (OpCost.Miss,
// OpCost.Cache) for operators whose cost per row grows with their input
// once it outgrows the caches (hash builds): for each cache size on a
// geometric grid (256 KiB to 1 GiB, ratio √2) it fits the seven
// coefficients by the same weighted NNLS, with the feature
// rows·max(0, 1 − cache/bytes), and keeps the cache size of least
// weighted squared error (ties: the smaller), among the sizes that at
// least minPastCache samples are twice past. Deterministic: the same
// samples give the same OpCost. Without samples past the smallest cache
// size the term stays zero, as in FitOpCost.
func FitOpCostSized(samples []OpSample) (OpCost, FitQuality, error) {
	return FitOpCostSizedWeighted(samples, FitWeightPower)
}

// FitOpCostSizedWeighted is FitOpCostSized with residuals divided by
// y^power instead of y^FitWeightPower (1: relative errors, every sample
// alike). It panics if power is negative or not finite.
func FitOpCostSizedWeighted(samples []OpSample, power float64) (OpCost, FitQuality, error) {
	if !(power >= 0) || math.IsInf(power, 0) {
		panic("costmodel: FitOpCostSizedWeighted needs a finite power >= 0")
	}
	best, q, err := fitOpCost(samples, power)
	if err != nil {
		return best, q, err
	}
	y := make([]float64, len(samples))
	for i, s := range samples {
		y[i] = s.Ns
	}
	bestErr := weightedSSE(best, samples, power)
	for cache := float64(256 << 10); cache <= 1<<30; cache *= math.Sqrt2 {
		cache = math.Round(cache)
		x := make([][]float64, len(samples))
		past := 0
		for i, s := range samples {
			f := missFraction(s.WorkingSet(), cache)
			if f >= 0.5 {
				past++
			}
			x[i] = []float64{1, s.Bytes, s.Rows, s.Rows * s.Terms, s.Out, s.Rows * s.StrTerms, s.Rows * f}
		}
		if past < minPastCache {
			break
		}
		c, err := relNNLS(x, y, power)
		if err != nil {
			return OpCost{}, FitQuality{}, err
		}
		oc := opCostOf(c[:6])
		if c[6] > 0 {
			oc.Miss, oc.Cache = Duration(math.Round(c[6])), Bytes(cache)
		}
		if e := weightedSSE(oc, samples, power); e < bestErr {
			best, bestErr = oc, e
		}
	}
	pred := make([]float64, len(samples))
	for i, s := range samples {
		pred[i] = best.NsExpr(s.Bytes, s.Rows, s.Terms, s.StrTerms, s.Out, s.WorkingSet())
	}
	return best, Quality(pred, y), nil
}

// minPastCache is how many samples must have at least half their working
// set past a cache size for FitOpCostSized to try it: a size that only the
// largest sample crosses would price that one sample's noise as a miss
// cost (seen: 1.7 ms/row past 64 MiB from one 67 MB build).
const minPastCache = 3

// weightedSSE is the error relNNLS minimizes, of c's predictions.
func weightedSSE(c OpCost, samples []OpSample, power float64) float64 {
	var e float64
	for _, s := range samples {
		d := c.NsExpr(s.Bytes, s.Rows, s.Terms, s.StrTerms, s.Out, s.WorkingSet()) - s.Ns
		if s.Ns > 0 {
			d *= math.Pow(s.Ns, -power)
		}
		e += d * d
	}
	return e
}

// opCostOf turns the six per-unit coefficients of FitOpCost's features
// (1, bytes, rows, rows·terms, out, rows·strTerms) into an OpCost.
func opCostOf(c []float64) OpCost {
	oc := OpCost{Fixed: Duration(math.Round(c[0]))}
	if c[1] > 0 {
		oc.ByteRate = Rate(Round6(1e9 / c[1]))
	}
	if c[2] > 0 {
		oc.RowRate = Rate(Round6(1e9 / c[2]))
	}
	if c[3] > 0 {
		oc.TermRate = Rate(Round6(1e9 / c[3]))
	}
	if c[4] > 0 {
		oc.OutRate = Rate(Round6(1e9 / c[4]))
	}
	if c[5] > 0 {
		oc.StrTermRate = Rate(Round6(1e9 / c[5]))
	}
	return oc
}

// FitTransfer fits Transfer (Latency + bytes/Bandwidth) to (bytes, ns)
// samples, like FitOpCost. A zero per-byte term leaves Bandwidth 0
// (infinitely fast: latency only).
func FitTransfer(samples []OpSample) (Transfer, FitQuality, error) {
	if len(samples) == 0 {
		return Transfer{}, FitQuality{}, fmt.Errorf("costmodel: fit transfer: no samples")
	}
	x := make([][]float64, len(samples))
	y := make([]float64, len(samples))
	for i, s := range samples {
		x[i] = []float64{1, s.Bytes}
		y[i] = s.Ns
	}
	c, err := relNNLS(x, y, FitWeightPower)
	if err != nil {
		return Transfer{}, FitQuality{}, err
	}
	t := Transfer{Latency: Duration(math.Round(c[0]))}
	if c[1] > 0 {
		t.Bandwidth = Rate(Round6(1e9 / c[1]))
	}
	pred := make([]float64, len(samples))
	for i, s := range samples {
		pred[i] = t.Ns(int64(s.Bytes))
	}
	return t, Quality(pred, y), nil
}

// ReadSample is one storage measurement: Tasks reads of Size bytes each,
// Depth of them outstanding at all times, took Ns in all.
type ReadSample struct {
	Size  int64
	Depth int
	Tasks int
	Ns    float64
}

// FitStorage fits the Storage model to read samples. The device queue
// depth of a sample is q = Depth·min(taskQD, ⌈Size/request⌉), capped at
// maxQD (the reader's own limit); each read then takes
//
//	t = Latency + Size·Depth / B(q)
//
// (Depth reads share the bandwidth). One weighted NNLS (FitWeightPower) fits the
// latency and 1/B(q) per distinct q; Bandwidth is the largest B(q) and
// the curve holds B(q)/Bandwidth at each q (sorted by q), made
// non-decreasing: B(q) is raised to max_{q' ≤ q} B(q'), since a reader
// with q requests to give can always hold back to q' of them, so a deeper
// queue never needs to deliver less (a dip is the noise of the guest's
// disk: the dev VM's calibration fitted qd4 at 0.56 between qd2 at 0.99
// and qd8 at 0.96). The quality compares the model's elapsed time per
// sample, Tasks/Depth·t, with the measured.
func FitStorage(samples []ReadSample, request int64, taskQD, maxQD int) (Storage, FitQuality, error) {
	if len(samples) == 0 {
		return Storage{}, FitQuality{}, fmt.Errorf("costmodel: fit storage: no samples")
	}
	if request <= 0 || taskQD < 1 || maxQD < 1 {
		return Storage{}, FitQuality{}, fmt.Errorf("costmodel: fit storage: request %d, task QD %d and max QD %d must be positive", request, taskQD, maxQD)
	}
	st := Storage{Request: Bytes(request), TaskQD: taskQD}
	qOf := func(s ReadSample) int {
		return min(s.Depth*st.TaskRequests(s.Size), maxQD)
	}
	levels := map[int]int{}
	for _, s := range samples {
		if s.Size <= 0 || s.Depth < 1 || s.Tasks < 1 || !(s.Ns > 0) {
			return Storage{}, FitQuality{}, fmt.Errorf("costmodel: fit storage: bad sample %+v", s)
		}
		levels[qOf(s)] = 0
	}
	qs := make([]int, 0, len(levels))
	for q := range levels {
		qs = append(qs, q)
	}
	sort.Ints(qs)
	for i, q := range qs {
		levels[q] = i
	}
	x := make([][]float64, len(samples))
	y := make([]float64, len(samples))
	for i, s := range samples {
		row := make([]float64, 1+len(qs))
		row[0] = 1
		row[1+levels[qOf(s)]] = float64(s.Size) * float64(s.Depth)
		x[i] = row
		y[i] = s.Ns * float64(s.Depth) / float64(s.Tasks)
	}
	c, err := relNNLS(x, y, FitWeightPower)
	if err != nil {
		return Storage{}, FitQuality{}, err
	}
	st.Latency = Duration(math.Round(c[0]))
	var bmax float64
	for i := range qs {
		if c[1+i] > 0 {
			bmax = math.Max(bmax, 1e9/c[1+i])
		}
	}
	if bmax <= 0 {
		return Storage{}, FitQuality{}, fmt.Errorf("costmodel: fit storage: no queue depth has a finite bandwidth")
	}
	st.Bandwidth = Rate(Round6(bmax))
	floor := 0.0
	for i, q := range qs {
		frac := 1.0
		if c[1+i] > 0 {
			frac = Round6(math.Min(1, 1e9/c[1+i]/float64(st.Bandwidth)))
		}
		floor = math.Max(floor, frac)
		st.Curve = append(st.Curve, QDPoint{QD: float64(q), Frac: floor})
	}
	pred := make([]float64, len(samples))
	meas := make([]float64, len(samples))
	for i, s := range samples {
		t := float64(st.Latency) + float64(s.Size)*float64(s.Depth)*1e9/st.BandwidthAt(float64(qOf(s)))
		pred[i] = t * float64(s.Tasks) / float64(s.Depth)
		meas[i] = s.Ns
	}
	return st, Quality(pred, meas), nil
}

// FitOpScale fits one operator's scale against its kind's cost c
// (OpScale.Scale):
//
//	scale = Σ_i y_i / Σ_i ĉ_i,   ĉ_i = c.NsExpr(sample i)
//
// over the operator's own samples: the ratio of sums, so the largest
// samples (the sizes a query's units have) weigh most. It is rounded as a
// profile stores it (Round6), and the quality is that of scale·ĉ against
// the samples. No samples, or samples c prices at nothing, are an error.
func FitOpScale(c OpCost, samples []OpSample) (float64, FitQuality, error) {
	var sy, sp float64
	pred := make([]float64, len(samples))
	y := make([]float64, len(samples))
	for i, s := range samples {
		pred[i] = c.NsExpr(s.Bytes, s.Rows, s.Terms, s.StrTerms, s.Out, s.WorkingSet())
		y[i] = s.Ns
		sy += y[i]
		sp += pred[i]
	}
	if len(samples) == 0 {
		return 0, FitQuality{}, fmt.Errorf("costmodel: fit operator scale: no samples")
	}
	if !(sp > 0) || !(sy > 0) {
		return 0, FitQuality{}, fmt.Errorf("costmodel: fit operator scale: the kind prices its %d samples at %g ns (measured %g)", len(samples), sp, sy)
	}
	scale := Round6(sy / sp)
	for i := range pred {
		pred[i] *= scale
	}
	return scale, Quality(pred, y), nil
}
