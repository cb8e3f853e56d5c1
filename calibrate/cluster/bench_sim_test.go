package cluster

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	ecluster "gostachio/engine/cluster"
	"gostachio/sim"
)

// TestDeriveProfile: the derived profile of the shipped calibrated one
// parses, and has the cluster's devices, the link's rate and latency, this
// machine's cores (capped by the profile's) shared by the nodes, and the
// NVMe bandwidth untouched (one disk, shared by the simulator).
// The source profile's node.corun is left out of the derived one, with a
// comment; deriving again keeps the comment once.
func TestDeriveProfileCorun(t *testing.T) {
	src, err := os.ReadFile("../../sim/profiles/devbox-xeon.yaml")
	if err != nil {
		t.Fatal(err)
	}
	orig, err := sim.ParseProfile("devbox-xeon.yaml", src)
	if err != nil || !(orig.Node.Corun > 0) {
		t.Fatalf("devbox-xeon: corun %v (%v), want one", orig.Node.Corun, err)
	}
	d := Derivation{Nodes: 4, Devices: 1, Cores: 2, Link: ecluster.Link{Rate: 1e9}, Colocation: 0.7}
	out, err := DeriveProfile(src, d)
	if err != nil {
		t.Fatal(err)
	}
	p, err := sim.ParseProfile("derived", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if p.Node.Corun != 0 || !strings.Contains(string(out), "node.corun left out") {
		t.Errorf("corun %v, want none and a comment where it was:\n%s", p.Node.Corun, out)
	}
	again, err := DeriveProfile(out, d)
	if err != nil || string(again) != string(out) {
		t.Errorf("deriving twice differs (%v)", err)
	}
}

func TestDeriveProfile(t *testing.T) {
	src, err := os.ReadFile("../../sim/profiles/devbox-calibrated.yaml")
	if err != nil {
		t.Fatal(err)
	}
	orig, err := sim.ParseProfile("devbox-calibrated.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cores     int
		wantCores float64
	}{{1, 1}, {16, orig.Node.HostCores}} {
		out, err := DeriveProfile(src, Derivation{Nodes: 4, Devices: 1, Cores: tc.cores, Link: ecluster.Link{Rate: 100e6}, Latency: 15 * time.Microsecond, Colocation: 1})
		if err != nil {
			t.Fatal(err)
		}
		p, err := sim.ParseProfile("derived", out)
		if err != nil {
			t.Fatalf("derived profile does not parse: %v\n%s", err, out)
		}
		if p.Node.GPUs != 1 || !p.Node.SharedMachine || !p.Node.OrderedSends || p.Node.HostCores != tc.wantCores {
			t.Errorf("cores %d: node %+v, want 1 gpu, shared machine, ordered sends, %g cores", tc.cores, p.Node, tc.wantCores)
		}
		// 100 Mbit/s carries 11.96 MB/s of TCP payload in full frames.
		if got, want := p.NIC.Bandwidth.PerNs(), 100e6/8/1e9*1448/1514; math.Abs(got-want) > 1e-6*want {
			t.Errorf("nic bandwidth %g B/ns, want %g", got, want)
		}
		if p.NIC.Latency.Ns() != 15000 {
			t.Errorf("nic latency %d ns, want 15000", p.NIC.Latency.Ns())
		}
		if p.NVMe.Bandwidth != orig.NVMe.Bandwidth {
			t.Errorf("nvme bandwidth %v, want the profile's %v", p.NVMe.Bandwidth, orig.NVMe.Bandwidth)
		}
		// Deriving again (shared_machine already present) changes nothing.
		again, err := DeriveProfile(out, Derivation{Nodes: 4, Devices: 1, Cores: tc.cores, Link: ecluster.Link{Rate: 100e6}, Latency: 15 * time.Microsecond, Colocation: 1})
		if err != nil || string(again) != string(out) {
			t.Errorf("deriving twice differs (%v):\n%s\n---\n%s", err, out, again)
		}
	}
	// A co-location efficiency becomes the host's loss under
	// oversubscription (4 workers x 1 device on 2 cores), keeps the cores,
	// says so, and deriving again replaces it.
	out, err := DeriveProfile(src, Derivation{Nodes: 4, Devices: 1, Cores: 2, Link: ecluster.Link{Rate: 1e9}, Colocation: 0.4})
	if err != nil {
		t.Fatal(err)
	}
	p, err := sim.ParseProfile("derived", out)
	if err != nil || p.Node.HostCores != min(2, orig.Node.HostCores) || p.Node.Colocation != 0.4 || p.Node.ColocationKernels != 4 {
		t.Errorf("efficiency 0.4, 4 workers on 2 cores: node %+v (%v), want 2 cores, colocation 0.4 at 4 kernels", p.Node, err)
	}
	if !strings.Contains(string(out), "node.colocation 0.4 at node.colocation_kernels 4: measured") {
		t.Errorf("the derived colocation line does not say where it comes from:\n%s", out)
	}
	again, err := DeriveProfile(out, Derivation{Nodes: 4, Devices: 1, Cores: 2, Link: ecluster.Link{Rate: 1e9}, Colocation: 0.5, ColocationExempt: DefaultColocationExempt})
	if p2, err2 := sim.ParseProfile("again", again); err != nil || err2 != nil || p2.Node.Colocation != 0.5 || strings.Count(string(again), "colocation:") != 1 ||
		!slices.Equal(p2.Node.ColocationExempt, DefaultColocationExempt) {
		t.Errorf("deriving again with 0.5 and the aggregates exempt: %v %v\n%s", err, err2, again)
	}
	// Deriving once more without exemptions drops the line.
	if none, err := DeriveProfile(again, Derivation{Nodes: 4, Devices: 1, Cores: 2, Link: ecluster.Link{Rate: 1e9}, Colocation: 0.5}); err != nil || strings.Contains(string(none), "colocation_exempt") {
		t.Errorf("deriving without exemptions: %v\n%s", err, none)
	}
	// No more kernels than cores: nothing to lose, no colocation lines.
	out, err = DeriveProfile(src, Derivation{Nodes: 2, Devices: 1, Cores: 2, Link: ecluster.Link{Rate: 1e9}, Colocation: 0.4})
	if p, err2 := sim.ParseProfile("derived", out); err != nil || err2 != nil || p.Node.Colocation != 0 {
		t.Errorf("2 workers x 1 device on 2 cores: colocation %v (%v, %v), want none", p.Node.Colocation, err, err2)
	}
	// A network CPU cost becomes node.net_cpu_cost, says what it is, and
	// deriving again replaces it; a negative or infinite one is refused.
	out, err = DeriveProfile(src, Derivation{Nodes: 4, Devices: 1, Cores: 2, Link: ecluster.Link{Rate: 1e9}, Colocation: 1, NetCPUCost: 1.5})
	if p, err2 := sim.ParseProfile("derived", out); err != nil || err2 != nil || p.Node.NetCPUCost != 1.5 || !strings.Contains(string(out), "node.net_cpu_cost 1.5: the TCP stack's CPU") {
		t.Errorf("network cost 1.5: %v %v\n%s", err, err2, out)
	}
	again, err = DeriveProfile(out, Derivation{Nodes: 4, Devices: 1, Cores: 2, Link: ecluster.Link{Rate: 1e9}, Colocation: 1, NetCPUCost: 0.5})
	if p, err2 := sim.ParseProfile("again", again); err != nil || err2 != nil || p.Node.NetCPUCost != 0.5 || strings.Count(string(again), "net_cpu_cost:") != 1 {
		t.Errorf("deriving again with network cost 0.5: %v %v\n%s", err, err2, again)
	}
	for _, c := range []float64{-1, math.Inf(1), math.NaN()} {
		if _, err := DeriveProfile(src, Derivation{Nodes: 4, Devices: 1, Cores: 2, Link: ecluster.Link{Rate: 1e9}, Colocation: 1, NetCPUCost: c}); err == nil {
			t.Errorf("network cost %v accepted", c)
		}
	}
	// A fabric efficiency scales the NIC's payload rate and says so; one
	// outside (0, 1] is refused.
	out, err = DeriveProfile(src, Derivation{Nodes: 4, Devices: 1, Cores: 2, Link: ecluster.Link{Rate: 1e9}, Colocation: 1, FabricEfficiency: 0.8})
	if p, err2 := sim.ParseProfile("derived", out); err != nil || err2 != nil || math.Abs(p.NIC.Bandwidth.PerNs()-0.8*1e9/8/1e9*1448/1514) > 1e-6 ||
		!strings.Contains(string(out), "x 0.800, the share of it a port moved in all-to-all bursts") {
		t.Errorf("fabric efficiency 0.8: %v %v\n%s", err, err2, out)
	}
	for _, f := range []float64{-0.5, 1.5, math.NaN()} {
		if _, err := DeriveProfile(src, Derivation{Nodes: 4, Devices: 1, Cores: 2, Link: ecluster.Link{Rate: 1e9}, Colocation: 1, FabricEfficiency: f}); err == nil {
			t.Errorf("fabric efficiency %v accepted", f)
		}
	}
	for _, eff := range []float64{0, -1, 1.5} {
		if _, err := DeriveProfile(src, Derivation{Nodes: 4, Devices: 1, Cores: 1, Link: ecluster.Link{Rate: 1e9}, Colocation: eff}); err == nil {
			t.Errorf("efficiency %v accepted", eff)
		}
	}
	if _, err := DeriveProfile([]byte("name: x\nnode:\n  gpus: 1\n"), Derivation{Nodes: 4, Devices: 1, Cores: 2, Link: ecluster.Link{Rate: 1e9}, Colocation: 1}); err == nil || !strings.Contains(err.Error(), "derive profile: sim: profile") {
		t.Errorf("an incomplete source profile: err %v, want the profile's own error", err)
	}
}

// The co-location measurement runs real peers of the binary: efficiencies
// are positive, one process alone is measured against itself, and a peer
// fails clearly on a bad duration.
func TestMeasureColocation(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs peers for a few seconds")
	}
	exe := gostachioBin(t)
	one, err := MeasureColocation(context.Background(), ColocationOptions{Exe: exe, Nodes: 1, Duration: 300 * time.Millisecond, Rounds: 1})
	if err != nil {
		t.Fatal(err)
	}
	if one.Efficiency != 1 || len(one.Alone) != 1 || one.Alone[0] <= 0 {
		t.Errorf("one process: %+v, want efficiency 1 from one positive rate", one)
	}
	two, err := MeasureColocation(context.Background(), ColocationOptions{Exe: exe, Nodes: 2, Duration: 300 * time.Millisecond, Rounds: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(two.Together) != 1 || !(two.Efficiency > 0) {
		t.Errorf("two processes: %+v, want a positive efficiency", two)
	}
	t.Logf("2 processes: efficiency %.3f", two.Efficiency)
	if err := RunColocatePeer(context.Background(), 0, 0, strings.NewReader(""), io.Discard); err == nil {
		t.Error("a peer with duration 0 ran")
	}
	if err := RunColocatePeer(context.Background(), time.Second, -1, strings.NewReader(""), io.Discard); err == nil {
		t.Error("a peer with -1 threads ran")
	}
}

// TestBenchSimOrder: every round runs every query once, the rounds are not
// all in the same order, the same seed gives the same list and another
// seed another one.
func TestBenchSimOrder(t *testing.T) {
	qs := []string{"q3", "q5", "q9", "q18"}
	list := BenchSimOrder(qs, 12, 1)
	if len(list) != 48 {
		t.Fatalf("%d runs, want 48", len(list))
	}
	orders := map[string]bool{}
	for r := range 12 {
		round := slices.Clone(list[4*r : 4*r+4])
		orders[strings.Join(round, ",")] = true
		slices.Sort(round)
		if !slices.Equal(round, []string{"q18", "q3", "q5", "q9"}) {
			t.Fatalf("round %d runs %v", r, list[4*r:4*r+4])
		}
	}
	if len(orders) < 4 {
		t.Errorf("12 rounds in only %d orders: not shuffled per round", len(orders))
	}
	if !slices.Equal(list, BenchSimOrder(qs, 12, 1)) {
		t.Error("the same seed gave another list")
	}
	if slices.Equal(list, BenchSimOrder(qs, 12, 2)) {
		t.Error("seeds 1 and 2 gave the same list")
	}
}

// TestBenchSimRescaleDiskChecksFirst: --rescale-disk on a dataset whose
// lineitem file cannot hold the disk reference fails naming it before the
// launch's measurements start.
func TestBenchSimRescaleDiskChecksFirst(t *testing.T) {
	var out, log bytes.Buffer
	_, err := BenchSim(context.Background(), SimBenchOptions{Nodes: 4, Link: ecluster.Link{Rate: 1e9}, Data: testData(t), Queries: []string{"q3"},
		Profile: "../../sim/profiles/devbox-xeon.yaml", ProfileOut: filepath.Join(t.TempDir(), "p.yaml"), RescaleDisk: true}, &out, &log)
	if err == nil || !strings.Contains(err.Error(), "--rescale-disk") || !strings.Contains(err.Error(), "SF 0.25") {
		t.Fatalf("err %v, want --rescale-disk naming the dataset's size", err)
	}
	if out.Len() > 0 || strings.Contains(log.String(), "measuring") {
		t.Errorf("measured before refusing:\n%s%s", out.String(), log.String())
	}
}

// TestTimedRuns: results are matched to the launch's list one for one,
// each query's first warmup runs are left out, and a result of another
// query or a missing one is an error naming it.
func TestTimedRuns(t *testing.T) {
	list := []string{"q3", "q9", "q9", "q3", "q3", "q9"}
	var res []workerResult
	for i, q := range list {
		res = append(res, workerResult{Query: q, Seconds: float64(i + 1), SentBytes: int64(i+1) << 20,
			ReferenceNs: int64(100 * (i + 1)), DiskReferenceNs: int64(7000 * (i + 1)), DiskReferenceBytes: 1 << 20})
	}
	res[4].ReferenceNs = 0     // not timed after that run
	res[3].DiskReferenceNs = 0 // nor the disk after this one
	times, sent := map[string][]float64{}, map[string]float64{}
	var refs launchRefs
	if err := timedRuns(list, res, 1, times, sent, &refs); err != nil {
		t.Fatal(err)
	}
	// The references after the timed runs (3, 4, 6), none after run 5.
	if !slices.Equal(refs.cpu, []int64{300, 400, 600}) {
		t.Errorf("CPU references %v, want those after timed runs 3, 4 and 6", refs.cpu)
	}
	if !slices.Equal(refs.disk, []diskReading{{1 << 20, 21000}, {1 << 20, 35000}, {1 << 20, 42000}}) {
		t.Errorf("disk references %v, want those after timed runs 3, 5 and 6", refs.disk)
	}
	if !slices.Equal(times["q3"], []float64{4, 5}) || !slices.Equal(times["q9"], []float64{3, 6}) {
		t.Errorf("timed runs %v", times)
	}
	if sent["q3"] != 5 || sent["q9"] != 6 {
		t.Errorf("sent %v", sent)
	}
	res[2].Query = "q5"
	if err := timedRuns(list, res, 1, times, sent, &refs); err == nil || !strings.Contains(err.Error(), `result 3 is of "q5"`) {
		t.Errorf("swapped result: %v", err)
	}
	if err := timedRuns(list, res[:5], 1, times, sent, &refs); err == nil || !strings.Contains(err.Error(), "5 results for 6 runs") {
		t.Errorf("missing result: %v", err)
	}
}

// TestSimBenchRow: the error against the median and against the 95%
// interval's ends, and whether the simulated time lies inside it.
func TestSimBenchRow(t *testing.T) {
	// Nine runs: the 95% interval is x(2)..x(8) = 0.21..0.29, median 0.25.
	runs := []float64{0.25, 0.21, 0.29, 0.20, 0.30, 0.23, 0.27, 0.24, 0.26}
	r := simBenchRow("q9", runs, 0.22, 35.8)
	if !r.CI.OK || r.CI.Lo != 0.21 || r.CI.Hi != 0.29 || r.CI.Median != 0.25 {
		t.Fatalf("interval %+v", r.CI)
	}
	if !r.InCI || math.Abs(r.Error-(-0.12)) > 1e-12 || math.Abs(r.ErrorLo-(0.22-0.29)/0.29) > 1e-12 || math.Abs(r.ErrorHi-(0.22-0.21)/0.21) > 1e-12 {
		t.Errorf("row %+v", r)
	}
	if r := simBenchRow("q9", runs, 0.30, 0); r.InCI || r.ErrorLo <= 0 {
		t.Errorf("sim above the interval: %+v", r)
	}
	if r := simBenchRow("q9", runs[:5], 0.25, 0); r.CI.OK || r.InCI {
		t.Errorf("5 runs have no 95%% interval: %+v", r)
	}
}

// TestRoundRange: the spread of a co-location measurement is the least and
// the largest per-round ratio of together to alone.
func TestRoundRange(t *testing.T) {
	c := ColocationResult{Alone: []float64{10, 20, 40}, Together: []float64{6, 10, 30}}
	if got := roundRange(c); got != "0.500–0.750" {
		t.Errorf("range %q, want 0.500–0.750", got)
	}
	if got := roundRange(ColocationResult{}); got != "n/a" {
		t.Errorf("no rounds: %q", got)
	}
	// The rows carry every round's ratio; a round without progress alone
	// has none.
	c.Alone, c.Together = append(c.Alone, 0), append(c.Together, 5)
	if got := fmt.Sprint(roundRatios(c)); got != "[0.6 0.5 0.75]" {
		t.Errorf("ratios %s, want [0.6 0.5 0.75]", got)
	}
}

// TestColocationEfficiency: the median of the rounds' ratios, not the
// ratio of the medians (which pairs windows of different rounds).
func TestColocationEfficiency(t *testing.T) {
	// Ratios 0.6, 0.5, 0.75: median 0.6; the medians' ratio would be
	// 10/20 = 0.5.
	if eff, ok := colocationEfficiency([]float64{10, 20, 40}, []float64{6, 10, 30}); !ok || eff != 0.6 {
		t.Errorf("efficiency %v (%v), want 0.6", eff, ok)
	}
	for _, alone := range [][]float64{nil, {10, 0, 40}} {
		if _, ok := colocationEfficiency(alone, []float64{6, 10, 30}); ok {
			t.Errorf("alone %v: ok, want no efficiency", alone)
		}
	}
}
