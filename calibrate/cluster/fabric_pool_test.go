package cluster

import (
	"bytes"
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	ecluster "gostachio/engine/cluster"
)

// LoadFabricRounds: each launch's burst rounds once (its rows repeat
// them), pooled over files of the same link and burst; files of another
// link or shape skipped and counted; With adds a launch and takes the
// median of all; clear errors for bad rounds, files that are not rows and
// a list that matches nothing.
func TestLoadFabricRounds(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, rows []SimBenchRow) string { return writeJSONFile(t, dir, name, rows) }
	burst := func(link string, secs ...float64) *FabricBenchResult {
		return &FabricBenchResult{Link: link, Burst: BurstResult{Seconds: secs, Nodes: 4, Frames: 7, FrameBytes: 384 << 10, Streams: 4, PortBytes: 3 * 7 * 384 << 10}}
	}
	row := func(q string, f *FabricBenchResult) SimBenchRow {
		return SimBenchRow{Query: q, Engine: []float64{1}, Nodes: 4, Devices: 1, Link: "100Mbit", Fabric: f}
	}
	f1, f2 := burst("100Mbit", 0.8, 0.9, 1.0), burst("100Mbit", 0.7, 0.75)
	a := write("a.json", []SimBenchRow{row("q3", f1), row("q5", f1), row("q3", f2), row("q5", f2)})
	other := write("other.json", []SimBenchRow{row("q3", burst("100Mbit,queue=2.384MiB", 0.5))})
	staggered := burst("100Mbit", 0.4)
	staggered.Burst.Starts = [][]int64{{0, 1}, {1, 0}}
	stag := write("stag.json", []SimBenchRow{row("q3", staggered)})
	link, err := ecluster.ParseLink("100Mbit")
	if err != nil {
		t.Fatal(err)
	}
	copyA := write("copy.json", []SimBenchRow{row("q9", f2)}) // a launch saved twice
	pool, err := LoadFabricRounds([]string{a, other, stag, copyA}, link, 4, 7, 384<<10, 4)
	if err != nil {
		t.Fatal(err)
	}
	if len(pool.Seconds) != 5 || pool.Launches != 2 || pool.Skipped != 2 {
		t.Fatalf("pooled %v from %d launches, %d skipped; want 5 rounds of 2, 2 skipped", pool.Seconds, pool.Launches, pool.Skipped)
	}
	// 0.7 0.75 0.8 0.9 1.0 and this launch's 1.1 1.2: median 0.9.
	own := BurstResult{Seconds: []float64{1.1, 1.2}, Median: 1.15, PortBytes: 3 * 7 * 384 << 10}
	got := pool.With(own)
	if math.Abs(got.Median-0.9) > 1e-12 || len(got.Seconds) != 7 || len(own.Seconds) != 2 || math.Abs(got.Rate*got.Median-float64(got.PortBytes)) > 1e-6 {
		t.Errorf("with 1.1, 1.2: median %v of %d rounds, rate %v (own now %d rounds); want 0.9 of 7, own unchanged", got.Median, len(got.Seconds), got.Rate, len(own.Seconds))
	}
	for _, tc := range []struct {
		paths []string
		want  string
	}{
		{[]string{other}, "none of the 1 files has a burst of 7 x 384 KiB per pair on 4 workers over --link 100Mbit"},
		{[]string{write("neg.json", []SimBenchRow{row("q3", burst("100Mbit", 0.5, 0))})}, "neg.json row 1: burst round 0 is not a positive time"},
		{[]string{filepath.Join(dir, "missing.json")}, "missing.json"},
	} {
		if _, err := LoadFabricRounds(tc.paths, link, 4, 7, 384<<10, 4); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one naming %q", tc.paths, err, tc.want)
		}
	}
	// Another shape of burst matches nothing either.
	if _, err := LoadFabricRounds([]string{a}, link, 4, 14, 384<<10, 4); err == nil {
		t.Errorf("14 frames matched bursts of 7")
	}
}

// bench-sim refuses --fabric-from beside a given share before it measures
// anything.
func TestBenchSimFabricFromChecksFirst(t *testing.T) {
	for _, o := range []SimBenchOptions{{FabricEfficiency: 0.8}} {
		var out, log bytes.Buffer
		o.Nodes, o.Link, o.Data, o.Queries = 4, ecluster.Link{Rate: 1e9}, testData(t), []string{"q3"}
		o.Profile, o.ProfileOut, o.FabricFrom = "../../sim/profiles/devbox-xeon.yaml", filepath.Join(t.TempDir(), "p.yaml"), []string{"a.json"}
		_, err := BenchSim(context.Background(), o, &out, &log)
		if err == nil || !strings.Contains(err.Error(), "--fabric-from pools measured bursts") {
			t.Errorf("efficiency %v: err %v, want --fabric-from refused", o.FabricEfficiency, err)
		}
		if out.Len() > 0 || strings.Contains(log.String(), "measuring") {
			t.Errorf("measured before refusing:\n%s%s", out.String(), log.String())
		}
	}
}
