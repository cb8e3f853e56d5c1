package cluster

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"gostachio/internal/stats"
)

// One launch of bench-sim measures the simulator against the cluster as
// the machine happens to be for those minutes: on the 2-core dev VM the
// engine's medians of one query moved by up to 30% between launches
// minutes apart, and the co-location measured before the runs by 0.49 to
// 0.65, so whether every query lands within 10% is mostly a property of
// the launch (README, issue 9). BenchSimLaunches repeats the whole
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
	Launches, Cases int
	// MedianAbs is the median |error| over every case of every launch;
	// Within counts the cases with |error| ≤ WithinBound, and AllWithin
	// the launches whose every case is.
	MedianAbs   float64
	WithinBound float64
	Within      int
	AllWithin   int
	// PerQuery is each query's median signed error over the launches, in
	// the order the queries first appear (Queries).
	Queries  []string
	PerQuery []float64
}

// SummarizeLaunches pools rows (of one launch, Launch 0, or several)
// against the bound within (0.10: the 10%).
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
	return s
}

// printLaunchSummary prints s after the launches' tables.
func printLaunchSummary(w io.Writer, s LaunchSummary) {
	var parts []string
	for i, q := range s.Queries {
		parts = append(parts, fmt.Sprintf("%s %+.1f%%", q, 100*s.PerQuery[i]))
	}
	fmt.Fprintf(w, "over %d launches: median |error| %.1f%%, %d of %d cases within %.0f%%, every query within it in %d of %d launches; median error per query: %s\n",
		s.Launches, 100*s.MedianAbs, s.Within, s.Cases, 100*s.WithinBound, s.AllWithin, s.Launches, strings.Join(parts, ", "))
}
