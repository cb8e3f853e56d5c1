package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"gostachio/costmodel"
	ecluster "gostachio/engine/cluster"
	"gostachio/internal/stats"
	"gostachio/sim"
)

// burstAt is the simulated burst of b's shape on p with its NIC at share
// e of its bandwidth, in seconds.
func burstAt(t *testing.T, p sim.Profile, e float64, b BurstResult) float64 {
	t.Helper()
	p.NIC.Bandwidth *= costmodel.Rate(e)
	ns, err := sim.BurstMakespan(context.Background(), &p, b.Nodes, b.Frames, ecluster.BenchFrameBytes(b.FrameBytes), b.Starts)
	if err != nil {
		t.Fatal(err)
	}
	return float64(ns) / 1e9
}

// TestFitFabricEfficiency: a burst measured as long as the simulator
// takes at half the NIC bandwidth fits 0.5; one faster than the simulator
// at the full bandwidth fits 1; a burst the simulated cores hold back
// fits 1 and says so, however slow the measurement.
func TestFitFabricEfficiency(t *testing.T) {
	p, err := sim.LoadProfile("../../sim/testdata/profiles/tiny.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p.Node.OrderedSends = true
	b := BurstResult{Nodes: 3, Frames: 4, FrameBytes: 256 << 10}
	b.PortBytes = int64(b.Nodes-1) * int64(b.Frames) * ecluster.BenchFrameBytes(b.FrameBytes)
	ctx := context.Background()
	for _, e := range []float64{0.5, 0.8} {
		b.Median = burstAt(t, *p, e, b)
		fit, err := FitFabricEfficiency(ctx, p, b)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(fit.Efficiency-e) > 2e-3 || fit.HostBound || !(fit.SimFull < b.Median) {
			t.Errorf("burst as long as the simulator's at %g: fit %+v", e, fit)
		}
		// No network CPU in the tiny profile: the links alone are the burst.
		if want := burstAt(t, *p, 1, b); math.Abs(fit.LinkBound-want) > 1e-12 || math.Abs(fit.SimFull-want) > 1e-12 {
			t.Errorf("link bound %g s, simulated %g s, want both %g", fit.LinkBound, fit.SimFull, want)
		}
	}
	b.Median = 0.5 * burstAt(t, *p, 1, b)
	if fit, err := FitFabricEfficiency(ctx, p, b); err != nil || fit.Efficiency != 1 {
		t.Errorf("burst faster than the simulator at the full rate: fit %+v (%v), want 1", fit, err)
	}
	cpuBound := *p
	cpuBound.Node.NetCPUCost = 20 // 40 ns a byte on 4 cores: 0.1 B/ns, a tenth of the NIC
	b.Median = 10 * burstAt(t, cpuBound, 1, b)
	if fit, err := FitFabricEfficiency(ctx, &cpuBound, b); err != nil || fit.Efficiency != 1 || !fit.HostBound {
		t.Errorf("burst held by the cores: fit %+v (%v), want efficiency 1, host bound", fit, err)
	}
	// Staggered starts lengthen the burst on the links too: that is not
	// the cores, and the fit still finds the share.
	b.Starts = burstStarts(b.Nodes, 50*time.Millisecond, 3)
	b.Median = burstAt(t, *p, 0.6, b)
	if fit, err := FitFabricEfficiency(ctx, p, b); err != nil || fit.HostBound || math.Abs(fit.Efficiency-0.6) > 2e-3 {
		t.Errorf("staggered burst as long as the simulator's at 0.6: fit %+v (%v)", fit, err)
	}
	b.Starts = nil
	if _, err := FitFabricEfficiency(ctx, p, BurstResult{}); err == nil {
		t.Error("no burst: fitted")
	}
}

// TestBurstStarts: offsets in [0, stagger), none on the diagonal, the
// same for the same seed and not for another.
func TestBurstStarts(t *testing.T) {
	a, b, c := burstStarts(4, time.Second, 7), burstStarts(4, time.Second, 7), burstStarts(4, time.Second, 8)
	same, differ := true, false
	for i := range a {
		for j := range a[i] {
			if (i == j && a[i][j] != 0) || a[i][j] < 0 || a[i][j] >= int64(time.Second) {
				t.Errorf("starts[%d][%d] = %d", i, j, a[i][j])
			}
			same = same && a[i][j] == b[i][j]
			differ = differ || a[i][j] != c[i][j]
		}
	}
	if !same || !differ {
		t.Errorf("seed 7 twice same %v, seed 8 differs %v", same, differ)
	}
}

// TestMeasureBurst times bursts on a 3-node emulated cluster at 50
// Mbit/s: each port cannot beat the link's payload rate (beyond what the
// shaper's 128 KiB bucket lets through at once), the fit against a
// profile of that link reproduces the measurement, and nothing of the
// network is left.
func TestMeasureBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three namespaces' data plane for seconds")
	}
	needNetns(t)
	exe := gostachioBin(t)
	link, err := ecluster.ParseLink("50Mbit")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []BurstOptions{{Exe: exe, Nodes: 1, Link: link}, {Exe: exe, Nodes: 3}, {Exe: exe, Nodes: 3, Link: link, Frames: -1},
		{Exe: exe, Nodes: 3, Link: link, Warmup: -1}, {Exe: exe, Nodes: 3, Link: link, FrameBytes: -8}} {
		if _, err := MeasureBurst(context.Background(), bad); err == nil {
			t.Errorf("%+v: accepted", bad)
		}
	}
	before := gstNamespaces(t)
	b, err := MeasureBurst(context.Background(), BurstOptions{Exe: exe, Nodes: 3, Link: link, Frames: 4, FrameBytes: 128 << 10, Rounds: 2, Warmup: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Seconds) != 2 || b.PortBytes != 2*4*ecluster.BenchFrameBytes(128<<10) {
		t.Fatalf("rounds %v, port bytes %d", b.Seconds, b.PortBytes)
	}
	if !(b.BusyCores > 0 && b.BusyCores <= float64(runtime.NumCPU())+0.1) {
		t.Errorf("%.2f cores busy during the bursts, on %d cores", b.BusyCores, runtime.NumCPU())
	}
	payload := 50e6 / 8 * TCPPayloadShare
	if bucket := float64(b.PortBytes) / (float64(b.PortBytes) - 128<<10); b.Rate < 0.2*payload || b.Rate > bucket*1.02*payload {
		t.Errorf("each port %.2f MB/s over a link of %.2f MB/s payload", b.Rate/1e6, payload/1e6)
	}
	src := []byte(strings.Replace(tinyProfileYAML(t), "nic: {bandwidth: 1GB/s, latency: 5us}", fmt.Sprintf("nic: {bandwidth: %.0f, latency: 15us}", payload), 1))
	p, err := sim.ParseProfile("tiny-50Mbit", src)
	if err != nil {
		t.Fatal(err)
	}
	fit, err := FitFabricEfficiency(context.Background(), p, b)
	if err != nil {
		t.Fatal(err)
	}
	if got := burstAt(t, *p, fit.Efficiency, b); fit.Efficiency < 1 && math.Abs(got-b.Median) > 0.01*b.Median {
		t.Errorf("fit %+v: the simulator takes %.4g s there, measured %.4g s", fit, got, b.Median)
	}
	if after := gstNamespaces(t); !slices.Equal(before, after) {
		t.Errorf("namespaces before %v, after %v", before, after)
	}
}

func tinyProfileYAML(t *testing.T) string {
	t.Helper()
	out, err := os.ReadFile("../../sim/testdata/profiles/tiny.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// gstNamespaces lists this machine's gostachio network namespaces.
func gstNamespaces(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(f[0], ecluster.NetnsPrefix) {
			names = append(names, f[0])
		}
	}
	slices.Sort(names)
	return names
}

// benchSimTestOptions are the bench-sim options both end-to-end tests
// share (4 workers of one device at 1 Gbit/s on the test data, one rep, a
// fixed network cost), with TMPDIR a fresh folder (returned) so that the
// temporary profiles left behind can be counted; it skips where netns
// clusters cannot run.
func benchSimTestOptions(t *testing.T) (SimBenchOptions, string) {
	t.Helper()
	needNetns(t)
	exe := gostachioBin(t)
	link, err := ecluster.ParseLink("1Gbit")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	return SimBenchOptions{Exe: exe, Nodes: 4, Link: link, Devices: 1, Data: testData(t), Reps: 1,
		Profile: "../../sim/profiles/devbox-calibrated.yaml", ProfileOut: filepath.Join(tmp, "derived.yaml"),
		Latency: 15 * time.Microsecond, NetCPUCost: 1, CPUTax: -1}, tmp
}

// TestBenchSimFabric runs bench-sim end to end on SF0.01 over 1 Gbit/s
// links (the co-location and network cost given, the fabric measured):
// every row carries the burst and its fit, the profile written has the
// NIC at the payload rate times the fitted share, the rows priced at the
// full rate are no slower than at the fitted share, and the full-rate
// profile it simulated with is removed.
func TestBenchSimFabric(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 4-worker netns cluster and its bursts for seconds")
	}
	o, tmp := benchSimTestOptions(t)
	out := o.ProfileOut
	o.Queries, o.Colocation, o.ColocationExempt = []string{"q3", "q5"}, 0.6, DefaultColocationExempt
	rows, err := BenchSim(context.Background(), o, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows))
	}
	e := rows[0].FabricEfficiency
	t.Logf("fabric efficiency %.3f; q3 %.4g s (full rate %.4g s)", e, rows[0].Sim, rows[0].SimFullLink)
	for _, r := range rows {
		if r.Fabric == nil || r.Fabric.Fit == nil || !(r.Fabric.Burst.Median > 0) || r.FabricEfficiency != r.Fabric.Fit.Efficiency || r.FabricEfficiency != e {
			t.Fatalf("%s: fabric %+v, efficiency %v", r.Query, r.Fabric, r.FabricEfficiency)
		}
		if !(e > 0 && e <= 1) || (e < 1) != (r.SimFullLink > 0) {
			t.Errorf("%s: efficiency %v, full-rate price %v", r.Query, e, r.SimFullLink)
		}
		if !slices.Equal(r.ColocationExempt, DefaultColocationExempt) {
			t.Errorf("%s: row's co-location exemption %v, want %v", r.Query, r.ColocationExempt, DefaultColocationExempt)
		}
		if e < 1 && r.Sim < 0.98*r.SimFullLink {
			t.Errorf("%s: %.4g s at %.3f of the rate, %.4g s at all of it", r.Query, r.Sim, e, r.SimFullLink)
		}
	}
	p, err := sim.LoadProfile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Node.ColocationExempt, DefaultColocationExempt) {
		t.Errorf("derived profile's co-location exemption %v, want %v", p.Node.ColocationExempt, DefaultColocationExempt)
	}
	if want := math.Round(1e9 / 8 * TCPPayloadShare * e); math.Abs(float64(p.NIC.Bandwidth)-want) > 0.5 {
		t.Errorf("derived NIC %v B/s, want %v (efficiency %v)", float64(p.NIC.Bandwidth), want, e)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "gostachio-full-link-*")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestBenchSimPooledColocation: with --colocation-from the profile's
// co-location is the median of the earlier launches' rounds and this
// one's, the rows say so and carry the price at this launch's own
// co-location, and no temporary profile is left behind.
func TestBenchSimPooledColocation(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 4-worker netns cluster and the co-location loop for seconds")
	}
	o, tmp := benchSimTestOptions(t)
	earlier := SimBenchRow{Query: "q3", Engine: []float64{1}, Nodes: 4, Devices: 1, ColocationRatios: slices.Repeat([]float64{0.9}, 20)}
	raw, err := json.Marshal([]SimBenchRow{earlier, earlier})
	if err != nil {
		t.Fatal(err)
	}
	from := filepath.Join(tmp, "earlier.json")
	if err := os.WriteFile(from, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	out := o.ProfileOut
	o.Queries, o.FabricEfficiency, o.ColocationFrom = []string{"q3"}, 1, []string{from}
	o.ColocationRounds, o.ColocationDuration = 2, 200*time.Millisecond
	rows, err := BenchSim(context.Background(), o, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 {
		t.Fatalf("%d rows, want 1", len(rows))
	}
	r := rows[0]
	// 20 rounds at 0.9 and this launch's 2: the median is 0.9.
	if r.Colocation != 0.9 || r.ColocationPooled != 22 || r.ColocationPooledLaunches != 2 || len(r.ColocationRatios) != 2 {
		t.Errorf("row: co-location %v from %d rounds of %d launches, own rounds %v; want 0.9 from 22 of 2, 2 own", r.Colocation, r.ColocationPooled, r.ColocationPooledLaunches, r.ColocationRatios)
	}
	if own := stats.Median(r.ColocationRatios); math.Abs(r.ColocationOwn-min(own, 1)) > 1e-12 || !(r.SimOwnColocation > 0) {
		t.Errorf("own co-location %v (rounds' median %v), priced at it %v s", r.ColocationOwn, own, r.SimOwnColocation)
	}
	// Less co-location, more time (and the other way round).
	if (r.ColocationOwn < 0.9 && r.SimOwnColocation < 0.98*r.Sim) || (r.ColocationOwn > 0.9 && r.SimOwnColocation > 1.02*r.Sim) {
		t.Errorf("at its own co-location %v: %v s; pooled 0.9: %v s", r.ColocationOwn, r.SimOwnColocation, r.Sim)
	}
	p, err := sim.LoadProfile(out)
	if err != nil {
		t.Fatal(err)
	}
	if p.Node.Colocation != 0.9 {
		t.Errorf("derived profile's co-location %v, want the pooled 0.9", p.Node.Colocation)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "gostachio-own-colocation-*")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

func TestPairFrames(t *testing.T) {
	for _, tc := range []struct {
		pair, max  int64
		frames     int
		frameBytes int64
	}{
		{384 << 10, 384 << 10, 1, 384 << 10},
		{384<<10 + 1, 384 << 10, 2, 192<<10 + 1},
		{128 << 10, 384 << 10, 1, 128 << 10},
		{7 * 384 << 10, 384 << 10, 7, 384 << 10},
		{1000, 300, 4, 250},
	} {
		n, b := PairFrames(tc.pair, tc.max)
		if n != tc.frames || b != tc.frameBytes {
			t.Errorf("PairFrames(%d, %d) = %d x %d, want %d x %d", tc.pair, tc.max, n, b, tc.frames, tc.frameBytes)
		}
		if int64(n)*b < tc.pair || b > tc.max {
			t.Errorf("PairFrames(%d, %d) = %d x %d: does not cover the pair in frames of at most the maximum", tc.pair, tc.max, n, b)
		}
	}
}

// TestBenchFabricSweep measures two burst sizes on a 3-worker 50 Mbit/s
// cluster: one point per size, each split into frames of at most --frame,
// and a table row per size.
func TestBenchFabricSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three namespaces' data plane for seconds")
	}
	link, err := ecluster.ParseLink("50Mbit")
	if err != nil {
		t.Fatal(err)
	}
	o := FabricBenchOptions{BurstOptions: BurstOptions{Nodes: 3, Link: link, FrameBytes: 128 << 10, Rounds: 1, Warmup: 1}}
	for _, bad := range [][]int64{nil, {64 << 10, 0}} {
		if _, err := BenchFabricSweep(context.Background(), o, bad, io.Discard); err == nil {
			t.Errorf("sizes %v: accepted", bad)
		}
	}
	needNetns(t)
	o.Exe = gostachioBin(t)
	var out strings.Builder
	pts, err := BenchFabricSweep(context.Background(), o, []int64{64 << 10, 160 << 10}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 2 || pts[0].Burst.Frames != 1 || pts[1].Burst.Frames != 2 || pts[1].Burst.FrameBytes != 80<<10 {
		t.Fatalf("points %+v", pts)
	}
	for _, p := range pts {
		if p.PairBytes != int64(p.Burst.Frames)*ecluster.BenchFrameBytes(p.Burst.FrameBytes) || p.PayloadShare <= 0 {
			t.Errorf("point %+v", p)
		}
	}
	for _, row := range []string{"64 KiB        1", "160 KiB        2"} {
		if !strings.Contains(out.String(), row) {
			t.Errorf("no row %q in\n%s", row, out.String())
		}
	}
}

// TestRefitFabric: saved bursts (one bench-fabric result, and a sweep's
// points) fitted against a profile give the efficiencies at which the
// simulator takes as long, and bad files are refused naming them.
func TestRefitFabric(t *testing.T) {
	path := "../../sim/testdata/profiles/tiny.yaml"
	p, err := sim.LoadProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	burst := func(frames int, e float64) BurstResult {
		b := BurstResult{Nodes: 3, Frames: frames, FrameBytes: 256 << 10, Streams: 4}
		b.PortBytes = int64(b.Nodes-1) * int64(b.Frames) * ecluster.BenchFrameBytes(b.FrameBytes)
		b.Median = burstAt(t, *p, e, b)
		return b
	}
	dir := t.TempDir()
	write := func(name string, v any) string { return writeJSONFile(t, dir, name, v) }
	one := write("one.json", FabricBenchResult{Burst: burst(4, 0.5), Link: "50Mbit"})
	sweep := write("sweep.json", []FabricSweepPoint{{PairBytes: 256 << 10, FabricBenchResult: FabricBenchResult{Burst: burst(1, 0.25)}},
		{PairBytes: 2 << 20, FabricBenchResult: FabricBenchResult{Burst: burst(8, 0.75)}}})
	var out strings.Builder
	pts, err := RefitFabric(context.Background(), path, []string{one, sweep}, &out)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{0.5, 0.25, 0.75}
	if len(pts) != len(want) {
		t.Fatalf("%d points, want %d:\n%s", len(pts), len(want), out.String())
	}
	for i, pt := range pts {
		if pt.Fit == nil || math.Abs(pt.Fit.Efficiency-want[i]) > 2e-3 || pt.Profile != path {
			t.Errorf("point %d: %+v, want efficiency %g against %s", i, pt, want[i], path)
		}
	}
	if pts[0].PairBytes != 4*ecluster.BenchFrameBytes(256<<10) || !strings.Contains(out.String(), "one.json: 4 x 256 KiB per pair on 3 workers") {
		t.Errorf("the single result: %d bytes per pair; printed\n%s", pts[0].PairBytes, out.String())
	}
	bad := write("bad.json", map[string]any{"burst": map[string]any{"nodes": 0}})
	for _, f := range []string{filepath.Join(dir, "missing.json"), write("text.json", "not a result"), bad} {
		if _, err := RefitFabric(context.Background(), path, []string{f}, io.Discard); err == nil || !strings.Contains(err.Error(), filepath.Base(f)) {
			t.Errorf("%s: err %v, want one naming it", f, err)
		}
	}
}
