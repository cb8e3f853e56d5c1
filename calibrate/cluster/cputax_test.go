package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"os"
	"strings"
	"testing"

	ecluster "gostachio/engine/cluster"
	"gostachio/internal/stats"
	"gostachio/sim"
)

// TestCPURuns: results are matched to the run list one for one, each
// query's first warmup runs left out; a result of another query, a
// missing one or one without CPU time is an error naming it.
func TestCPURuns(t *testing.T) {
	list := []string{"q7", "q8", "q7", "q8", "q7", "q8"}
	type r struct {
		Query   string  `json:"query"`
		Seconds float64 `json:"seconds"`
		CPUNs   int64   `json:"cpu_ns"`
	}
	var rs []r
	for i, q := range list {
		rs = append(rs, r{q, float64(i + 1), int64(i+1) * 1e9})
	}
	enc := func(rs []r) []byte {
		b, err := json.Marshal(rs)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	got := map[string]cpuSeries{}
	if err := cpuRuns(enc(rs), list, 1, "test", got); err != nil {
		t.Fatal(err)
	}
	// q7 at 1, 3, 5 and q8 at 2, 4, 6 s: the first of each left out.
	if s := got["q7"]; len(s.wall) != 2 || s.wall[0] != 3 || s.cpu[1] != 5 {
		t.Errorf("q7 %+v, want runs 3 and 5", s)
	}
	if s := got["q8"]; len(s.wall) != 2 || s.wall[1] != 6 || s.cpu[0] != 4 {
		t.Errorf("q8 %+v, want runs 4 and 6", s)
	}
	// A second round adds its runs to the first's.
	if err := cpuRuns(enc(rs), list, 1, "test", got); err != nil || len(got["q7"].wall) != 4 || got["q7"].wall[2] != 3 {
		t.Errorf("second round: %v, q7 %+v, want runs 3, 5, 3, 5", err, got["q7"])
	}
	bad := func(what string, data []byte, want string) {
		t.Helper()
		if err := cpuRuns(data, list, 1, "test", map[string]cpuSeries{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want one naming %q", what, err, want)
		}
	}
	swapped := append([]r(nil), rs...)
	swapped[2].Query = "q9"
	bad("another query", enc(swapped), `"q9", not of "q7"`)
	bad("a run short", enc(rs[:5]), "5 of test results for 6 runs")
	noCPU := append([]r(nil), rs...)
	noCPU[3].CPUNs = 0
	bad("no CPU time", enc(noCPU), "run 4 of q8 has no CPU time")
	bad("not JSON", []byte("q7 0.1s"), "unreadable")
}

// TestMeasureCPUTax measures the tax on a 4-worker netns cluster of SF0.01
// against one process: each query's tax is its formula over its medians,
// the launch's is their median, and a cluster of one worker is refused.
func TestMeasureCPUTax(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 4-worker netns cluster and one process for seconds")
	}
	needNetns(t)
	link, err := ecluster.ParseLink("1Gbit")
	if err != nil {
		t.Fatal(err)
	}
	o := CPUTaxOptions{Exe: gostachioBin(t), Data: testData(t), Nodes: 4, Devices: 1, Link: link, Queries: []string{"q3", "q12"}, Reps: 1, Rounds: 2}
	res, err := MeasureCPUTax(context.Background(), o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Queries) != 2 {
		t.Fatalf("%d queries measured, want 2: %+v", len(res.Queries), res)
	}
	var taxes []float64
	for _, q := range res.Queries {
		if !(q.ClusterSeconds > 0 && q.ClusterCPU > 0 && q.OneCPU > 0) {
			t.Errorf("%s: %+v, want positive times", q.Query, q)
		}
		if want := (q.ClusterCPU - q.OneCPU) / q.ClusterSeconds; math.Abs(q.Tax-want) > 1e-12 {
			t.Errorf("%s: tax %v, want (%v - %v) / %v = %v", q.Query, q.Tax, q.ClusterCPU, q.OneCPU, q.ClusterSeconds, want)
		}
		taxes = append(taxes, q.Tax)
	}
	if want := max(stats.Median(taxes), 0); res.Tax != want {
		t.Errorf("tax %v, want the queries' median %v", res.Tax, want)
	}
	o.Nodes = 1
	if _, err := MeasureCPUTax(context.Background(), o, io.Discard); err == nil || !strings.Contains(err.Error(), "need 2 workers") {
		t.Errorf("one worker: err %v", err)
	}
}

// TestBenchSimCPUTax: bench-sim measures the tax (given queries that it
// does not validate), writes it as node.cpu_tax, prices the runs without
// it too, and refuses tax queries it validates.
func TestBenchSimCPUTax(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 4-worker netns cluster and one process for seconds")
	}
	o, _ := benchSimTestOptions(t)
	o.Queries, o.Colocation, o.FabricEfficiency, o.CPUTax, o.TaxQueries = []string{"q3"}, 0.6, 1, 0, []string{"q3"}
	if _, err := BenchSim(context.Background(), o, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "--tax-queries lists q3, which --query validates") {
		t.Fatalf("tax measured on the validated query: err %v", err)
	}
	o.TaxQueries = []string{"q12"}
	var w bytes.Buffer
	rows, err := BenchSim(context.Background(), o, &w, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	r := rows[0]
	if r.CPUTaxRuns == nil || len(r.CPUTaxRuns.Queries) != 1 || r.CPUTaxRuns.Queries[0].Query != "q12" || r.CPUTax != r.CPUTaxRuns.Tax {
		t.Fatalf("row's tax %v from %+v, want q12's measurement", r.CPUTax, r.CPUTaxRuns)
	}
	if !strings.Contains(w.String(), "cpu tax: the workers used") {
		t.Errorf("no tax line in the report:\n%s", w.String())
	}
	src, err := os.ReadFile(o.ProfileOut)
	if err != nil {
		t.Fatal(err)
	}
	p, err := sim.ParseProfile(o.ProfileOut, src)
	if err != nil {
		t.Fatal(err)
	}
	if r.CPUTax > 0 {
		if math.Abs(p.Node.CPUTax-r.CPUTax) > 1e-3*r.CPUTax || !(r.SimNoTax > 0) || r.SimNoTax > r.Sim*1.0001 {
			t.Errorf("tax %v: profile's %v, priced without it %v s (with it %v s)", r.CPUTax, p.Node.CPUTax, r.SimNoTax, r.Sim)
		}
	} else if p.Node.CPUTax != 0 || r.SimNoTax != 0 {
		t.Errorf("no tax measured, yet the profile has %v and a price without it %v", p.Node.CPUTax, r.SimNoTax)
	}
}

// TestDeriveProfileCPUTax: a tax becomes node.cpu_tax, says where it
// comes from, and deriving again replaces it or, without one, drops it; a
// negative one or one of every core is refused.
func TestDeriveProfileCPUTax(t *testing.T) {
	src, err := os.ReadFile("../../sim/profiles/devbox-xeon.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d := Derivation{Nodes: 4, Devices: 1, Cores: 2, Link: ecluster.Link{Rate: 1e9}, Colocation: 0.7, CPUTax: 0.32}
	out, err := DeriveProfile(src, d)
	if err != nil {
		t.Fatal(err)
	}
	p, err := sim.ParseProfile("derived", out)
	if err != nil || p.Node.CPUTax != 0.32 || !strings.Contains(string(out), "node.cpu_tax 0.32: measured") {
		t.Fatalf("tax 0.32: node %+v (%v)\n%s", p.Node, err, out)
	}
	if p.NVMe.Completion != "batch" {
		t.Errorf("the derived profile's nvme.completion %q, want devbox-xeon's batch", p.NVMe.Completion)
	}
	d.CPUTax = 0.4
	again, err := DeriveProfile(out, d)
	if p, err2 := sim.ParseProfile("again", again); err != nil || err2 != nil || p.Node.CPUTax != 0.4 || strings.Count(string(again), "cpu_tax:") != 1 {
		t.Errorf("deriving again with 0.4: %v %v\n%s", err, err2, again)
	}
	d.CPUTax = 0
	if none, err := DeriveProfile(again, d); err != nil || strings.Contains(string(none), "cpu_tax") {
		t.Errorf("deriving without a tax: %v\n%s", err, none)
	}
	for _, bad := range []float64{-0.1, 2, math.Inf(1)} {
		d.CPUTax = bad
		if _, err := DeriveProfile(src, d); err == nil || !strings.Contains(err.Error(), "cpu tax") {
			t.Errorf("tax %v: err %v", bad, err)
		}
	}
}
