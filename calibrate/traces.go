package calibrate

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gostachio/scheduler"
	"gostachio/traces"
)

// TraceSamples turns the engine traces in dir (*.json, *.csv, *.parquet;
// sim traces are skipped) into samples FitProfile fits:
//
//   - each data read: its bytes, and as depth the reads in flight when it
//     started (itself included), and Tasks = depth (one read: per-task
//     time = its duration);
//   - each h2d: bytes and duration;
//   - each kernel: its main operator (Event.Op), input bytes and
//     duration. A trace does not record a kernel's input rows nor how its
//     time splits over the fused operators, so the whole kernel is charged
//     to its main operator per input byte: a coarser model than the
//     micro-benchmarks' (docs/calibration.md).
//
// No file with engine events is an error.
func TraceSamples(dir string) ([]Sample, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("calibrate: traces: %w", err)
	}
	var out []Sample
	files := 0
	for _, e := range ents {
		ext := strings.ToLower(filepath.Ext(e.Name()))
		if e.IsDir() || (ext != ".json" && ext != ".csv" && ext != ".parquet") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		evs, meta, err := traces.Load(path)
		if err != nil {
			return nil, fmt.Errorf("calibrate: traces: %w", err)
		}
		if meta.Backend != "" && meta.Backend != "engine" {
			continue
		}
		files++
		for _, run := range traces.Runs(evs) {
			out = append(out, runSamples(e.Name(), traces.FilterRun(evs, run))...)
		}
	}
	if files == 0 || len(out) == 0 {
		return nil, fmt.Errorf("calibrate: traces: no engine trace with tasks in %s", dir)
	}
	return out, nil
}

func runSamples(file string, evs []traces.Event) []Sample {
	var out []Sample
	var reads []traces.Event
	for _, e := range evs {
		if e.Kind == scheduler.TaskRead && !e.Meta && e.Bytes > 0 {
			reads = append(reads, e)
		}
	}
	sort.Slice(reads, func(i, j int) bool { return reads[i].Start < reads[j].Start })
	for i, r := range reads {
		depth := 1
		for j := 0; j < i; j++ {
			if reads[j].End > r.Start {
				depth++
			}
		}
		if d := r.Duration(); d > 0 {
			out = append(out, Sample{Component: CompRead, Case: file + " " + r.Run, Bytes: r.Bytes, Depth: depth, Tasks: depth, Ns: d})
		}
	}
	for _, e := range evs {
		d := e.Duration()
		if d <= 0 {
			continue
		}
		switch e.Kind {
		case scheduler.TaskH2D:
			out = append(out, Sample{Component: CompH2D, Case: file + " " + e.Run, Bytes: e.Bytes, Ns: d})
		case scheduler.TaskKernel:
			if e.Op != "" {
				out = append(out, Sample{Component: CompKernel, Op: e.Op, Case: file + " " + e.Run, Bytes: e.Bytes, Ns: d})
			}
		}
	}
	return out
}
