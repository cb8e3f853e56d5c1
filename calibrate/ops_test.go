package calibrate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gostachio/costmodel"
	"gostachio/dataset"
	"gostachio/engine"
	"gostachio/plan"
	"gostachio/sim"
	"gostachio/tpch/queries"
)

// writeTimes writes rows as `query --op-times` does and returns the path.
func writeTimes(t *testing.T, rows []engine.OpTime) string {
	t.Helper()
	var ot engine.OpTimes
	for _, r := range rows {
		ot.SetRun(r.Run)
		ot.Add(r)
	}
	path := filepath.Join(t.TempDir(), "ops.csv")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := ot.WriteCSV(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// PriceOps prices a probe against the table its own device built in the
// same run (a table past the profile's cache costs its misses, one in it
// does not), drops the warm-up runs, leaves emits unpriced and refuses
// times that do not match the plan.
func TestPriceOps(t *testing.T) {
	dir := testData(t)
	ds, err := dataset.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := queries.Build("q3", 0.01, ds.PlanStats())
	if err != nil {
		t.Fatal(err)
	}
	prof, err := sim.LoadProfile("devbox-xeon")
	if err != nil {
		t.Fatal(err)
	}
	if prof.Host.Ops[plan.OpHashProbe].Miss <= 0 {
		t.Skip("the profile's probes have no cache term")
	}
	var probe, filter, partial [2]int
	probe[0], filter[0], partial[0] = -1, -1, -1
	for pi, pl := range p.Pipelines {
		for oi, op := range pl.Ops {
			switch {
			case op.Kind == plan.OpHashProbe && probe[0] < 0:
				probe = [2]int{pi, oi}
			case op.Kind == plan.OpFilter && filter[0] < 0:
				filter = [2]int{pi, oi}
			case op.Kind == plan.OpAggPartial && partial[0] < 0:
				partial = [2]int{pi, oi}
			}
		}
	}
	if probe[0] < 0 || filter[0] < 0 || partial[0] < 0 {
		t.Fatalf("q3's plan lacks a probe, filter or partial aggregate: %v %v %v", probe, filter, partial)
	}
	build := p.Pipelines[probe[0]].Ops[probe[1]].Build
	buildOp := len(p.Pipelines[build].Ops) - 1
	probeRow := func(dev int) engine.OpTime {
		return engine.OpTime{Query: "q3", Run: 1, Pipeline: probe[0], Op: probe[1], Kind: "hash-probe", Device: dev,
			InRows: 100000, InBytes: 1600000, OutRows: 1000, OutBytes: 16000, Ns: 5e6}
	}
	builds := []engine.OpTime{
		{Query: "q3", Run: 1, Pipeline: build, Op: buildOp, Kind: "hash-build", Device: 0, InRows: 4 << 20, InBytes: 64 << 20, Ns: 1e8},
		{Query: "q3", Run: 1, Pipeline: build, Op: buildOp, Kind: "hash-build", Device: 1, InRows: 1000, InBytes: 16000, Ns: 1e5},
	}
	price := func(rows []engine.OpTime, warmup int) *OpsReport {
		t.Helper()
		rep, err := PriceOps(OpsOptions{Profile: "devbox-xeon", Data: dir, Times: []string{writeTimes(t, rows)}, Warmup: warmup})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	probed := func(rep *OpsReport) OpRow {
		for _, r := range rep.Rows {
			if r.Pipeline == probe[0] && r.Op == probe[1] {
				return r
			}
		}
		t.Fatal("the probe is not in the report")
		return OpRow{}
	}
	big := probed(price(append(builds, probeRow(0)), 0))
	small := probed(price(append(builds, probeRow(1)), 0))
	op := &p.Pipelines[probe[0]].Ops[probe[1]]
	bop := &p.Pipelines[build].Ops[buildOp]
	for _, c := range []struct {
		name  string
		got   OpRow
		table float64
	}{{"device 0 (4 Mi rows built)", big, 4 << 20}, {"device 1 (1000 rows built)", small, 1000}} {
		want := prof.Host.OpNs(op, 1600000, 100000, 16000, costmodel.TableBytes(bop, c.table), op.Fingerprint())
		if diff := c.got.PricedNs - want; diff > 1e-6*want || diff < -1e-6*want {
			t.Errorf("probe on %s: priced %g ns, want %g", c.name, c.got.PricedNs, want)
		}
	}
	// Two workers' files: device 0 of each built its own table; the probe
	// on the second worker's device 0 sees the second's (small) one.
	node0 := writeTimes(t, builds[:1])
	small1 := builds[1]
	small1.Device = 0
	probe0 := probeRow(0)
	rep, err := PriceOps(OpsOptions{Profile: "devbox-xeon", Data: dir, Times: []string{node0, writeTimes(t, []engine.OpTime{small1, probe0})}})
	if err != nil {
		t.Fatal(err)
	}
	if got := probed(rep); got.PricedNs != small.PricedNs {
		t.Errorf("probe on the second worker priced %g ns, want %g (its own worker's table)", got.PricedNs, small.PricedNs)
	}
	if !(big.PricedNs > small.PricedNs) {
		t.Errorf("probe of a table past the cache priced %g ns, of one in it %g: want more", big.PricedNs, small.PricedNs)
	}

	rows := []engine.OpTime{
		{Query: "q3", Run: 0, Pipeline: filter[0], Op: filter[1], Kind: "filter", InRows: 1000, InBytes: 8000, OutRows: 100, OutBytes: 800, Ns: 9e6, CPUNs: 8e6},
		{Query: "q3", Run: 1, Pipeline: filter[0], Op: filter[1], Kind: "filter", InRows: 1000, InBytes: 8000, OutRows: 100, OutBytes: 800, Ns: 1e4, CPUNs: 7e3},
		{Query: "q3", Run: 1, Pipeline: partial[0], Op: partial[1], Kind: engine.OpEmit, InRows: 50, InBytes: 800, Ns: 3e3, CPUNs: 2e3},
		{Query: "q3", Run: 0, Pipeline: -1, Op: -1, Kind: engine.OpQuery, Ns: 20e6, CPUNs: 30e6},
		{Query: "q3", Run: 1, Pipeline: -1, Op: -1, Kind: engine.OpQuery, Ns: 1e6, CPUNs: 1e6},
	}
	for _, warmup := range []int{0, 1} {
		rep := price(rows, warmup)
		var f, e OpRow
		for _, r := range rep.Rows {
			switch r.Kind {
			case "filter":
				f = r
			case engine.OpEmit:
				e = r
			}
		}
		if f.Runs != 2-warmup {
			t.Errorf("warmup %d: the filter counts %d runs, want %d", warmup, f.Runs, 2-warmup)
		}
		if want := []float64{8e6 + 7e3, 7e3}[warmup]; f.CPUNs != want || f.CPURatio() != f.CPUNs/f.PricedNs {
			t.Errorf("warmup %d: the filter's CPU %g ns (ratio %g), want %g (over %g priced)", warmup, f.CPUNs, f.CPURatio(), want, f.PricedNs)
		}
		if e.Runs != 1 || e.PricedNs != 0 || e.MeasuredNs != 3e3 {
			t.Errorf("warmup %d: emit %+v: want 1 run, 3 µs measured, unpriced", warmup, e)
		}
		for _, k := range rep.Kinds {
			if k.Name == engine.OpEmit || k.Name == engine.OpQuery {
				t.Errorf("warmup %d: %s in the kinds' totals", warmup, k.Name)
			}
		}
		// The process's CPU over the kept runs, less the filter's and the
		// emit's.
		q := rep.Queries[0]
		if want := []float64{31e6, 1e6}[warmup]; q.ProcessCPUNs != want || q.OutsideOpsNs() != want-f.CPUNs-2e3 {
			t.Errorf("warmup %d: process CPU %g, outside the operators %g: want %g and %g", warmup, q.ProcessCPUNs, q.OutsideOpsNs(), want, want-f.CPUNs-2e3)
		}
	}

	// A run without its CPU time leaves the operator's and its kind's
	// CPU unknown, not short.
	noCPU := append([]engine.OpTime(nil), rows...)
	noCPU[0].CPUNs = -1
	rep = price(noCPU, 0)
	for _, r := range rep.Rows {
		if r.Kind == "filter" && (r.CPUNs != -1 || r.CPURatio() != 0) {
			t.Errorf("a run without CPU time: the filter's CPU %g (ratio %g), want -1 (0)", r.CPUNs, r.CPURatio())
		}
	}
	for _, k := range rep.Kinds {
		if k.Name == "filter" && (k.CPUNs != -1 || k.CPURatio != 0) {
			t.Errorf("a run without CPU time: the filters' total CPU %g (ratio %g), want -1 (0)", k.CPUNs, k.CPURatio)
		}
	}
	var text strings.Builder
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "cpu/priced") {
		t.Errorf("text without the CPU columns:\n%s", text.String())
	}

	bad := []engine.OpTime{{Query: "q3", Run: 0, Pipeline: filter[0], Op: filter[1], Kind: "sort", InRows: 10, Ns: 1}}
	_, err = PriceOps(OpsOptions{Profile: "devbox-xeon", Data: dir, Times: []string{writeTimes(t, bad)}})
	if err == nil || !strings.Contains(err.Error(), "the times say sort") {
		t.Errorf("times of a sort where the plan has a filter: error %v", err)
	}
	if _, err := PriceOps(OpsOptions{Profile: "devbox-xeon", Data: dir, Times: []string{writeTimes(t, rows)}, Warmup: 5}); err == nil {
		t.Error("every run dropped as warm-up: no error")
	}
}
