package demo

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"gostachio/dataset"
	"gostachio/internal/stats"
)

// TestDemo runs the demo on a tiny dataset and checks its report: every
// query on both setups under both policies, serial as the speedup baseline,
// overlap never slower than serial, and a trace file Perfetto can parse.
func TestDemo(t *testing.T) {
	root := t.TempDir()
	var out jsonBuffer
	err := Demo(context.Background(), DemoOptions{Data: filepath.Join(root, "data"), Out: filepath.Join(root, "out"),
		SF: 0.002, ChunkRows: 1024, ClusterSF: 10, Rounds: 3, JSON: true}, &out, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var rep DemoReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("demo JSON: %v", err)
	}
	if want := 3 * 2 * 2; len(rep.Rows) != want {
		t.Fatalf("%d rows, want %d (3 queries x 2 setups x 2 policies)", len(rep.Rows), want)
	}
	for i := 0; i < len(rep.Rows); i += 2 {
		s, o := rep.Rows[i], rep.Rows[i+1]
		if s.Policy != "serial" || o.Policy != "overlap" || s.Query != o.Query || s.Profile != o.Profile {
			t.Fatalf("rows %d,%d are not a serial/overlap pair: %+v %+v", i, i+1, s, o)
		}
		if s.Profile != "dgx-a100" {
			// The dataset's own size: measured on the engine too; the
			// speedup is the engine's (measured, so no bound on it).
			for _, r := range []DemoRow{s, o} {
				if len(r.EngineRoundsMs) != 3 || r.EngineMs != stats.Median(r.EngineRoundsMs) {
					t.Errorf("%s %s on devbox: engine %.3f ms from rounds %v: want the median of 3", r.Query, r.Policy, r.EngineMs, r.EngineRoundsMs)
				}
			}
			if s.EngineMs <= 0 || o.EngineMs <= 0 || s.Speedup != 1 || o.Speedup != s.EngineMs/o.EngineMs {
				t.Errorf("%s on devbox: engine serial %.3f ms, overlap %.3f ms, speedups %.3f/%.3f", s.Query, s.EngineMs, o.EngineMs, s.Speedup, o.Speedup)
			}
			if want := 100 * (o.SimMs - o.EngineMs) / o.EngineMs; o.ErrorPct != want {
				t.Errorf("%s on devbox: error %.1f%%, want %.1f%%", o.Query, o.ErrorPct, want)
			}
		} else if s.EngineMs != 0 || s.Speedup != 1 || o.Speedup != s.SimMs/o.SimMs || o.Speedup < 1 {
			t.Errorf("%s on %s: serial %.3f ms, overlap %.3f ms, speedups %.3f/%.3f", s.Query, s.Profile, s.SimMs, o.SimMs, s.Speedup, o.Speedup)
		}
		if o.Efficiency <= 0 || o.Efficiency > 1 {
			t.Errorf("%s on %s: overlap efficiency %v outside (0,1]", o.Query, o.Profile, o.Efficiency)
		}
	}
	ds, err := dataset.Open(filepath.Join(root, "data"))
	if err != nil {
		t.Fatal(err)
	}
	checkDemoSQL(t, ds, rep.SQL)
	for _, path := range []string{rep.Trace, rep.EngineTrace} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var trace struct {
			TraceEvents []map[string]any `json:"traceEvents"`
		}
		if err := json.Unmarshal(b, &trace); err != nil || len(trace.TraceEvents) == 0 {
			t.Fatalf("trace %s: %v, %d events", path, err, len(trace.TraceEvents))
		}
	}
}
