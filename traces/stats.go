package traces

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"gostachio/internal/atomicfile"
	"gostachio/internal/units"
)

// Load reads a trace file by its extension: ".json" Chrome trace JSON
// (ReadChrome: this package's format or the simulator's earlier one),
// ".csv" CSV (ReadCSV; its Meta is empty), ".parquet" Parquet
// (ReadParquet).
func Load(path string) ([]Event, Meta, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, Meta{}, fmt.Errorf("traces: %w", err)
	}
	defer f.Close()
	switch strings.ToLower(filepath.Ext(path)) {
	case ".json":
		ev, m, err := ReadChrome(f)
		if err != nil {
			return nil, Meta{}, fmt.Errorf("%s: %w", path, err)
		}
		return ev, m, nil
	case ".csv":
		ev, err := ReadCSV(f)
		if err != nil {
			return nil, Meta{}, fmt.Errorf("%s: %w", path, err)
		}
		return ev, Meta{}, nil
	case ".parquet":
		st, err := f.Stat()
		if err != nil {
			return nil, Meta{}, fmt.Errorf("traces: %w", err)
		}
		ev, m, err := ReadParquet(f, st.Size())
		if err != nil {
			return nil, Meta{}, fmt.Errorf("%s: %w", path, err)
		}
		return ev, m, nil
	}
	return nil, Meta{}, fmt.Errorf("traces: %s: unknown trace format (want .json, .csv or .parquet)", path)
}

// Save writes events to path in the format its extension names (as
// Load reads them; CSV drops meta). It writes a temporary file next to
// path and renames it into place, so path is never left half-written.
func Save(path string, events []Event, meta Meta) error {
	var write func(io.Writer) error
	switch strings.ToLower(filepath.Ext(path)) {
	case ".json":
		write = func(w io.Writer) error { return WriteChrome(w, events, meta) }
	case ".csv":
		write = func(w io.Writer) error { return WriteCSV(w, events) }
	case ".parquet":
		write = func(w io.Writer) error { return WriteParquet(w, events, meta) }
	default:
		return fmt.Errorf("traces: %s: unknown trace format (want .json, .csv or .parquet)", path)
	}
	if err := atomicfile.Write(path, write); err != nil {
		return fmt.Errorf("traces: %w", err)
	}
	return nil
}

// Convert reads the trace at in and writes it to out, each in the format
// its extension names (Load, Save): e.g. a Chrome trace to Parquet for
// pandas / DuckDB. It returns the number of events converted.
func Convert(in, out string) (events int, err error) {
	evs, meta, err := Load(in)
	if err != nil {
		return 0, err
	}
	return len(evs), Save(out, evs, meta)
}

// StatsOptions configure Stats.
type StatsOptions struct {
	// JSON prints a StatsReport as JSON instead of text.
	JSON bool
	// Slots is the CPU slot count of Overlap; 0 estimates it per run with
	// CPUSlots.
	Slots int
}

// RunStats are the metrics of one run of a trace.
type RunStats struct {
	Run        string            `json:"run"`
	Events     int               `json:"events"`
	Makespan   int64             `json:"makespan_ns"`
	Resources  []ResourceStat    `json:"resources"`
	Slots      int               `json:"slots"`
	Overlap    OverlapStat       `json:"overlap"`
	Starvation []StageStarvation `json:"starvation"`
	Critical   PathSummary       `json:"critical_path"`
}

// StatsReport is what Stats prints with JSON.
type StatsReport struct {
	Path string     `json:"path"`
	Meta Meta       `json:"meta"`
	Runs []RunStats `json:"runs"`
}

// Analyze computes the metrics of every run of events (in order of first
// appearance); slots as in StatsOptions. Starvation queue series are left
// out (nil Queue) to keep the report small.
func Analyze(events []Event, slots int) []RunStats {
	var out []RunStats
	for _, run := range Runs(events) {
		ev := FilterRun(events, run)
		rs := RunStats{Run: run, Events: len(ev), Makespan: Makespan(ev)}
		rs.Resources = Resources(ev, rs.Makespan)
		rs.Slots = slots
		if rs.Slots <= 0 {
			rs.Slots = CPUSlots(ev)
		}
		rs.Overlap = Overlap(ev, rs.Slots)
		rs.Starvation = Starvation(ev)
		for i := range rs.Starvation {
			rs.Starvation[i].Queue = nil
		}
		rs.Critical = SummarizePath(CriticalPath(ev))
		out = append(out, rs)
	}
	return out
}

// Stats loads the trace at path (see Load) and prints, per run: the
// makespan, a per-resource table, the overlap, the starvation report and
// the critical path's time per task kind; with opts.JSON a StatsReport.
func Stats(path string, opts StatsOptions, w io.Writer) error {
	events, meta, err := Load(path)
	if err != nil {
		return err
	}
	rep := StatsReport{Path: path, Meta: meta, Runs: Analyze(events, opts.Slots)}
	if opts.JSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return WriteStats(w, rep)
}

// WriteStats prints a StatsReport as text.
func WriteStats(w io.Writer, rep StatsReport) error {
	ew := &errWriter{w: w}
	title := rep.Meta.Title
	if title == "" {
		title = "(untitled)"
	}
	ew.printf("trace %s: %s", rep.Path, title)
	if s := rep.Meta.String(); s != "" {
		ew.printf(" (%s)", s)
	}
	ew.printf("\n")
	if len(rep.Runs) == 0 {
		ew.printf("no events\n")
	}
	for _, rs := range rep.Runs {
		ew.printf("\n")
		if rs.Run != "" || len(rep.Runs) > 1 {
			ew.printf("run %q\n", rs.Run)
		}
		ew.printf("makespan   %s (%d tasks)\n", fmtNs(rs.Makespan), rs.Events)
		o := rs.Overlap
		ew.printf("overlap    io busy %s, cpu work %s (%d slots), bound %s, efficiency %.1f%%\n\n",
			fmtNs(o.IOBusy), fmtNs(o.CPUWork), rs.Slots, fmtNs(o.Bound), 100*o.Efficiency)
		tw := tabwriter.NewWriter(ew.w, 0, 0, 2, ' ', tabwriter.AlignRight)
		if ew.err == nil {
			fmt.Fprintf(tw, "resource\ttasks\tbusy\tutil\twork\tpeak\tbytes\tbandwidth\t\n")
			for _, r := range rs.Resources {
				fmt.Fprintf(tw, "%s\t%d\t%s\t%.1f%%\t%s\t%d\t%s\t%s/s\t\n", r.Name, r.Tasks, fmtNs(r.Busy),
					100*r.Utilization, fmtNs(r.Work), r.Peak, units.FormatBytes(r.Bytes), units.FormatBytes(int64(r.Bandwidth)))
			}
			ew.err = tw.Flush()
		}
		ew.printf("\nstarvation (consumer <- producer: idle waiting on the producer / idle with data ready)\n")
		if len(rs.Starvation) == 0 {
			ew.printf("  no unit stages\n")
		}
		if ew.err == nil {
			ew.err = WriteStarvation(indent{ew.w}, rs.Starvation)
		}
		c := rs.Critical
		ew.printf("\ncritical path: %d tasks ending at %s:", c.Tasks, fmtNs(c.End))
		for _, k := range c.ByKind {
			ew.printf(" %s %s (%.1f%%, %d)", k.Kind, fmtNs(k.Time), pct(k.Time, c.End), k.Tasks)
		}
		ew.printf(" waiting %s (%.1f%%)\n", fmtNs(c.Wait), pct(c.Wait, c.End))
	}
	return ew.err
}

// indent prefixes every line written with two spaces (writes must end
// lines, as WriteStarvation's do).
type indent struct{ w io.Writer }

func (i indent) Write(b []byte) (int, error) {
	s := strings.ReplaceAll(string(b), "\n", "\n  ")
	s = "  " + strings.TrimSuffix(s, "  ")
	if _, err := io.WriteString(i.w, s); err != nil {
		return 0, err
	}
	return len(b), nil
}
