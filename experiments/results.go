package experiments

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"gostachio/internal/atomicfile"
)

// Result is one finished run of an experiment: one query under one policy
// (and knob set, and sweep point) on one backend, one repetition.
type Result struct {
	// Key identifies the run within its spec (same key: same run; the
	// runner skips keys already in the store).
	Key string
	// Spec is the hash of the spec file the run came from.
	Spec string
	// Backend is "sim" or "engine"; Profile the hardware profile
	// (simulated, or the one an engine run is compared with); Machine the
	// host that ran it.
	Backend, Profile, Machine string
	Nodes                     int
	SF                        float64
	Query, Policy             string
	// Set is the knob overrides of the policy ("chunk=8MiB,depth=4");
	// Sweep the sweep point as "axis=value,..." ("" without sweep).
	Set, Sweep string
	Rep        int
	// Seconds is the makespan (sim) or wall time (engine); Bound the
	// overlap bound in seconds; Efficiency Bound/Seconds.
	Seconds, Bound, Efficiency float64
	// Util is the mean utilization per resource kind ("nvme" -> 0.93).
	Util map[string]float64
	// Started is the RFC 3339 time the run started.
	Started string
}

// resultColumns is the header of results.csv, in order.
var resultColumns = []string{"key", "spec", "backend", "profile", "machine", "nodes", "sf", "query", "policy",
	"set", "sweep", "rep", "seconds", "bound_seconds", "efficiency", "util", "started"}

// ResultsFile is the name of the results table in a results folder.
const ResultsFile = "results.csv"

// SweepValue returns the value of axis in r.Sweep ("" if absent).
func (r *Result) SweepValue(axis string) string {
	for _, kv := range strings.Split(r.Sweep, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok && k == axis {
			return v
		}
	}
	return ""
}

// Config is the run's configuration without the repetition: runs with
// equal Config are repetitions of one another.
func (r *Result) Config() string {
	return strings.Join([]string{r.Backend, r.Profile, strconv.Itoa(r.Nodes), strconv.FormatFloat(r.SF, 'g', -1, 64),
		r.Query, r.Policy, r.Set, r.Sweep}, "|")
}

func (r *Result) record() []string {
	util := make([]string, 0, len(r.Util))
	for k, v := range r.Util {
		util = append(util, k+"="+strconv.FormatFloat(v, 'g', 6, 64))
	}
	sort.Strings(util)
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	return []string{r.Key, r.Spec, r.Backend, r.Profile, r.Machine, strconv.Itoa(r.Nodes), f(r.SF), r.Query, r.Policy,
		r.Set, r.Sweep, strconv.Itoa(r.Rep), f(r.Seconds), f(r.Bound), f(r.Efficiency), strings.Join(util, ";"), r.Started}
}

func parseResult(rec []string) (Result, error) {
	var r Result
	var err error
	get := func(i int) string { return rec[i] }
	num := func(i int) float64 {
		if err != nil || rec[i] == "" {
			return 0
		}
		var v float64
		v, err = strconv.ParseFloat(rec[i], 64)
		if err != nil {
			err = fmt.Errorf("column %s: %w", resultColumns[i], err)
		}
		return v
	}
	r.Key, r.Spec, r.Backend, r.Profile, r.Machine = get(0), get(1), get(2), get(3), get(4)
	r.Nodes = int(num(5))
	r.SF = num(6)
	r.Query, r.Policy, r.Set, r.Sweep = get(7), get(8), get(9), get(10)
	r.Rep = int(num(11))
	r.Seconds, r.Bound, r.Efficiency = num(12), num(13), num(14)
	if u := get(15); u != "" {
		r.Util = map[string]float64{}
		for _, kv := range strings.Split(u, ";") {
			k, v, ok := strings.Cut(kv, "=")
			x, perr := strconv.ParseFloat(v, 64)
			if !ok || perr != nil {
				return r, fmt.Errorf("column util: bad entry %q", kv)
			}
			r.Util[k] = x
		}
	}
	r.Started = get(16)
	return r, err
}

// ReadResults reads dir/results.csv (or the CSV file dir itself). A
// missing file is an error; malformed rows are errors naming the line.
func ReadResults(path string) ([]Result, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, ResultsFile)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("experiments: results: %w", err)
	}
	defer f.Close()
	cr := csv.NewReader(f)
	cr.FieldsPerRecord = len(resultColumns)
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("experiments: results %s: header: %w", path, err)
	}
	for i, c := range resultColumns {
		if head[i] != c {
			return nil, fmt.Errorf("experiments: results %s: column %d is %q, want %q", path, i+1, head[i], c)
		}
	}
	var out []Result
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("experiments: results %s: %w", path, err)
		}
		r, err := parseResult(rec)
		if err != nil {
			line, _ := cr.FieldPos(0)
			return nil, fmt.Errorf("experiments: results %s line %d: %w", path, line, err)
		}
		out = append(out, r)
	}
}

// AppendResult appends r to dir/results.csv atomically: the new table
// (old rows + r) is written to a temporary file, synced, and renamed over
// the old one, so a run killed at any point leaves either the table
// before or after the append, never half a row.
func AppendResult(dir string, r Result) error {
	path := filepath.Join(dir, ResultsFile)
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("experiments: results: %w", err)
	}
	err = atomicfile.Write(path, func(out io.Writer) error {
		w := csv.NewWriter(out)
		if len(old) == 0 {
			w.Write(resultColumns)
		} else if _, err := out.Write(old); err != nil {
			return err
		}
		w.Write(r.record())
		w.Flush()
		return w.Error()
	})
	if err != nil {
		return fmt.Errorf("experiments: results: %w", err)
	}
	return nil
}
