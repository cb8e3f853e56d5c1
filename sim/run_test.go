package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gostachio/plan"
	"gostachio/tpch/queries"
)

// TestRunSim runs the CLI entry point in JSON mode with a trace and checks
// the report's invariants and the trace's structure: valid JSON, one slice
// per completed task, and no two slices overlapping on one track.
func TestRunSim(t *testing.T) {
	dir := t.TempDir()
	tracePath := filepath.Join(dir, "q6.json")
	var out bytes.Buffer
	err := RunSim(context.Background(), SimOptions{Profile: "dgx-a100", Nodes: 2, SF: 10, Plan: tpchPlan(t, "q6", 10),
		Policy: "overlap", Set: "depth=4", Trace: tracePath, JSON: true}, &out)
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, out.String())
	}
	if rep.Nodes != 2 || rep.Query != "q6" || rep.Policy != "overlap" || rep.ResultRows != 1 {
		t.Fatalf("report header %+v", rep)
	}
	if rep.MakespanNs <= 0 || rep.BoundNs > rep.MakespanNs || rep.Efficiency <= 0 || rep.Efficiency > 1 {
		t.Fatalf("makespan %d, bound %d, efficiency %v", rep.MakespanNs, rep.BoundNs, rep.Efficiency)
	}
	// Lineitem's four projected columns at SF10: every byte is read once:
	// 59,986,052 rows x (8+8+8+4) B (l_quantity, l_extendedprice,
	// l_discount decimals, l_shipdate date32), plus metadata reads.
	var nvme ResourceReport
	for _, r := range rep.Resources {
		if r.Kind == "nvme" {
			nvme = r
		}
	}
	dataBytes := 59986052.0 * 28
	if nvme.Count != 16 || nvme.Work < dataBytes || nvme.Work > dataBytes*1.01 {
		t.Fatalf("nvme: %d links, %.0f B read, want 16 and about %.0f", nvme.Count, nvme.Work, dataBytes)
	}

	data, err := os.ReadFile(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	var tr struct {
		TraceEvents []struct {
			Name string  `json:"name"`
			Ph   string  `json:"ph"`
			Ts   float64 `json:"ts"`
			Dur  float64 `json:"dur"`
			Pid  int     `json:"pid"`
			Tid  int     `json:"tid"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(data, &tr); err != nil {
		t.Fatalf("trace is not JSON: %v", err)
	}
	type track struct{ pid, tid int }
	last := map[track]float64{}
	var slices int64
	for _, e := range tr.TraceEvents {
		if e.Ph != "X" {
			continue
		}
		slices++
		k := track{e.Pid, e.Tid}
		if end, ok := last[k]; ok && e.Ts < end-1e-3 {
			t.Fatalf("slice %s at %v overlaps the previous one on pid %d tid %d (ends %v)", e.Name, e.Ts, e.Pid, e.Tid, end)
		}
		last[k] = max(last[k], e.Ts+e.Dur)
	}
	if slices != rep.Tasks {
		t.Fatalf("trace has %d slices, report %d tasks", slices, rep.Tasks)
	}

	// Text mode names the bound and every resource kind.
	out.Reset()
	if err := RunSim(context.Background(), SimOptions{Profile: "devbox", SF: 1, Plan: tpchPlan(t, "q1", 1), Policy: "serial"}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"makespan", "bound", "efficiency", "nvme", "host", "h2d"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, out.String())
		}
	}
	if err := RunSim(context.Background(), SimOptions{Profile: "dgx-a100", SF: 1}, &out); err == nil {
		t.Error("a run without a plan accepted")
	}
}

// TestRunSimTables: a plan built over given tables runs on their layout: uneven lineitem chunks, one of which min/max pruning
// drops for q6, and the scale factor inferred from the orders table. The
// SSDs must move exactly the four projected lineitem columns of the
// surviving chunks plus the one table-metadata read (combining off, so no
// gaps are read through).
func TestRunSimTables(t *testing.T) {
	tables, err := queries.Stats(0.1, 100_000)
	if err != nil {
		t.Fatal(err)
	}
	var li *plan.TableStats
	for i := range tables {
		if tables[i].Name == "lineitem" {
			li = &tables[i]
		}
	}
	// Re-chunk lineitem unevenly: 600,122 rows as 250,000 + 50,122 +
	// 300,000, the first dated entirely in 1992 (q6 wants 1994).
	rows := []int64{250_000, 50_122, 300_000}
	if li.Rows() != 600_122 {
		t.Fatalf("lineitem has %d rows at SF 0.1", li.Rows())
	}
	per := make([]float64, len(li.Columns)) // bytes per row of each column
	for c := range li.Columns {
		per[c] = float64(li.Chunks[0].Bytes[c]) / float64(li.Chunks[0].Rows)
	}
	ship := li.Column("l_shipdate")
	var base int64
	li.Chunks = li.Chunks[:0]
	for i, r := range rows {
		ch := plan.ChunkStats{Rows: r, Base: base, Bytes: make([]int64, len(per))}
		for c := range per {
			ch.Bytes[c] = int64(float64(r) * per[c])
			base += ch.Bytes[c]
		}
		if i == 0 {
			ch.Stats = make([]plan.MinMax, len(per))
			ch.Stats[ship] = plan.MinMax{Valid: true, Min: plan.Day(1992, time.January, 2), Max: plan.Day(1992, time.December, 31)}
		}
		li.Chunks = append(li.Chunks, ch)
	}
	var want float64 = 64 << 10 // metadata read
	for _, name := range []string{"l_shipdate", "l_discount", "l_quantity", "l_extendedprice"} {
		c := li.Column(name)
		want += float64(li.Chunks[1].Bytes[c] + li.Chunks[2].Bytes[c])
	}
	var out bytes.Buffer
	p, sf, err := queries.Sized("q6", 0, 12345, tables)
	if err != nil {
		t.Fatal(err)
	}
	err = RunSim(context.Background(), SimOptions{Profile: "dgx-a100", Plan: p, SF: sf, Policy: "overlap",
		Set: "combine=off", JSON: true}, &out)
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.SF != 0.1 {
		t.Errorf("scale factor %v, want 0.1 (orders rows / 1.5M)", rep.SF)
	}
	var nvme float64
	for _, r := range rep.Resources {
		if r.Kind == "nvme" {
			nvme = r.Work
		}
	}
	if nvme != want {
		t.Errorf("nvme work %v bytes, want %v", nvme, want)
	}
	if rep.ResultRows != 1 {
		t.Errorf("q6 result %d rows, want 1", rep.ResultRows)
	}
}

// TestRunCPUSlowdown: --cpu-slowdown scales the host's compute prices, so
// a query whose kernels run on the host (devbox) takes longer at 2 and
// shorter at 0.5; a factor that is not positive is an error naming it.
func TestRunCPUSlowdown(t *testing.T) {
	ms := func(f float64) int64 {
		t.Helper()
		r, err := RunReport(context.Background(), SimOptions{Profile: "devbox", Plan: tpchPlan(t, "q1", 0.1), SF: 0.1, CPUSlowdown: f})
		if err != nil {
			t.Fatal(err)
		}
		return r.MakespanNs
	}
	base, slow, fast := ms(0), ms(2), ms(0.5)
	if !(slow > base && fast < base) {
		t.Errorf("makespans: %d as profiled, %d at x2, %d at x0.5", base, slow, fast)
	}
	if one := ms(1); one != base {
		t.Errorf("x1: %d, as profiled %d", one, base)
	}
	for _, f := range []float64{-1, math.Inf(1)} {
		if _, err := RunReport(context.Background(), SimOptions{Profile: "devbox", Plan: tpchPlan(t, "q1", 0.1), SF: 0.1, CPUSlowdown: f}); err == nil || !strings.Contains(err.Error(), "--cpu-slowdown") {
			t.Errorf("factor %v: err %v", f, err)
		}
	}
}

// TestRunDiskSpeedup: --disk-speedup scales the NVMe bandwidth, so a
// scan-bound query (q6 on devbox) takes longer at 0.5 and shorter at 2,
// and its read time scales exactly where nothing else bounds it; a factor
// that is not positive is an error naming it.
func TestRunDiskSpeedup(t *testing.T) {
	ms := func(f float64) int64 {
		t.Helper()
		r, err := RunReport(context.Background(), SimOptions{Profile: "devbox", Plan: tpchPlan(t, "q6", 0.1), SF: 0.1, DiskSpeedup: f})
		if err != nil {
			t.Fatal(err)
		}
		return r.MakespanNs
	}
	base, slow, fast := ms(0), ms(0.5), ms(2)
	if !(slow > base && fast < base) {
		t.Errorf("makespans: %d as profiled, %d at x0.5, %d at x2", base, slow, fast)
	}
	if one := ms(1); one != base {
		t.Errorf("x1: %d, as profiled %d", one, base)
	}
	for _, f := range []float64{-1, math.Inf(1), math.NaN()} {
		if _, err := RunReport(context.Background(), SimOptions{Profile: "devbox", Plan: tpchPlan(t, "q6", 0.1), SF: 0.1, DiskSpeedup: f}); err == nil || !strings.Contains(err.Error(), "--disk-speedup") {
			t.Errorf("factor %v: err %v", f, err)
		}
	}
}

// TestRunReportPlace: SimOptions.Place places the planned query before
// the run (here every scan pipeline on the host: no GPU work left), and
// a profile that does not model the GPU backend refuses it.
func TestRunReportPlace(t *testing.T) {
	onHost := func(p *plan.Plan) error {
		for i := range p.Pipelines {
			if p.Pipelines[i].Source.Kind == plan.SourceScan {
				p.Pipelines[i].OnHost = true
			}
		}
		return nil
	}
	gpuWork := func(place func(*plan.Plan) error) float64 {
		rep, err := RunReport(context.Background(), SimOptions{Profile: "h200-gpu-calibrated", SF: 1, Plan: tpchPlan(t, "q6", 1), Place: place})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rep.Resources {
			if r.Kind == "gpu" {
				return r.Work
			}
		}
		t.Fatal("no gpu resource in the report")
		return 0
	}
	if w := gpuWork(nil); w <= 0 {
		t.Errorf("as planned: gpu work %v, want the scan's kernels", w)
	}
	if w := gpuWork(onHost); w != 0 {
		t.Errorf("placed on the host: gpu work %v, want none", w)
	}
	_, err := RunReport(context.Background(), SimOptions{Profile: "devbox", SF: 1, Plan: tpchPlan(t, "q6", 1), Place: onHost})
	if err == nil || !strings.Contains(err.Error(), "gpu_scans_only") {
		t.Errorf("placement on a CPU profile: %v, want a refusal naming gpu_scans_only", err)
	}
}

// tpchPlan is TPC-H query q over tables sized at scale factor sf.
func tpchPlan(t *testing.T, q string, sf float64) *plan.Plan {
	t.Helper()
	p, _, err := queries.Sized(q, sf, DefaultChunkRows, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
