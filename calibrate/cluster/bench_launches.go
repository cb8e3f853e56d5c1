package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gostachio/internal/stats"
)

// One launch of bench-sim measures the simulator against the cluster as
// the machine happens to be for those minutes: on the 2-core dev VM the
// engine's medians of one query moved by up to 30% between launches
// minutes apart, and the co-location measured before the runs by 0.49 to
// 0.65, so whether every query lands within 10% is mostly a property of
// the launch (the 2-core development VM, 2026-11). BenchSimLaunches repeats the whole
// measurement and pools the errors.

// BenchSimLaunches runs BenchSim launches times, launch k (from 1) with
// seed o.Seed+k−1 and its derived profile written to o.ProfileOut with
// "-k" before the extension, each with its own co-location and network
// measurements (unless o gives them), and returns every launch's rows
// (Launch set) followed by a pooled summary printed to w. launches < 1 is
// an error; launches == 1 is BenchSim.
func BenchSimLaunches(ctx context.Context, o SimBenchOptions, launches int, within float64, w, log io.Writer) ([]SimBenchRow, LaunchSummary, error) {
	if launches < 1 {
		return nil, LaunchSummary{}, fmt.Errorf("cluster: bench-sim: --launches %d: want 1 or more", launches)
	}
	if !(within > 0) {
		return nil, LaunchSummary{}, fmt.Errorf("cluster: bench-sim: --within %g: want a positive bound on |error| (0.10: 10%%)", within)
	}
	if launches == 1 {
		rows, err := BenchSim(ctx, o, w, log)
		return rows, SummarizeLaunches(rows, within), err
	}
	var all []SimBenchRow
	for k := 1; k <= launches; k++ {
		lo := o
		lo.Seed = o.Seed + uint64(k-1)
		ext := filepath.Ext(o.ProfileOut)
		lo.ProfileOut = fmt.Sprintf("%s-%d%s", strings.TrimSuffix(o.ProfileOut, ext), k, ext)
		fmt.Fprintf(w, "launch %d of %d (seed %d)\n", k, launches, lo.Seed)
		fmt.Fprintf(log, "bench-sim: launch %d of %d\n", k, launches)
		rows, err := BenchSim(ctx, lo, w, log)
		if err != nil {
			return all, SummarizeLaunches(all, within), fmt.Errorf("cluster: bench-sim: launch %d of %d: %w", k, launches, err)
		}
		for i := range rows {
			rows[i].Launch = k
		}
		all = append(all, rows...)
	}
	sum := SummarizeLaunches(all, within)
	printLaunchSummary(w, sum)
	return all, sum, nil
}

// LaunchSummary pools the rows of several launches.
type LaunchSummary struct {
	Launches int `json:"launches"`
	Cases    int `json:"cases"`
	// MedianAbs is the median |error| over every case of every launch;
	// Within counts the cases with |error| ≤ WithinBound, and AllWithin
	// the launches whose every case is.
	MedianAbs   float64 `json:"median_abs_error"`
	WithinBound float64 `json:"within_bound"`
	Within      int     `json:"cases_within"`
	AllWithin   int     `json:"launches_all_within"`
	// PerQuery is each query's median signed error over the launches, in
	// the order the queries first appear (Queries).
	Queries  []string  `json:"queries"`
	PerQuery []float64 `json:"median_error_per_query"`
	// Spread is the same count for the best predictor that does not see
	// the launch: each case's engine median predicted by the median of
	// the same query's engine medians in the other launches (leave one
	// out). Its errors are the engine's own launch-to-launch spread: what
	// a prediction blind to a launch's own conditions is up against on
	// this machine. Computed from 3 launches on (Spread.Cases 0 before).
	Spread SpreadSummary `json:"engine_spread"`
	// FullLink is the same summary with every case priced at the link's
	// full payload rate (SimBenchRow.SimFullLink) where the fabric's
	// efficiency lowered it: one set of engine runs, both models. Nil
	// unless some row carries such a price.
	FullLink *LaunchSummary `json:"full_link,omitempty"`
	// OwnColocation is the same summary with every case priced at its
	// launch's own co-location (SimBenchRow.SimOwnColocation) where
	// --colocation-from pooled it; nil unless some row carries one.
	OwnColocation *LaunchSummary `json:"own_colocation,omitempty"`
	// Unscaled, CPUOnly and DiskOnly are the same summary with every case
	// priced without the launch's rescales (SimBenchRow.SimUnscaled), with
	// its CPU rescale alone (SimCPUOnly) and with its disk rescale alone
	// (SimDiskOnly); nil unless some row carries such a price.
	Unscaled *LaunchSummary `json:"unscaled,omitempty"`
	CPUOnly  *LaunchSummary `json:"cpu_rescaled_only,omitempty"`
	DiskOnly *LaunchSummary `json:"disk_rescaled_only,omitempty"`
}

// SpreadSummary is LaunchSummary's counts for the leave-one-out
// predictor: e = (median over the other launches − m) / m for each case's
// engine median m.
type SpreadSummary struct {
	Cases     int     `json:"cases"`
	Within    int     `json:"cases_within"`
	AllWithin int     `json:"launches_all_within"`
	MedianAbs float64 `json:"median_abs_error"`
}

// SummarizeLaunches pools rows (of one launch, Launch 0, or several)
// against the bound within (0.10: 10%, bench-sim's --within default).
func SummarizeLaunches(rows []SimBenchRow, within float64) LaunchSummary {
	s := LaunchSummary{Cases: len(rows), WithinBound: within}
	if len(rows) == 0 {
		return s
	}
	var abs []float64
	byQuery := map[string][]float64{}
	launchOK := map[int]bool{}
	for _, r := range rows {
		a := max(r.Error, -r.Error)
		abs = append(abs, a)
		if _, ok := byQuery[r.Query]; !ok {
			s.Queries = append(s.Queries, r.Query)
		}
		byQuery[r.Query] = append(byQuery[r.Query], r.Error)
		ok, seen := launchOK[r.Launch]
		launchOK[r.Launch] = (ok || !seen) && a <= within
		if a <= within {
			s.Within++
		}
	}
	s.Launches = len(launchOK)
	for _, ok := range launchOK {
		if ok {
			s.AllWithin++
		}
	}
	s.MedianAbs = stats.Median(abs)
	for _, q := range s.Queries {
		s.PerQuery = append(s.PerQuery, stats.Median(byQuery[q]))
	}
	if s.Launches >= 3 {
		s.Spread = launchSpread(rows, within)
	}
	s.FullLink = repricedSummary(rows, within, func(r SimBenchRow) float64 { return r.SimFullLink })
	s.OwnColocation = repricedSummary(rows, within, func(r SimBenchRow) float64 { return r.SimOwnColocation })
	s.Unscaled = repricedSummary(rows, within, func(r SimBenchRow) float64 { return r.SimUnscaled })
	s.CPUOnly = repricedSummary(rows, within, func(r SimBenchRow) float64 { return r.SimCPUOnly })
	s.DiskOnly = repricedSummary(rows, within, func(r SimBenchRow) float64 { return r.SimDiskOnly })
	return s
}

// repricedSummary is SummarizeLaunches of rows with each case priced at
// sim's time instead where it has one (> 0); nil when no row has one.
func repricedSummary(rows []SimBenchRow, within float64, sim func(SimBenchRow) float64) *LaunchSummary {
	if !slices.ContainsFunc(rows, func(r SimBenchRow) bool { return sim(r) > 0 }) {
		return nil
	}
	again := slices.Clone(rows)
	for i := range again {
		if r := &again[i]; sim(*r) > 0 {
			*r = simBenchRow(r.Query, r.Engine, sim(*r), r.SentMiB)
			r.Launch = rows[i].Launch
		}
	}
	s := SummarizeLaunches(again, within)
	s.Spread = SpreadSummary{}
	return &s
}

// launchSpread is SpreadSummary over rows: a case whose query ran in
// fewer than two other launches (or has no timed run) is skipped, and a
// launch counts as all within only when every one of its cases was
// predicted and within.
func launchSpread(rows []SimBenchRow, within float64) SpreadSummary {
	var sp SpreadSummary
	medians := make([]float64, len(rows))
	for i, r := range rows {
		if len(r.Engine) > 0 {
			medians[i] = stats.Median(r.Engine)
		}
	}
	var abs []float64
	launchOK := map[int]bool{}
	for i, r := range rows {
		var others []float64
		for j, o := range rows {
			if o.Launch != r.Launch && o.Query == r.Query && medians[j] > 0 {
				others = append(others, medians[j])
			}
		}
		ok, seen := launchOK[r.Launch]
		if len(others) < 2 || !(medians[i] > 0) {
			launchOK[r.Launch] = false
			continue
		}
		e := (stats.Median(others) - medians[i]) / medians[i]
		a := max(e, -e)
		abs = append(abs, a)
		sp.Cases++
		if a <= within {
			sp.Within++
		}
		launchOK[r.Launch] = (ok || !seen) && a <= within
	}
	for _, ok := range launchOK {
		if ok {
			sp.AllWithin++
		}
	}
	if len(abs) > 0 {
		sp.MedianAbs = stats.Median(abs)
	}
	return sp
}

// LoadLaunches reads the rows of earlier bench-sim runs (their --json
// output, one file each) for pooling: every launch of every file gets a
// launch number of its own, in file order (a file's single launch, Launch
// 0, counts as one). A file that is unreadable, not such a list, or holds
// a row without a query or timed runs is an error naming it; a file with
// no rows is one too, since pooling it would count nothing. Rows of
// different configurations (link, nodes, devices; rows written before
// those were recorded carry none and pool with any) are an error naming
// both files: their errors do not estimate one thing.
func LoadLaunches(paths []string) ([]SimBenchRow, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("cluster: pool: no files of bench-sim --json rows")
	}
	var all []SimBenchRow
	next := 1
	var config, configFile string
	for _, p := range paths {
		rows, err := readSimBenchRows(p)
		if err != nil {
			return nil, fmt.Errorf("cluster: pool: %w", err)
		}
		if len(rows) == 0 {
			return nil, fmt.Errorf("cluster: pool: %s: no rows", p)
		}
		renumber := map[int]int{}
		for i := range rows {
			r := &rows[i]
			if r.Query == "" || len(r.Engine) == 0 {
				return nil, fmt.Errorf("cluster: pool: %s: row %d has no query or no timed runs", p, i+1)
			}
			if r.Link != "" {
				c := fmt.Sprintf("--link %s, %d nodes x %d devices", r.Link, r.Nodes, r.Devices)
				if config == "" {
					config, configFile = c, p
				} else if c != config {
					return nil, fmt.Errorf("cluster: pool: %s (%s) and %s (%s) ran different clusters; pool each on its own", configFile, config, p, c)
				}
			}
			k, ok := renumber[r.Launch]
			if !ok {
				k = next
				next++
				renumber[r.Launch] = k
			}
			r.Launch = k
		}
		all = append(all, rows...)
	}
	return all, nil
}

// readSimBenchRows reads one `gostachio --json cluster bench-sim` output.
func readSimBenchRows(path string) ([]SimBenchRow, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rows []SimBenchRow
	if err := json.Unmarshal(raw, &rows); err != nil {
		return nil, fmt.Errorf("%s: not bench-sim --json rows: %v", path, err)
	}
	return rows, nil
}

// PoolLaunches prints the pooled summary of the launches in paths
// (LoadLaunches) against the bound within.
func PoolLaunches(paths []string, within float64, w io.Writer) (LaunchSummary, error) {
	if !(within > 0) {
		return LaunchSummary{}, fmt.Errorf("cluster: pool: --within %g: want a positive bound on |error| (0.10: 10%%)", within)
	}
	rows, err := LoadLaunches(paths)
	if err != nil {
		return LaunchSummary{}, err
	}
	s := SummarizeLaunches(rows, within)
	printLaunchSummary(w, s)
	return s, nil
}

// printLaunchSummary prints s after the launches' tables.
func printLaunchSummary(w io.Writer, s LaunchSummary) {
	var parts []string
	for i, q := range s.Queries {
		parts = append(parts, fmt.Sprintf("%s %+.1f%%", q, 100*s.PerQuery[i]))
	}
	fmt.Fprintf(w, "over %d launches: median |error| %.1f%%, %d of %d cases within %.0f%%, every query within it in %d of %d launches; median error per query: %s\n",
		s.Launches, 100*s.MedianAbs, s.Within, s.Cases, 100*s.WithinBound, s.AllWithin, s.Launches, strings.Join(parts, ", "))
	for _, alt := range []struct {
		what string
		s    *LaunchSummary
	}{
		{"at the link's full payload rate instead (no fabric efficiency)", s.FullLink},
		{"at each launch's own co-location instead (not pooled)", s.OwnColocation},
		{"without the launches' rescales", s.Unscaled},
		{"with the CPU rescale alone", s.CPUOnly},
		{"with the disk rescale alone", s.DiskOnly},
	} {
		f := alt.s
		if f == nil {
			continue
		}
		parts = parts[:0]
		for i, q := range f.Queries {
			parts = append(parts, fmt.Sprintf("%s %+.1f%%", q, 100*f.PerQuery[i]))
		}
		fmt.Fprintf(w, "priced %s: median |error| %.1f%%, %d of %d cases within %.0f%%, every query within it in %d of %d launches; median error per query: %s\n",
			alt.what, 100*f.MedianAbs, f.Within, f.Cases, 100*f.WithinBound, f.AllWithin, f.Launches, strings.Join(parts, ", "))
	}
	if sp := s.Spread; sp.Cases > 0 {
		fmt.Fprintf(w, "the engine's own launch-to-launch spread: each case's engine median predicted by its query's median over the other launches is within %.0f%% in %d of %d cases, every query in %d of %d launches (median |error| %.1f%%)\n",
			100*s.WithinBound, sp.Within, sp.Cases, sp.AllWithin, s.Launches, 100*sp.MedianAbs)
	}
}
