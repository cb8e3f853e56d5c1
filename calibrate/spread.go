package calibrate

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"

	"gostachio/experiments"
	"gostachio/internal/stats"
)

// How far the engine is from itself. A validation compares the simulator
// with engine runs made in one stretch of minutes; on a shared VM the
// same engine code measured hours apart moves by more than the issue's
// targets, and no model priced once can follow that. EngineSpread reads
// the engine rows of several validations (their --out folders) and
// predicts each validation's case medians by the other validations'
// medians: the error a perfect model of the other runs would have. It is
// the floor against which a validation's error is to be read.

// SpreadOptions configure EngineSpread.
type SpreadOptions struct {
	// Dirs are validate --out folders (or results.csv files). A folder
	// holding several validations (validate appends) gives one run per
	// validation, told apart by their start times.
	Dirs []string
	// MedianTarget and MaxTarget are the bounds each run's prediction is
	// checked against (by default 0.05 and 0.15).
	MedianTarget, MaxTarget float64
}

// RunSpread is one validation predicted by the others.
type RunSpread struct {
	Run     string `json:"run"`
	Started string `json:"started"`
	Cases   int    `json:"cases"`
	// MedianAbs, P90Abs and MaxAbs summarize |m̂ − m| / m over the cases,
	// m the run's median seconds of a case and m̂ the median of the other
	// runs' medians of it; MaxCase names the case of MaxAbs.
	MedianAbs float64 `json:"median_abs_error"`
	P90Abs    float64 `json:"p90_abs_error"`
	MaxAbs    float64 `json:"max_abs_error"`
	MaxCase   string  `json:"max_case"`
	// Bias is the mean of (m̂ − m) / m.
	Bias float64 `json:"bias"`
	// SameRanking counts the queries (of Queries with two or more cases)
	// whose cases the other runs' medians order exactly as this run's do
	// (Kendall's τ = 1): validate's ranking target, met by the engine
	// against itself.
	SameRanking int `json:"queries_same_ranking"`
	Queries     int `json:"queries"`
}

// SpreadReport is EngineSpread's result.
type SpreadReport struct {
	Runs []RunSpread `json:"runs"`
	// Cases are the cases every run has (the only ones compared).
	Cases int `json:"common_cases"`
	// Pairs counts the ordered pairs of runs (one predicting the other
	// alone); PairMedian and PairMax are the least, median and largest of
	// their median and max |error|; PairsMedianMet and PairsMaxMet how
	// many pairs meet MedianTarget and MaxTarget.
	// PairSameRanking is the least, median and largest count of queries
	// two runs rank identically (over unordered pairs).
	PairSameRanking [3]int     `json:"pair_queries_same_ranking_min_median_max"`
	Pairs           int        `json:"pairs"`
	PairMedian      [3]float64 `json:"pair_median_abs_error_min_median_max"`
	PairMax         [3]float64 `json:"pair_max_abs_error_min_median_max"`
	PairsMedianMet  int        `json:"pairs_median_met"`
	PairsMaxMet     int        `json:"pairs_max_met"`
	MedianTarget    float64    `json:"median_target"`
	MaxTarget       float64    `json:"max_target"`
}

// spreadRun is one validation's engine medians by case.
type spreadRun struct {
	name, started string
	medians       map[string]float64
}

// EngineSpread reads the validations in o.Dirs and predicts each one's
// engine medians by the others' (see SpreadOptions). It needs at least
// three runs (so that the others have a median), engine rows in every
// folder and cases common to all; targets must be positive.
func EngineSpread(o SpreadOptions) (*SpreadReport, error) {
	if !(o.MedianTarget > 0) || !(o.MaxTarget > 0) {
		return nil, fmt.Errorf("calibrate: spread: targets %g and %g: want positive bounds (0.05, 0.15)", o.MedianTarget, o.MaxTarget)
	}
	var runs []spreadRun
	for _, d := range o.Dirs {
		rs, err := readSpreadRuns(d)
		if err != nil {
			return nil, err
		}
		runs = append(runs, rs...)
	}
	if len(runs) < 3 {
		return nil, fmt.Errorf("calibrate: spread: %d validations in %s: need 3 or more (each predicted by the median of the others)", len(runs), strings.Join(o.Dirs, ", "))
	}
	var common []string
	for k := range runs[0].medians {
		in := true
		for _, r := range runs[1:] {
			if _, ok := r.medians[k]; !ok {
				in = false
				break
			}
		}
		if in {
			common = append(common, k)
		}
	}
	if len(common) == 0 {
		return nil, fmt.Errorf("calibrate: spread: the validations share no case (query, policy, knob set, nodes, scale factor)")
	}
	sort.Strings(common)
	rep := &SpreadReport{Cases: len(common), MedianTarget: o.MedianTarget, MaxTarget: o.MaxTarget}
	for i, r := range runs {
		errs := make([]float64, len(common))
		own := make([]float64, len(common))
		pred := make([]float64, len(common))
		for c, k := range common {
			var others []float64
			for j, q := range runs {
				if j != i {
					others = append(others, q.medians[k])
				}
			}
			own[c], pred[c] = r.medians[k], stats.Median(others)
			errs[c] = (pred[c] - own[c]) / own[c]
		}
		rs := summarizeSpread(errs, common)
		rs.Run, rs.Started = r.name, r.started
		rs.SameRanking, rs.Queries = sameRanking(common, own, pred)
		rep.Runs = append(rep.Runs, rs)
	}
	var meds, maxs []float64
	for i, a := range runs {
		for j, b := range runs {
			if i == j {
				continue
			}
			errs := make([]float64, len(common))
			for c, k := range common {
				errs[c] = (a.medians[k] - b.medians[k]) / b.medians[k]
			}
			s := summarizeSpread(errs, common)
			meds, maxs = append(meds, s.MedianAbs), append(maxs, s.MaxAbs)
			if s.MedianAbs <= o.MedianTarget {
				rep.PairsMedianMet++
			}
			if s.MaxAbs <= o.MaxTarget {
				rep.PairsMaxMet++
			}
		}
	}
	var same []float64
	for i := range runs {
		for j := i + 1; j < len(runs); j++ {
			a, b := make([]float64, len(common)), make([]float64, len(common))
			for c, k := range common {
				a[c], b[c] = runs[i].medians[k], runs[j].medians[k]
			}
			n, _ := sameRanking(common, a, b)
			same = append(same, float64(n))
		}
	}
	rep.PairSameRanking = [3]int{int(slices.Min(same)), int(stats.Median(same)), int(slices.Max(same))}
	rep.Pairs = len(meds)
	rep.PairMedian = [3]float64{slices.Min(meds), stats.Median(meds), slices.Max(meds)}
	rep.PairMax = [3]float64{slices.Min(maxs), stats.Median(maxs), slices.Max(maxs)}
	return rep, nil
}

// summarizeSpread is RunSpread's figures over signed errors errs of the
// cases named by keys.
func summarizeSpread(errs []float64, keys []string) RunSpread {
	abs := make([]float64, len(errs))
	var s RunSpread
	var sum float64
	for i, e := range errs {
		abs[i] = math.Abs(e)
		sum += e
		if abs[i] > s.MaxAbs {
			s.MaxAbs, s.MaxCase = abs[i], keys[i]
		}
	}
	sorted := slices.Sorted(slices.Values(abs))
	s.Cases = len(errs)
	s.MedianAbs = stats.Median(abs)
	s.P90Abs = stats.Quantile(sorted, 0.9)
	s.Bias = sum / float64(len(errs))
	return s
}

// sameRanking counts the queries whose cases a and b order alike
// (KendallTau 1), of the queries with two or more cases among keys (the
// query is a key's first field).
func sameRanking(keys []string, a, b []float64) (same, queries int) {
	byQuery := map[string][]int{}
	var names []string
	for i, k := range keys {
		q, _, _ := strings.Cut(k, " ")
		if _, ok := byQuery[q]; !ok {
			names = append(names, q)
		}
		byQuery[q] = append(byQuery[q], i)
	}
	for _, q := range names {
		idx := byQuery[q]
		if len(idx) < 2 {
			continue
		}
		qa, qb := make([]float64, len(idx)), make([]float64, len(idx))
		for j, i := range idx {
			qa[j], qb[j] = a[i], b[i]
		}
		queries++
		if KendallTau(qa, qb) == 1 {
			same++
		}
	}
	return same, queries
}

// savedRun is one validation's engine rounds from a validate --out
// folder: its start time, its name (the folder, and @start when the folder
// holds several) and its cases in the order of their first rows.
type savedRun struct {
	name, started string
	cases         []savedCase
}

// savedCase is one case's engine rounds (seconds).
type savedCase struct {
	query, policy, set string
	nodes              int
	sf                 float64
	rounds             []float64
}

// key names the case as validate-spread prints it.
func (c *savedCase) key() string {
	return fmt.Sprintf("%s %s %s nodes=%d sf=%g", c.query, c.policy, c.set, c.nodes, c.sf)
}

// readSavedRuns reads the engine rows of one folder (results.csv), one
// run per validation start time, in the order of the start times; what
// names the caller in errors.
func readSavedRuns(dir, what string) ([]savedRun, error) {
	rows, err := experiments.ReadResults(dir)
	if err != nil {
		return nil, fmt.Errorf("calibrate: %s: %w", what, err)
	}
	runs := map[string]*savedRun{}
	index := map[string]map[string]int{}
	var starts []string
	for _, r := range rows {
		if r.Backend != "engine" {
			continue
		}
		if !(r.Seconds > 0) {
			return nil, fmt.Errorf("calibrate: %s: %s: engine row %s has %g seconds", what, dir, r.Key, r.Seconds)
		}
		run, ok := runs[r.Started]
		if !ok {
			run = &savedRun{name: dir, started: r.Started}
			runs[r.Started], index[r.Started] = run, map[string]int{}
			starts = append(starts, r.Started)
		}
		c := savedCase{query: r.Query, policy: r.Policy, set: r.Set, nodes: r.Nodes, sf: r.SF}
		i, ok := index[r.Started][c.key()]
		if !ok {
			i = len(run.cases)
			index[r.Started][c.key()] = i
			run.cases = append(run.cases, c)
		}
		run.cases[i].rounds = append(run.cases[i].rounds, r.Seconds)
	}
	if len(starts) == 0 {
		return nil, fmt.Errorf("calibrate: %s: %s: no engine rows (a validate --out folder?)", what, dir)
	}
	sort.Strings(starts)
	out := make([]savedRun, 0, len(starts))
	for _, st := range starts {
		if len(starts) > 1 {
			runs[st].name = dir + "@" + st
		}
		out = append(out, *runs[st])
	}
	return out, nil
}

// readSpreadRuns reads the engine rows of one folder, one run per
// validation, each case's median seconds.
func readSpreadRuns(dir string) ([]spreadRun, error) {
	runs, err := readSavedRuns(dir, "spread")
	if err != nil {
		return nil, err
	}
	out := make([]spreadRun, 0, len(runs))
	for _, run := range runs {
		m := map[string]float64{}
		for _, c := range run.cases {
			m[c.key()] = stats.Median(c.rounds)
		}
		out = append(out, spreadRun{name: run.name, started: run.started, medians: m})
	}
	return out, nil
}

// WriteText prints one line per run and the pairs' summary.
func (r *SpreadReport) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%d validations, %d cases in common; each run's engine medians predicted by the median of the other runs':\n", len(r.Runs), r.Cases)
	fmt.Fprintf(&b, "%-40s %-22s %8s %8s %8s %8s %8s  %s\n", "run", "started", "median", "P90", "max", "bias", "τ = 1", "max case")
	met := 0
	for _, s := range r.Runs {
		fmt.Fprintf(&b, "%-40s %-22s %7.1f%% %7.1f%% %7.1f%% %+7.1f%% %8s  %s\n", s.Run, s.Started, 100*s.MedianAbs, 100*s.P90Abs, 100*s.MaxAbs, 100*s.Bias, fmt.Sprintf("%d/%d", s.SameRanking, s.Queries), s.MaxCase)
		if s.MedianAbs <= r.MedianTarget && s.MaxAbs <= r.MaxTarget {
			met++
		}
	}
	fmt.Fprintf(&b, "targets (median <= %.0f%%, max <= %.0f%%) met by the other runs' medians in %d of %d runs\n", 100*r.MedianTarget, 100*r.MaxTarget, met, len(r.Runs))
	fmt.Fprintf(&b, "one run predicting another (%d ordered pairs): median |error| %.1f%% / %.1f%% / %.1f%% (least / median / largest), max |error| %.1f%% / %.1f%% / %.1f%%; median target met by %d pairs, max target by %d\n",
		r.Pairs, 100*r.PairMedian[0], 100*r.PairMedian[1], 100*r.PairMedian[2], 100*r.PairMax[0], 100*r.PairMax[1], 100*r.PairMax[2], r.PairsMedianMet, r.PairsMaxMet)
	fmt.Fprintf(&b, "queries whose cases two runs order alike (τ = 1): %d / %d / %d (least / median / largest over pairs)\n", r.PairSameRanking[0], r.PairSameRanking[1], r.PairSameRanking[2])
	_, err := io.WriteString(w, b.String())
	return err
}
