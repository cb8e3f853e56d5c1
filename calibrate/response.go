package calibrate

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"gostachio/dataset"
	"gostachio/engine"
	"gostachio/internal/cpuref"
	"gostachio/internal/diskref"
	"gostachio/internal/stats"
	"gostachio/scheduler"
	"gostachio/sim"
	"gostachio/tpch/queries"

	"gonum.org/v1/gonum/stat"
)

// How much of the CPU reference's speed changes a query's engine time
// follows. validate --rescale-cpu scales every CPU price by the
// reference's mean time beside the engine over its time at calibration: it
// assumes the engine slows down as the simulator, its prices so scaled,
// says it does. ReferenceResponse checks that on this machine: it runs a
// query over and over, each run between two CPU references, and measures
// the engine's response to the reference — the slope of ln(time) on
// ln(reference) — two ways. Over windows of consecutive runs (each
// window's median time against its mean reference), as validate's rescale
// averages a whole run's references; and between the runs both references
// put in the fast half of the machine's speeds and those both put in the
// slow half. On the 2-core Xeon guest (2026-11-27) the windows gave the
// most CPU-bound queries less than the simulator (q1 0.43–0.76 against
// 0.76–0.84, q16 0.63 against 0.97, q21 0.52 against 0.88: the rescale
// over-corrects them) and q18 0.64–0.73 against 0.74; queries the simulator has waiting on the disk followed the CPU
// reference too (q3 0.73–1.28 against 0.12), through the disk: the virtio
// disk slows down when the CPU does (its reference read followed the CPU
// reference at 1.16 ± 0.15), and with the disk read after every run and
// each window priced with both readings (RescaleDisk) the simulator
// followed as the engine did (q3 0.51 against 0.68 ± 0.23, q8 0.51
// against 0.53 ± 0.08). The halves gave about half the windows' response
// (0.37–0.44): the machine changes speed within a run (half the runs' two
// references fell on either side of the median), so the halves blur. The
// windows blur too, less: a window's mean reference misjudges its speed a
// little, which flattens the engine's slope (regression dilution) and not
// the simulator's, priced at the very references; the report corrects the
// engine's for it with the references' reliability, measured from the
// agreement of the windows' references before and after the runs.

// ResponseOptions configure ReferenceResponse.
type ResponseOptions struct {
	// Profile prices the queries (it needs host.reference); Data is the
	// dataset the engine runs on.
	Profile, Data string
	// Queries: q1..q22, comma-separated, or all (default q1,q6,q18).
	Queries string
	// Policy and Set are the engine's and the simulator's (default
	// overlap, its defaults).
	Policy, Set string
	// Duration is how long each query is run (default 60 s), after
	// Warmup untimed runs (default 2).
	Duration time.Duration
	Warmup   int
	// Block is the length of the windows of BlockResponse (default 10 s).
	Block time.Duration
	// RescaleDisk reads the disk reference (validate --rescale-disk's)
	// after every run, and the simulator prices each window with the
	// disk's bandwidth scaled by the window's reading as well: on a guest
	// whose disk slows down when its CPU does, the engine's disk-bound
	// queries follow the CPU reference through the disk.
	RescaleDisk bool
	// Log receives progress (nil: none).
	Log io.Writer
}

// QueryResponse is one query's measurement. Ratios are the slow half's
// median over the fast half's; a response is ln(ratio) / ln(RefRatio): 1
// when the time moves as the reference does, 0 when it does not move.
type QueryResponse struct {
	Query  string `json:"query"`
	Policy string `json:"policy"`
	Set    string `json:"set,omitempty"`
	// Runs timed; Fast and Slow: those both references put below, and
	// both at or above, the median of the runs' references (the others
	// straddle a change of speed and are left out).
	Runs int `json:"runs"`
	Fast int `json:"fast"`
	Slow int `json:"slow"`
	// RefFastNs and RefSlowNs: the references' medians in each half, ns.
	RefFastNs float64 `json:"ref_fast_ns"`
	RefSlowNs float64 `json:"ref_slow_ns"`
	RefRatio  float64 `json:"ref_ratio"`
	// EngineFast and EngineSlow: the engine's medians, seconds.
	EngineFast     float64 `json:"engine_fast_s"`
	EngineSlow     float64 `json:"engine_slow_s"`
	EngineRatio    float64 `json:"engine_ratio"`
	EngineResponse float64 `json:"engine_response"`
	// Split is false when a half has fewer than minResponseRuns runs or
	// the halves' references are within minResponseRatio: the machine did
	// not change speed enough to measure a response (ratios and responses
	// are then 0).
	Split bool `json:"split"`
	// Windows: the runs in consecutive windows of ResponseOptions.Block
	// (those starting in [k·block, (k+1)·block) make window k).
	Windows []ResponseWindow `json:"windows"`
	// BlockResponse and BlockSE: the slope of ln(the window's median
	// time) on ln(the window's mean reference) over the windows (least
	// squares) and its standard error; both 0 with fewer than minBlocks
	// windows or no spread of their references.
	BlockResponse float64 `json:"window_response"`
	BlockSE       float64 `json:"window_response_se"`
	// RefReliability is how much of the spread of the windows' mean
	// references is the machine's and not the reference's own noise
	// (refReliability of the windows' mean references before and after
	// the runs), and BlockCorrected = BlockResponse / RefReliability, its
	// standard error BlockSE / RefReliability: a reference that misjudges
	// a window's speed flattens the engine's slope towards 0 (regression
	// dilution) where the simulator's, priced at the same references, is
	// not flattened. 0 where the windows give no reliability (fewer than
	// minBlocks, or before and after uncorrelated).
	RefReliability float64 `json:"ref_reliability"`
	BlockCorrected float64 `json:"window_response_corrected"`
	CorrectedSE    float64 `json:"window_response_corrected_se"`
	// SimResponse is the simulator's response over the same windows
	// (the same least squares; its CPU prices scaled by each window's
	// reference over the profile's, as validate --rescale-cpu scales
	// them, and with RescaleDisk its disk bandwidth by the window's disk
	// reference over the profile's model, as --rescale-disk), and
	// SimErrMedian the median over the windows of its error against the
	// window's median time.
	SimResponse  float64 `json:"sim_response"`
	SimErrMedian float64 `json:"sim_error_median"`
}

// ResponseWindow is one window of runs.
type ResponseWindow struct {
	// Start is the window's start, seconds from the first run.
	Start float64 `json:"start_s"`
	Runs  int     `json:"runs"`
	// RefNs: the mean of its runs' references; Engine: their median
	// time; Sim: the simulator at RefNs (seconds).
	RefNs  float64 `json:"ref_ns"`
	Engine float64 `json:"engine_s"`
	Sim    float64 `json:"sim_s"`
	// DiskBps: the disk references' bytes over their time in the window
	// (ResponseOptions.RescaleDisk; 0 without).
	DiskBps float64 `json:"disk_bps,omitempty"`
}

// ResponseReport is ReferenceResponse's result.
type ResponseReport struct {
	Profile string `json:"profile"`
	// ProfileRefNs is the profile's host.reference, ns.
	ProfileRefNs float64         `json:"profile_reference_ns"`
	Queries      []QueryResponse `json:"queries"`
}

const (
	// minBlocks windows make a block response.
	minBlocks = 4
	// minResponseRuns: each half needs this many runs for its median.
	minResponseRuns = 5
	// minResponseRatio: halves whose references differ by less measure
	// noise, not a response.
	minResponseRatio = 1.05
)

// splitResponse fills r's split and engine fields from the runs' times
// (seconds) and the references before (r1) and after (r2) each, in ns: the
// threshold is the median of the runs' mean references, a run is fast
// when both its references are below it and slow when both are at or
// above it. It panics unless the three slices have one value per run.
func splitResponse(r *QueryResponse, times, r1, r2 []float64) {
	if len(r1) != len(times) || len(r2) != len(times) {
		panic("calibrate: splitResponse: one time and two references per run")
	}
	*r = QueryResponse{Query: r.Query, Policy: r.Policy, Set: r.Set, Runs: len(times)}
	if len(times) == 0 {
		return
	}
	mean := make([]float64, len(times))
	for i := range times {
		mean[i] = (r1[i] + r2[i]) / 2
	}
	thr := stats.Median(mean)
	var fastT, slowT, fastR, slowR []float64
	for i, t := range times {
		switch {
		case r1[i] < thr && r2[i] < thr:
			fastT, fastR = append(fastT, t), append(fastR, mean[i])
		case r1[i] >= thr && r2[i] >= thr:
			slowT, slowR = append(slowT, t), append(slowR, mean[i])
		}
	}
	r.Fast, r.Slow = len(fastT), len(slowT)
	if r.Fast < minResponseRuns || r.Slow < minResponseRuns {
		return
	}
	r.RefFastNs, r.RefSlowNs = stats.Median(fastR), stats.Median(slowR)
	r.RefRatio = r.RefSlowNs / r.RefFastNs
	r.EngineFast, r.EngineSlow = stats.Median(fastT), stats.Median(slowT)
	if !(r.RefRatio >= minResponseRatio) || !(r.EngineFast > 0) {
		return
	}
	r.Split = true
	r.EngineRatio = r.EngineSlow / r.EngineFast
	r.EngineResponse = math.Log(r.EngineRatio) / math.Log(r.RefRatio)
}

// windowsOf cuts runs started at offsets at (seconds, ascending) into
// windows: the runs starting in [k·block, (k+1)·block) make window k, as
// [lo, hi) index ranges (windows without runs are skipped).
func windowsOf(at []float64, block float64) [][2]int {
	var out [][2]int
	for lo := 0; lo < len(at); {
		k := math.Floor(at[lo] / block)
		hi := lo + 1
		for hi < len(at) && math.Floor(at[hi]/block) == k {
			hi++
		}
		out = append(out, [2]int{lo, hi})
		lo = hi
	}
	return out
}

// lnSlope is the least-squares slope b of ln y = a + b·ln x over the
// points and its standard error sqrt(Σe²/(n−2) / Σ(ln x − mean)²); both
// 0 with fewer than minBlocks points or no spread of x.
func lnSlope(xs, ys []float64) (b, se float64) {
	if len(xs) < minBlocks {
		return 0, 0
	}
	lx, ly := make([]float64, len(xs)), make([]float64, len(ys))
	for i := range xs {
		lx[i], ly[i] = math.Log(xs[i]), math.Log(ys[i])
	}
	_, sd := stat.MeanStdDev(lx, nil)
	if !(sd > 0) {
		return 0, 0
	}
	a, b := stat.LinearRegression(lx, ly, nil, false)
	var sse float64
	for i := range lx {
		e := ly[i] - a - b*lx[i]
		sse += e * e
	}
	n := float64(len(lx))
	return b, math.Sqrt(sse / (n - 2) / (sd * sd * (n - 1)))
}

// blockResponse fills r's windows (windowsOf at and block) and window
// response from the runs' times (seconds), the references before (r1) and
// after (r2) each (ns) and the runs' start offsets (seconds from the first
// run): the response is lnSlope of the windows' median times on their mean
// references (the mean of each run's two), corrected for the references'
// own noise by refReliability of the windows' means of r1 and of r2. It
// panics unless the four slices have one value per run and block is
// positive.
func blockResponse(r *QueryResponse, times, r1, r2, at []float64, block float64) {
	if len(r1) != len(times) || len(r2) != len(times) || len(at) != len(times) || !(block > 0) {
		panic("calibrate: blockResponse: one time, two references and an offset per run, and a positive window")
	}
	r.Windows = nil
	var xs, ys, before, after []float64
	for _, w := range windowsOf(at, block) {
		var s1, s2 float64
		for k := w[0]; k < w[1]; k++ {
			s1, s2 = s1+r1[k], s2+r2[k]
		}
		n := float64(w[1] - w[0])
		rw := ResponseWindow{Start: math.Floor(at[w[0]]/block) * block, Runs: w[1] - w[0], RefNs: (s1 + s2) / (2 * n), Engine: stats.Median(times[w[0]:w[1]])}
		r.Windows = append(r.Windows, rw)
		xs, ys = append(xs, rw.RefNs), append(ys, rw.Engine)
		before, after = append(before, s1/n), append(after, s2/n)
	}
	r.BlockResponse, r.BlockSE = lnSlope(xs, ys)
	r.RefReliability, r.BlockCorrected, r.CorrectedSE = 0, 0, 0
	if rel := refReliability(before, after); rel > 0 && r.BlockSE > 0 {
		r.RefReliability = rel
		r.BlockCorrected, r.CorrectedSE = r.BlockResponse/rel, r.BlockSE/rel
	}
}

// refReliability is the share of the variance of ln((a+b)/2) across
// windows that is the windows' true speed's, from two readings of it per
// window, a (the mean reference before the runs) and b (after): with
// ρ = corr(ln a, ln b) (Pearson) the reliability of one reading, that of
// their mean is 2ρ/(1+ρ) (Spearman–Brown). It assumes the two readings
// err independently; a reference taken after one run and the next one's
// taken right after it share the machine's state of that moment, which
// raises ρ, so the correction is, if anything, too small. It returns 0
// with fewer than minBlocks windows, no spread, or ρ ≤ 0. It panics
// unless a and b have the same length.
func refReliability(a, b []float64) float64 {
	if len(a) != len(b) {
		panic("calibrate: refReliability: one reading before and one after per window")
	}
	if len(a) < minBlocks {
		return 0
	}
	la, lb := make([]float64, len(a)), make([]float64, len(b))
	for i := range a {
		la[i], lb[i] = math.Log(a[i]), math.Log(b[i])
	}
	_, sa := stat.MeanStdDev(la, nil)
	_, sb := stat.MeanStdDev(lb, nil)
	if !(sa > 0 && sb > 0) {
		return 0
	}
	rho := stat.Correlation(la, lb, nil)
	if !(rho > 0) {
		return 0
	}
	return 2 * rho / (1 + rho)
}

// priceWindows fills each window's Sim (price's seconds for it), r's
// SimErrMedian and SimResponse (lnSlope of the windows' Sim on their
// references).
func priceWindows(r *QueryResponse, price func(w ResponseWindow) (float64, error)) error {
	if len(r.Windows) == 0 {
		return nil
	}
	errs := make([]float64, len(r.Windows))
	var xs, ys []float64
	for i := range r.Windows {
		w := &r.Windows[i]
		var err error
		if w.Sim, err = price(*w); err != nil {
			return err
		}
		errs[i] = w.Sim/w.Engine - 1
		xs, ys = append(xs, w.RefNs), append(ys, w.Sim)
	}
	r.SimErrMedian = stats.Median(errs)
	r.SimResponse, _ = lnSlope(xs, ys)
	return nil
}

// ReferenceResponse measures, per query, how much of the CPU reference's
// speed changes the engine's time follows, against the simulator's
// prices scaled as validate --rescale-cpu scales them (see above).
func ReferenceResponse(ctx context.Context, o ResponseOptions) (*ResponseReport, error) {
	logw := o.Log
	if logw == nil {
		logw = io.Discard
	}
	if o.Queries == "" {
		o.Queries = "q1,q6,q18"
	}
	if o.Policy == "" {
		o.Policy = "overlap"
	}
	if o.Duration == 0 {
		o.Duration = time.Minute
	}
	if o.Duration < 0 {
		return nil, fmt.Errorf("calibrate: validate-reference: --seconds %v: want a positive duration", o.Duration.Seconds())
	}
	if o.Block == 0 {
		o.Block = 10 * time.Second
	}
	if o.Block < 0 {
		return nil, fmt.Errorf("calibrate: validate-reference: --block %v: want a positive window", o.Block.Seconds())
	}
	if o.Warmup < 0 {
		return nil, fmt.Errorf("calibrate: validate-reference: --warmup %d: want 0 or more untimed runs", o.Warmup)
	}
	names, err := engine.ParseQueries(o.Queries, queries.Names())
	if err != nil {
		return nil, err
	}
	pol, err := scheduler.NewPolicy(o.Policy, o.Set)
	if err != nil {
		return nil, err
	}
	prof, err := sim.LoadProfileLog(o.Profile, logw)
	if err != nil {
		return nil, err
	}
	if prof.Node.GPUScansOnly {
		return nil, fmt.Errorf("calibrate: validate-reference: profile %s models the GPU backend; this measures the CPU engine", prof.Name)
	}
	if prof.Host.Reference <= 0 {
		return nil, fmt.Errorf("calibrate: validate-reference: profile %s has no host.reference (the CPU reference's time at calibration): recalibrate it with this version", prof.Name)
	}
	ds, tables, sf, err := openPlanStats(o.Data)
	if err != nil {
		return nil, err
	}
	if o.RescaleDisk {
		if _, _, err := diskRefFile(ds, &prof.NVMe); err != nil {
			return nil, err
		}
	}
	defer engine.TuneGC()()
	engine.FitHeapLimit(ds)
	if err := engine.VerifyOnce(ctx, ds, logw); err != nil {
		return nil, err
	}
	qo := engine.QueryOptions{Log: io.Discard, NoVerify: true, Policy: o.Policy, Set: o.Set}
	reader, err := engine.OpenSession(ctx, ds, qo)
	if err != nil {
		return nil, err
	}
	defer reader.Close()
	qo.Reader = reader
	rep := &ResponseReport{Profile: prof.Name, ProfileRefNs: float64(prof.Host.Reference)}
	for _, q := range names {
		for range o.Warmup {
			if _, err := runQuery(ctx, ds, q, qo); err != nil {
				return nil, err
			}
		}
		var times, r1, r2, at, diskSecs []float64
		var diskBytes []int64
		start := time.Now()
		next := start.Add(10 * time.Second)
		for time.Since(start) < o.Duration {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			began := time.Since(start).Seconds()
			before := cpuref.Ns()
			res, err := runQuery(ctx, ds, q, qo)
			if err != nil {
				return nil, err
			}
			after := cpuref.Ns()
			if o.RescaleDisk {
				b, d, err := diskReference(ctx, reader, ds, &prof.NVMe)
				if err != nil {
					return nil, err
				}
				diskBytes, diskSecs = append(diskBytes, b), append(diskSecs, d.Seconds())
			}
			times, r1, r2, at = append(times, res.Wall.Seconds()), append(r1, float64(before)), append(r2, float64(after)), append(at, began)
			if now := time.Now(); now.After(next) {
				fmt.Fprintf(logw, "validate-reference: %s: %d runs, %.0f of %.0f s\n", q, len(times), now.Sub(start).Seconds(), o.Duration.Seconds())
				next = now.Add(10 * time.Second)
			}
		}
		r := QueryResponse{Query: q, Policy: o.Policy, Set: o.Set}
		splitResponse(&r, times, r1, r2)
		blockResponse(&r, times, r1, r2, at, o.Block.Seconds())
		if o.RescaleDisk {
			for i, w := range windowsOf(at, o.Block.Seconds()) {
				var b, d float64
				for k := w[0]; k < w[1]; k++ {
					b, d = b+float64(diskBytes[k]), d+diskSecs[k]
				}
				r.Windows[i].DiskBps = b / d
			}
		}
		p, err := queries.Build(q, sf, tables)
		if err != nil {
			return nil, fmt.Errorf("calibrate: %w", err)
		}
		err = priceWindows(&r, func(w ResponseWindow) (float64, error) {
			var disk float64
			if w.DiskBps > 0 {
				disk = w.DiskBps / diskref.ModelBps(&prof.NVMe)
			}
			scaled := rescaledProfile(prof, w.RefNs/float64(prof.Host.Reference), disk, false)
			res, err := sim.Simulate(ctx, p, scaled, 1, pol, nil, 0, 0)
			if err != nil {
				return 0, err
			}
			return float64(res.MakespanNs) / 1e9, nil
		})
		if err != nil {
			return nil, err
		}
		rep.Queries = append(rep.Queries, r)
	}
	return rep, nil
}

// WriteText prints the report: per query the windows' references (and
// disk readings), the engine's and the simulator's responses and the
// simulator's median error over the windows, then the paired halves.
func (r *ResponseReport) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "CPU reference at calibration (profile %s): %.2f ms\n", r.Profile, r.ProfileRefNs/1e6)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "query\tpolicy\truns\twindows\tref ms\tdisk GB/s\tengine response\treliability\tcorrected\tsim response\tsim error\tpaired: fast\tslow\tref ratio\tengine ratio\tresponse\t")
	var unsplit []string
	disk := false
	for _, q := range r.Queries {
		refs, disks := "-", "-"
		if len(q.Windows) > 0 {
			lo, hi := math.Inf(1), 0.0
			dlo, dhi := math.Inf(1), 0.0
			for _, w := range q.Windows {
				lo, hi = min(lo, w.RefNs), max(hi, w.RefNs)
				dlo, dhi = min(dlo, w.DiskBps), max(dhi, w.DiskBps)
			}
			refs = fmt.Sprintf("%.2f–%.2f", lo/1e6, hi/1e6)
			if dlo > 0 {
				disks, disk = fmt.Sprintf("%.2f–%.2f", dlo/1e9, dhi/1e9), true
			}
		}
		resp := "-"
		if len(q.Windows) >= minBlocks && q.BlockSE > 0 {
			resp = fmt.Sprintf("%.2f ± %.2f", q.BlockResponse, q.BlockSE)
		}
		rel, corrected := "-", "-"
		if q.RefReliability > 0 {
			rel, corrected = fmt.Sprintf("%.2f", q.RefReliability), fmt.Sprintf("%.2f ± %.2f", q.BlockCorrected, q.CorrectedSE)
		}
		paired := "-\t-\t-"
		if q.Split {
			paired = fmt.Sprintf("%.3f\t%.3f\t%.2f", q.RefRatio, q.EngineRatio, q.EngineResponse)
		} else {
			unsplit = append(unsplit, q.Query)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%.2f\t%+.1f%%\t%d\t%d\t%s\t\n",
			q.Query, q.Policy, q.Runs, len(q.Windows), refs, disks, resp, rel, corrected, q.SimResponse, 100*q.SimErrMedian, q.Fast, q.Slow, paired)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "response: the slope of ln(time) on ln(CPU reference) over windows of consecutive runs, each window's median time against its mean reference (least squares, the engine's ± its standard error; 1: the time follows the reference, 0: it does not move);")
	fmt.Fprintln(w, "reliability: the share of the windows' spread of references that is the machine's, not the reference's noise (Spearman–Brown from the correlation of the windows' references before and after the runs); corrected: the engine's response over it, the one to compare with the simulator's, which the reference's noise does not flatten;")
	if disk {
		fmt.Fprintln(w, "sim: the profile's CPU prices scaled by a window's CPU reference over the profile's and its disk bandwidth by the window's disk reference over the profile's model (validate --rescale-cpu --rescale-disk); error: its median over the windows;")
	} else {
		fmt.Fprintln(w, "sim: the profile's CPU prices scaled by a window's reference over the profile's, as validate --rescale-cpu scales them (its disk as profiled: --rescale-disk reads the disk reference too); error: its median over the windows;")
	}
	fmt.Fprintln(w, "paired: the runs both references (before and after) put below (fast) / at or above (slow) the median of the runs' references, and ln(engine ratio)/ln(ref ratio)")
	fmt.Fprintln(w, "  (a machine that changes speed within a run blurs the halves, and this response falls below the windows')")
	if len(unsplit) > 0 {
		_, err := fmt.Fprintf(w, "not split (under %d runs in a half, or the halves' references within %.0f%%): %s\n",
			minResponseRuns, 100*(minResponseRatio-1), strings.Join(unsplit, ", "))
		return err
	}
	return nil
}

// runQuery builds TPC-H query name over ds and runs it on the engine.
func runQuery(ctx context.Context, ds *dataset.Dataset, name string, qo engine.QueryOptions) (*engine.QueryResult, error) {
	p, err := engine.BuildQuery(ds, queries.Catalog(), name)
	if err != nil {
		return nil, err
	}
	return engine.Query(ctx, ds, p, qo)
}
