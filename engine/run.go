package engine

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"gostachio/dataset"
	"gostachio/engine/gpu"
	"gostachio/internal/atomicfile"
	"gostachio/internal/machine"
	"gostachio/internal/units"
	"gostachio/plan"
	"gostachio/traces"
)

// RunOptions are the options of `gostachio query`.
type RunOptions struct {
	Data string
	// Catalog builds the plans of the queries named (tpch/queries.Catalog).
	Catalog plan.Catalog
	// Query is a name of Catalog ("q1"), a comma-separated list, or "all".
	Query string
	// Format of the results on stdout: "table" (default), "csv", "json".
	Format string
	// Trace writes a Perfetto/Chrome JSON trace to this path (with several
	// queries: one file per query, the query name before the extension).
	Trace string
	// OpTimes writes every operator the host ran, in every query, to this
	// CSV (OpTimes.WriteCSV), once all have run.
	OpTimes string
	// UseGPU runs the queries' scan pipelines on CUDA device GPUOrdinal
	// (the zero value: the CPU engine); GPUMem caps its device memory (0:
	// 90% of what is free).
	UseGPU     bool
	GPUOrdinal int
	GPUMem     int64
	QueryOptions
}

// ParseQueries expands "all" (or "") into the known names and a
// comma-separated list into names, lowercased, "q01" as "q1"; a name not
// among known is an error (ErrUnknownQuery) listing them.
func ParseQueries(spec string, known []string) ([]string, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, fmt.Errorf("engine: no query given (--query q1,q6, or all)")
	}
	if spec == "all" {
		return append([]string(nil), known...), nil
	}
	var out []string
	for _, q := range strings.Split(spec, ",") {
		q = strings.ToLower(strings.TrimSpace(q))
		if len(q) == 3 && q[1] == '0' { // q01 -> q1
			q = "q" + q[2:]
		}
		if !slices.Contains(known, q) {
			return nil, fmt.Errorf("%w %q (known: %s, all)", ErrUnknownQuery, q, plan.Catalog{Names: known}.Known())
		}
		out = append(out, q)
	}
	return out, nil
}

// RunQueries runs the queries of opts and prints each result on stdout in
// the chosen format and a timing summary on stderr.
func RunQueries(ctx context.Context, opts RunOptions, stdout, stderr io.Writer) error {
	names, err := ParseQueries(opts.Query, opts.Catalog.Names)
	if err != nil {
		return err
	}
	if err := CheckFormat(opts.Format); err != nil {
		return err
	}
	for _, out := range []struct{ flag, path string }{{"--trace", opts.Trace}, {"--op-times", opts.OpTimes}} {
		if out.path == "" {
			continue
		}
		if err := atomicfile.CheckDir(out.path); err != nil {
			return fmt.Errorf("engine: %s: %w", out.flag, err)
		}
	}
	ds, err := dataset.Open(opts.Data)
	if err != nil {
		return err
	}
	if opts.Log == nil {
		opts.Log = stderr
	}
	defer TuneGC()()
	FitHeapLimit(ds)
	if opts.UseGPU && opts.Devices == 0 && !opts.GPUHybrid {
		// One scheduler device per GPU (its copy and kernel streams
		// overlap units already); more only multiply the streams. A hybrid
		// run keeps the CPU engine's one per core: the host runs its
		// probes, aggregations and exchanges, one worker per device.
		opts.Devices = 1
	}
	if opts.UseGPU && opts.GPU == nil {
		dev, err := gpu.Open(opts.GPUOrdinal, opts.GPUMem)
		if err != nil {
			return fmt.Errorf("engine: --gpu %d: %w", opts.GPUOrdinal, err)
		}
		defer dev.Close()
		opts.GPU = dev
		fmt.Fprintf(stderr, "GPU %d: %s (%d SMs), device memory budget %s, pipelines %s\n", opts.GPUOrdinal, dev.Info().Name,
			dev.Info().SMs, units.FormatBytes(dev.Budget()), dev.JIT())
		if opts.Allocator == nil && opts.Reader == nil {
			// Reads land in pinned memory; released after the reader
			// (deferred below, so it runs first).
			pool, unpin, err := dev.PinnedPool(opts.Mem / 4)
			if err != nil {
				return fmt.Errorf("engine: --gpu %d: %w", opts.GPUOrdinal, err)
			}
			defer unpin()
			opts.Allocator = pool
		}
	}
	if opts.Reader == nil {
		r, err := OpenSession(ctx, ds, opts.QueryOptions)
		if err != nil {
			return err
		}
		defer r.Close()
		opts.Reader = r
	}
	var results []*QueryResult
	tracePaths := traces.NewQueryPaths(opts.Trace, names)
	if opts.OpTimes != "" && opts.QueryOptions.OpTimes == nil {
		opts.QueryOptions.OpTimes = &OpTimes{}
	}
	for run, name := range names {
		qo := opts.QueryOptions
		if qo.OpTimes != nil {
			qo.OpTimes.SetRun(run)
		}
		var tr *traces.Recorder
		if opts.Trace != "" {
			tr = &traces.Recorder{Run: name + "/" + qo.Policy}
			qo.Trace = tr
		}
		p, err := BuildQuery(ds, opts.Catalog, name)
		if err != nil {
			return err
		}
		r, err := Query(ctx, ds, p, qo)
		if err != nil {
			return err
		}
		if tr != nil {
			path := tracePaths.Next(name)
			meta := traces.Meta{Title: fmt.Sprintf("engine %s %s on %s", name, r.Policy, ds.Dir), Backend: "engine", Machine: machine.Name()}
			if err := traces.Save(path, tr.Events, meta); err != nil {
				return fmt.Errorf("engine: %w", err)
			}
		}
		fmt.Fprintf(stderr, "%s: %d rows in %.3f s (policy %s, %d tasks, read %s, peak intermediate %s)\n",
			name, r.Batch.Rows, r.Wall.Seconds(), r.Policy, r.Sched.Tasks,
			units.FormatBytes(r.IOBytes), units.FormatBytes(r.PeakRetained))
		if r.GPU != nil {
			fmt.Fprintln(stderr, FormatPlacement(name, r.GPU))
		}
		if opts.Format != "json" {
			if len(names) > 1 {
				fmt.Fprintf(stdout, "-- %s\n", name)
			}
			if err := WriteResult(stdout, r, opts.Format); err != nil {
				return err
			}
		}
		results = append(results, r)
	}
	if opts.OpTimes != "" {
		if err := atomicfile.Write(opts.OpTimes, opts.QueryOptions.OpTimes.WriteCSV); err != nil {
			return fmt.Errorf("engine: --op-times: %w", err)
		}
		fmt.Fprintf(stderr, "operator times: %s (%d operator runs)\n", opts.OpTimes, len(opts.QueryOptions.OpTimes.Rows()))
	}
	if opts.Format == "json" {
		return writeJSON(stdout, results)
	}
	return nil
}

// CheckFormat rejects a result format WriteResult does not know.
func CheckFormat(format string) error {
	switch format {
	case "", "table", "csv", "json":
		return nil
	}
	return fmt.Errorf("engine: unknown format %q (table, csv, json)", format)
}

// WriteResult prints one result as an aligned table or CSV (with header).
func WriteResult(w io.Writer, r *QueryResult, format string) error {
	rows := r.Rows()
	if format == "csv" {
		cw := csv.NewWriter(w)
		cw.Write(r.Columns)
		cw.WriteAll(rows)
		return cw.Error()
	}
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.Debug)
	fmt.Fprintln(tw, strings.Join(r.Columns, "\t"))
	for _, row := range rows {
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}

type jsonResult struct {
	Query    string     `json:"query"`
	Policy   string     `json:"policy"`
	Columns  []string   `json:"columns"`
	Rows     [][]string `json:"rows"`
	Seconds  float64    `json:"seconds"`
	Tasks    int64      `json:"tasks"`
	IOBytes  int64      `json:"io_bytes"`
	PeakData int64      `json:"peak_intermediate_bytes"`
	// GPU: where each scan pipeline ran (GPU runs only).
	GPU []GPUPlacement `json:"gpu_placement,omitempty"`
	// CPUNs is QueryResult.CPUNs (omitted when unknown).
	CPUNs int64 `json:"cpu_ns,omitempty"`
}

func writeJSON(w io.Writer, rs []*QueryResult) error {
	out := make([]jsonResult, len(rs))
	for i, r := range rs {
		out[i] = jsonResult{Query: r.Query, Policy: r.Policy, Columns: r.Columns, Rows: r.Rows(),
			Seconds: r.Wall.Seconds(), Tasks: r.Sched.Tasks, IOBytes: r.IOBytes, PeakData: r.PeakRetained, GPU: r.GPU, CPUNs: max(r.CPUNs, 0)}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
