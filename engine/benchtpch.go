package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"

	"gostachio/dataset"
	"gostachio/internal/machine"
	"gostachio/internal/stats"
	"gostachio/plan"
	"gostachio/scheduler"
)

// BenchTPCHOptions configure `gostachio bench tpch`.
type BenchTPCHOptions struct {
	Data string
	// Catalog builds the plans of Queries (tpch/queries.Catalog).
	Catalog plan.Catalog
	// Queries: "all" or a list (see ParseQueries).
	Queries string
	// Policies compared (default serial, overlap); the first is the
	// baseline of the speedup, the last is the one compared with DuckDB.
	Policies []string
	// Set applies knob overrides to every policy.
	Set string
	// Rounds of every (query, system) pair, in a new random order each
	// round (machines drift; interleaving spreads it over all systems).
	Rounds int
	Seed   uint64
	// DuckDB is the duckdb-tpch binary (experiments/peers/duckdb); ""
	// looks for bin/duckdb-tpch next to this executable and on PATH;
	// "none" runs no peer.
	DuckDB string
	// Parquet is the folder of the Parquet export DuckDB reads (default
	// DATA/parquet, exported first if missing).
	Parquet string
	Devices int
	Mem     int64
	JSON    bool
}

// BenchQuery is one query's figures: medians over the rounds.
type BenchQuery struct {
	Query string `json:"query"`
	// Seconds per policy (wall time of the run, storage reads cold).
	Seconds map[string]float64 `json:"seconds"`
	// Efficiency per policy: overlap bound / makespan (see Overlap).
	Efficiency map[string]float64 `json:"overlap_efficiency"`
	// DuckDBSeconds is DuckDB's time over the Parquet export after a cache
	// drop (0: not run).
	DuckDBSeconds float64 `json:"duckdb_seconds,omitempty"`
	// Speedup is first policy / last policy; VsDuckDB last policy / DuckDB.
	Speedup  float64 `json:"speedup"`
	VsDuckDB float64 `json:"ours_over_duckdb,omitempty"`
	Rows     int     `json:"rows"`
}

// BenchReport is the whole benchmark.
type BenchReport struct {
	Data     string       `json:"data"`
	Machine  string       `json:"machine"`
	Policies []string     `json:"policies"`
	Rounds   int          `json:"rounds"`
	Queries  []BenchQuery `json:"queries"`
	// Geomean per system name (policies and "duckdb").
	Geomean map[string]float64 `json:"geomean_seconds"`
}

type eventLog struct{ ev []scheduler.Event }

func (l *eventLog) Record(e scheduler.Event) { l.ev = append(l.ev, e) }

// BenchTPCH runs every query under every policy and in DuckDB, cold, in
// one process and one run, and prints per-query times, the speedup of the
// last policy over the first, ours/DuckDB, and overlap efficiency.
func BenchTPCH(ctx context.Context, opts BenchTPCHOptions, stdout, stderr io.Writer) error {
	if len(opts.Policies) == 0 {
		opts.Policies = []string{"serial", "overlap"}
	}
	if opts.Rounds <= 0 {
		opts.Rounds = 1
	}
	names, err := ParseQueries(opts.Queries, opts.Catalog.Names)
	if err != nil {
		return err
	}
	for _, p := range opts.Policies {
		if _, err := scheduler.NewPolicy(p, opts.Set); err != nil {
			return err
		}
	}
	ds, err := dataset.Open(opts.Data)
	if err != nil {
		return err
	}
	duck, err := findDuckDB(opts.DuckDB)
	if err != nil {
		return err
	}
	pq := opts.Parquet
	if duck != "" {
		if pq == "" {
			pq = filepath.Join(ds.Dir, "parquet")
		}
		if m, err := dataset.ReadExport(pq); err != nil || m.ManifestDigest != ds.Manifest.Digest || m.ManifestDigest == "" {
			// Not a complete export of this very data: (re)write it,
			// replacing our own export folder or an export of other data,
			// never a folder of the user's that is not an export.
			force := opts.Parquet == "" || err == nil
			fmt.Fprintf(stderr, "exporting %s to Parquet in %s for DuckDB\n", ds.Dir, pq)
			if err := dataset.Export(ds, pq, dataset.ExportOptions{Force: force}, stderr); err != nil {
				return err
			}
		}
	}
	qo := QueryOptions{Devices: opts.Devices, Mem: opts.Mem, Set: opts.Set, Log: stderr, NoVerify: true}
	qo, closeSession, err := benchSession(ctx, ds, qo, stderr)
	if err != nil {
		return err
	}
	defer closeSession()

	systems := append([]string(nil), opts.Policies...)
	if duck != "" {
		systems = append(systems, "duckdb")
	}
	type key struct{ q, sys string }
	times := map[key][]float64{}
	effs := map[key][]float64{}
	rows := map[string]int{}
	type job struct{ q, sys string }
	rng := rand.New(rand.NewPCG(opts.Seed, 0x9e3779b97f4a7c15))
	total := opts.Rounds * len(names) * len(systems)
	done := 0
	slots := runtime.GOMAXPROCS(0)
	for r := 0; r < opts.Rounds; r++ {
		var jobs []job
		for _, q := range names {
			for _, s := range systems {
				jobs = append(jobs, job{q, s})
			}
		}
		rng.Shuffle(len(jobs), func(i, j int) { jobs[i], jobs[j] = jobs[j], jobs[i] })
		for _, j := range jobs {
			if err := ctx.Err(); err != nil {
				return err
			}
			var secs float64
			if j.sys == "duckdb" {
				secs, err = runDuckDB(ctx, duck, pq, j.q, ds.Manifest.ScaleFactor, slots)
				if err != nil {
					return err
				}
			} else {
				o := qo
				o.Policy = j.sys
				log := &eventLog{}
				o.Trace = log
				p, err := BuildQuery(ds, opts.Catalog, j.q)
				if err != nil {
					return err
				}
				res, err := Query(ctx, ds, p, o)
				if err != nil {
					return err
				}
				secs = res.Wall.Seconds()
				rows[j.q] = res.Batch.Rows
				effs[key{j.q, j.sys}] = append(effs[key{j.q, j.sys}], OverlapOf(log.ev, slots).Efficiency)
			}
			times[key{j.q, j.sys}] = append(times[key{j.q, j.sys}], secs)
			done++
			fmt.Fprintf(stderr, "[%d/%d] round %d %s %s: %.3f s\n", done, total, r+1, j.q, j.sys, secs)
		}
	}
	rep := BenchReport{Data: ds.Dir, Machine: machine.Name(), Policies: opts.Policies, Rounds: opts.Rounds,
		Geomean: map[string]float64{}}
	logSum := map[string]float64{}
	first, last := opts.Policies[0], opts.Policies[len(opts.Policies)-1]
	for _, q := range names {
		bq := BenchQuery{Query: q, Seconds: map[string]float64{}, Efficiency: map[string]float64{}, Rows: rows[q]}
		for _, s := range systems {
			m := stats.Median(times[key{q, s}])
			if s == "duckdb" {
				bq.DuckDBSeconds = m
			} else {
				bq.Seconds[s] = m
				bq.Efficiency[s] = stats.Median(effs[key{q, s}])
			}
			logSum[s] += math.Log(m)
		}
		bq.Speedup = bq.Seconds[first] / bq.Seconds[last]
		if bq.DuckDBSeconds > 0 {
			bq.VsDuckDB = bq.Seconds[last] / bq.DuckDBSeconds
		}
		rep.Queries = append(rep.Queries, bq)
	}
	for s, l := range logSum {
		rep.Geomean[s] = math.Exp(l / float64(len(names)))
	}
	if opts.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	writeBenchTable(stdout, &rep, duck != "")
	return nil
}

func writeBenchTable(w io.Writer, rep *BenchReport, duck bool) {
	first, last := rep.Policies[0], rep.Policies[len(rep.Policies)-1]
	fmt.Fprintf(w, "TPC-H on %s, %s; cold reads; median of %d round(s)\n", rep.Data, rep.Machine, rep.Rounds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "query\t"
	for _, p := range rep.Policies {
		head += p + " s\t"
	}
	head += last + "/" + first + " speedup\t"
	if duck {
		head += "duckdb s\tours/duckdb\t"
	}
	head += "efficiency " + last + "\t"
	fmt.Fprintln(tw, head)
	for _, q := range rep.Queries {
		line := q.Query + "\t"
		for _, p := range rep.Policies {
			line += fmt.Sprintf("%.3f\t", q.Seconds[p])
		}
		line += fmt.Sprintf("%.2fx\t", q.Speedup)
		if duck {
			line += fmt.Sprintf("%.3f\t%.2f\t", q.DuckDBSeconds, q.VsDuckDB)
		}
		line += fmt.Sprintf("%.2f\t", q.Efficiency[last])
		fmt.Fprintln(tw, line)
	}
	line := "geomean\t"
	for _, p := range rep.Policies {
		line += fmt.Sprintf("%.3f\t", rep.Geomean[p])
	}
	line += fmt.Sprintf("%.2fx\t", rep.Geomean[first]/rep.Geomean[last])
	if duck {
		line += fmt.Sprintf("%.3f\t%.2f\t", rep.Geomean["duckdb"], rep.Geomean[last]/rep.Geomean["duckdb"])
	}
	fmt.Fprintln(tw, line+"\t")
	tw.Flush()
}

// findDuckDB resolves the peer binary ("none": no peer).
func findDuckDB(path string) (string, error) {
	switch path {
	case "none":
		return "", nil
	case "":
		if exe, err := os.Executable(); err == nil {
			cand := filepath.Join(filepath.Dir(exe), "duckdb-tpch")
			if _, err := os.Stat(cand); err == nil {
				return cand, nil
			}
		}
		if p, err := exec.LookPath("duckdb-tpch"); err == nil {
			return p, nil
		}
		return "", fmt.Errorf("engine: bench tpch: no duckdb-tpch binary next to this one or on PATH (build it with `make bench-tpch`, or pass --duckdb none)")
	}
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("engine: bench tpch: DuckDB peer: %w", err)
	}
	return path, nil
}

// runDuckDB times one cold query in the peer process.
func runDuckDB(ctx context.Context, bin, pq, q string, sf float64, threads int) (float64, error) {
	if !(sf > 0) {
		sf = 1
	}
	cmd := exec.CommandContext(ctx, bin, "--parquet", pq, "--query", q, "--cold", "--json",
		"--sf", strconv.FormatFloat(sf, 'g', -1, 64), "--threads", strconv.Itoa(threads))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("engine: bench tpch: %s %s: %v: %s", bin, q, err, strings.TrimSpace(errb.String()))
	}
	var rep struct {
		Queries []struct {
			RunsMs []float64 `json:"runs_ms"`
		} `json:"queries"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || len(rep.Queries) != 1 || len(rep.Queries[0].RunsMs) == 0 {
		return 0, fmt.Errorf("engine: bench tpch: unreadable output of %s for %s: %v", bin, q, err)
	}
	return rep.Queries[0].RunsMs[0] / 1e3, nil
}

// benchSession readies ds for timed runs under qo: the garbage collector
// tuned and the heap limit fitted to the data, every buffer's checksum
// verified once (the runs then skip it), and one storage reader shared by
// the runs (qo.Reader in the options returned). done undoes it all.
func benchSession(ctx context.Context, ds *dataset.Dataset, qo QueryOptions, stderr io.Writer) (_ QueryOptions, done func(), err error) {
	restore := TuneGC()
	FitHeapLimit(ds)
	if err := VerifyOnce(ctx, ds, stderr); err != nil {
		restore()
		return qo, nil, err
	}
	reader, err := OpenSession(ctx, ds, qo)
	if err != nil {
		restore()
		return qo, nil, err
	}
	qo.Reader = reader
	return qo, func() { reader.Close(); restore() }, nil
}
