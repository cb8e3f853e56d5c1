// Package tpch generates and imports TPC-H datasets (and, with the engine,
// holds the 22 queries). Gen is `gostachio gen`: the dbgen-exact generator
// (tpch/dbgen) feeding the dataset writer (dataset), on every core.
package tpch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"time"

	"gostachio/dataset"
	"gostachio/internal/progress"
	"gostachio/internal/units"
	"gostachio/tpch/dbgen"
	"gostachio/tpch/schema"
)

// DefaultChunkRows is the default number of rows per stored chunk (the
// dataset writer's: 128Ki rows make 1 MiB per 8-byte column, the O_DIRECT
// request size the storage reader is tuned for).
const DefaultChunkRows = dataset.DefaultChunkRows

// GenOptions configure Gen.
type GenOptions struct {
	ScaleFactor float64
	Out         string
	// ChunkRows is the target rows per chunk. Orders and lineitem are
	// chunked together: chunk i of both holds the same orders (and their
	// lines), ChunkRows/4 orders per chunk, so a lineitem chunk has about
	// ChunkRows rows. Partsupp chunks hold the rows of ChunkRows/4 parts.
	ChunkRows int
	Force     bool     // replace an existing dataset
	IfMissing bool     // keep an existing dataset of the same scale factor and generator version; replace another of ours
	Stripes   []string // additional folders to spread chunks over (multi-path)
	// Partitions > 0 writes a partitioned dataset (dataset.Partition's
	// layout, placed by dataset.TPCHPlacement): each generated chunk's
	// rows are routed to their partitions as they are generated, chunks
	// are cut per partition at the sizes above, and orders/lineitem and
	// part/partsupp stay co-chunked within each partition. 0: unpartitioned.
	Partitions int
	Workers    int // generator goroutines (default GOMAXPROCS)
	JSON       bool
	// Now is the clock for the timing summary and progress (the CLI passes
	// time.Now). Nil: no timing and no progress.
	Now func() time.Time
}

// GenReport is what Gen prints.
type GenReport struct {
	Dir         string            `json:"dir"`
	ScaleFactor float64           `json:"scale_factor"`
	Reused      bool              `json:"reused,omitempty"`
	Partitions  int               `json:"partitions,omitempty"`
	Tables      []GenTable        `json:"tables"`
	Rows        int64             `json:"rows"`
	Bytes       int64             `json:"bytes"`
	Seconds     float64           `json:"seconds,omitempty"`
	RowsPerSec  float64           `json:"rows_per_s,omitempty"`
	MBPerSec    float64           `json:"mb_per_s,omitempty"`
	Workers     int               `json:"workers"`
	Generator   dataset.Generator `json:"generator"`
}

// GenTable is one table's line of the report.
type GenTable struct {
	Name   string `json:"name"`
	Rows   int64  `json:"rows"`
	Chunks int    `json:"chunks"`
	Bytes  int64  `json:"bytes"`
}

// ValidateScaleFactor rejects scale factors dbgen cannot generate.
func ValidateScaleFactor(sf float64) error {
	if math.IsNaN(sf) || math.IsInf(sf, 0) || sf <= 0 {
		return fmt.Errorf("tpch: scale factor %v: must be a positive number", sf)
	}
	return nil
}

// Gen generates all eight TPC-H tables at opts.ScaleFactor into opts.Out.
// The dataset is written to a temporary folder and renamed into place only
// when complete; on error or cancellation nothing is left at opts.Out.
func Gen(ctx context.Context, opts GenOptions, stdout, stderr io.Writer) error {
	if err := ValidateScaleFactor(opts.ScaleFactor); err != nil {
		return err
	}
	if opts.Out == "" {
		return errors.New("tpch: gen: no output folder (--out)")
	}
	if opts.ChunkRows == 0 {
		opts.ChunkRows = DefaultChunkRows
	}
	if opts.ChunkRows < 4 {
		return fmt.Errorf("tpch: gen: chunk rows %d: must be at least 4", opts.ChunkRows)
	}
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	if opts.Partitions < 0 {
		return fmt.Errorf("tpch: gen: %d partitions: must be at least 1 (or 0: unpartitioned)", opts.Partitions)
	}
	if opts.IfMissing {
		reused, err := reuseExisting(ctx, &opts)
		if err != nil {
			return err
		}
		if reused != nil {
			reused.Workers = opts.Workers
			return printGen(*reused, opts.JSON, stdout)
		}
	}
	var start time.Time
	if opts.Now != nil {
		start = opts.Now() // includes building dbgen's 300 MiB text pool
	}
	gen, err := dbgen.New(opts.ScaleFactor)
	if err != nil {
		return fmt.Errorf("tpch: gen: %w", err)
	}
	info := dataset.Generator{Name: "gostachio-dbgen", Version: dbgen.Version,
		Params: map[string]string{"chunk_rows": fmt.Sprint(opts.ChunkRows)}}
	w, err := dataset.Create(opts.Out, dataset.CreateOptions{Force: opts.Force, Stripes: opts.Stripes,
		Partitions: opts.Partitions, Log: stderr, Meta: dataset.Meta{Name: "tpch", ScaleFactor: opts.ScaleFactor, Generator: info}})
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			w.Abort()
		}
	}()
	var total int64
	for _, t := range schema.Tables {
		total += expectedRows(t, opts.ScaleFactor)
	}
	bar := progress.New(stderr, fmt.Sprintf("gen sf%v", opts.ScaleFactor), total, "rows", opts.Now)
	for _, t := range schema.Tables {
		if t == &schema.PartSupp || t == &schema.Lineitem {
			continue // generated with its parent, in the same pass
		}
		if err := genTable(ctx, gen, w, t, opts, bar); err != nil {
			return err
		}
	}
	bar.Finish()
	if err := w.Commit(); err != nil {
		return err
	}
	ok = true
	ds, err := dataset.Open(opts.Out)
	if err != nil {
		return fmt.Errorf("tpch: gen: reopening the written dataset: %w", err)
	}
	rep := reportOf(ds)
	rep.Workers = opts.Workers
	if opts.Now != nil {
		rep.Seconds = opts.Now().Sub(start).Seconds()
		if rep.Seconds > 0 {
			rep.RowsPerSec = float64(rep.Rows) / rep.Seconds
			rep.MBPerSec = float64(rep.Bytes) / 1e6 / rep.Seconds
		}
	}
	return printGen(rep, opts.JSON, stdout)
}

// expectedRows is the spec's row count of t at sf (for progress only).
func expectedRows(t *schema.Table, sf float64) int64 {
	if !t.Scaled {
		return t.BaseRows
	}
	return int64(float64(t.BaseRows) * sf)
}

// unitsPerChunk is how many driving units (dbgen rows of the driving table)
// make one chunk of t.
func unitsPerChunk(t *schema.Table, chunkRows int) int64 {
	switch t {
	case &schema.PartSupp, &schema.Orders, &schema.Lineitem:
		return int64(max(chunkRows/4, 1))
	}
	return int64(chunkRows)
}

type genResult struct {
	main, child *schema.Batch
	err         error
}

// childOf is the table generated in the same pass as t (nil if none).
func childOf(t *schema.Table) *schema.Table {
	switch t {
	case &schema.Part:
		return &schema.PartSupp
	case &schema.Orders:
		return &schema.Lineitem
	}
	return nil
}

// sink takes a table's generated batches in order: straight to the table
// (one chunk each), or through a Splitter into partitions.
type sink struct {
	tw *dataset.TableWriter
	sp *dataset.Splitter
}

func (s sink) add(b *schema.Batch) error {
	if s.sp != nil {
		return s.sp.Add(b)
	}
	return s.tw.Append(b)
}

func (s sink) flush() error {
	if s.sp != nil {
		return s.sp.Flush()
	}
	return nil
}

// newSink starts table t: partitioned when the dataset is and
// dataset.TPCHPlacement places t (chunks of up to chunkRows rows; 0: a
// follower, cut only with its leader), else one chunk per batch.
func newSink(w *dataset.Writer, t *schema.Table, parts, chunkRows int) (sink, error) {
	pl, ok := dataset.TPCHPlacement[t.Name]
	if parts == 0 || !ok {
		tw, err := w.Table(t)
		return sink{tw: tw}, err
	}
	tw, err := w.PartitionedTable(t, pl.Key)
	if err != nil {
		return sink{}, err
	}
	sp, err := dataset.NewSplitter(tw, chunkRows)
	return sink{tw: tw, sp: sp}, err
}

// genTable generates t's chunks on opts.Workers goroutines and appends them
// in chunk order. At most 2*Workers chunks are in memory at once: the feeder
// takes a slot before handing out a chunk, the appender frees it.
func genTable(ctx context.Context, gen *dbgen.Generator, w *dataset.Writer, t *schema.Table, opts GenOptions, bar *progress.Bar) error {
	unitsTotal := gen.Units(t)
	per := unitsPerChunk(t, opts.ChunkRows)
	// Partitioned, a chunk of each partition holds up to `per` rows of t
	// (one per driving unit), as an unpartitioned chunk does.
	tw, err := newSink(w, t, opts.Partitions, int(per))
	if err != nil {
		return err
	}
	var cw sink
	hasChild := false
	if c := childOf(t); c != nil {
		hasChild = true
		rows := opts.ChunkRows
		if pl := dataset.TPCHPlacement[c.Name]; pl.With == t.Name {
			rows = 0 // cut with the parent's chunks: co-chunked per partition
		}
		if cw, err = newSink(w, c, opts.Partitions, rows); err != nil {
			return err
		}
		if tw.sp != nil && cw.sp != nil && rows == 0 {
			tw.sp.OnFlush = cw.sp.FlushPartition
		}
	}
	chunks := int((unitsTotal + per - 1) / per)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([]chan genResult, chunks)
	for i := range results {
		results[i] = make(chan genResult, 1)
	}
	slots := make(chan struct{}, 2*opts.Workers)
	jobs := make(chan int)
	go func() {
		defer close(jobs)
		for i := range chunks {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			select {
			case jobs <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	for range opts.Workers {
		go func() {
			for i := range jobs {
				first := int64(i) * per
				m, c, err := gen.GenerateWithChild(t, first, min(per, unitsTotal-first))
				results[i] <- genResult{m, c, err}
			}
		}()
	}
	for i := range chunks {
		var r genResult
		select {
		case r = <-results[i]:
		case <-ctx.Done():
			return fmt.Errorf("tpch: gen %s: %w", t.Name, ctx.Err())
		}
		if r.err != nil {
			return fmt.Errorf("tpch: gen %s chunk %d: %w", t.Name, i, r.err)
		}
		// The parent first: a partitioned parent cuts its chunks (and its
		// child's) before this batch's rows of both arrive.
		if err := tw.add(r.main); err != nil {
			return err
		}
		bar.Add(int64(r.main.Rows))
		if hasChild {
			if err := cw.add(r.child); err != nil {
				return err
			}
			bar.Add(int64(r.child.Rows))
		}
		<-slots
	}
	if err := tw.flush(); err != nil {
		return err
	}
	if hasChild {
		return cw.flush()
	}
	return nil
}

// reuseExisting decides what gen --if-missing does with opts.Out: it
// returns the report of a dataset to keep (this generator version wrote it
// at this scale factor and partitioning, and every buffer still matches
// its checksum), sets opts.Force to replace a dataset of ours that differs,
// returns (nil, nil) where there is nothing (Create then writes it), and an
// error saying what is wrong with anything else: a dataset that fails to
// open or to verify, or a folder that is not a dataset.
func reuseExisting(ctx context.Context, opts *GenOptions) (*GenReport, error) {
	ds, err := dataset.Open(opts.Out)
	if errors.Is(err, dataset.ErrNoManifest) {
		if ents, rerr := os.ReadDir(opts.Out); rerr == nil && len(ents) > 0 {
			return nil, fmt.Errorf("tpch: gen --if-missing: %s is not empty and holds no %s (an interrupted run, or another folder): remove it or pass --force",
				opts.Out, dataset.ManifestName)
		}
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("tpch: gen --if-missing: %s holds a dataset that cannot be used: %w; regenerate it with --force", opts.Out, err)
	}
	if ds.Manifest.ScaleFactor != opts.ScaleFactor || ds.Manifest.Generator.Version != dbgen.Version ||
		ds.Manifest.Partitions != opts.Partitions {
		opts.Force = true // another dataset of ours: replace it
		return nil, nil
	}
	if _, err := ds.Verify(ctx, nil); err != nil && !errors.Is(err, dataset.ErrNoChecksums) {
		return nil, fmt.Errorf("tpch: gen --if-missing: %s fails verification: %w; regenerate it with --force", opts.Out, err)
	}
	rep := reportOf(ds)
	rep.Reused = true
	return &rep, nil
}

func reportOf(ds *dataset.Dataset) GenReport {
	m := ds.Manifest
	rep := GenReport{Dir: ds.Dir, ScaleFactor: m.ScaleFactor, Generator: m.Generator, Partitions: m.Partitions}
	for _, t := range m.Tables {
		var bytes int64
		for _, f := range t.Files {
			bytes += f.Size
		}
		rep.Tables = append(rep.Tables, GenTable{Name: t.Name, Rows: t.Rows, Chunks: len(t.Chunks), Bytes: bytes})
		rep.Rows += t.Rows
		rep.Bytes += bytes
	}
	return rep
}

func printGen(rep GenReport, jsonOut bool, w io.Writer) error {
	if jsonOut {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	verb := "generated"
	if rep.Reused {
		verb = "reusing"
	}
	fmt.Fprintf(w, "%s TPC-H SF%v in %s (%s)\n", verb, rep.ScaleFactor, rep.Dir, rep.Generator.Version)
	if rep.Partitions > 0 {
		fmt.Fprintf(w, "%d partitions (orders/lineitem on the order key; nation, region replicated)\n", rep.Partitions)
	}
	fmt.Fprintf(w, "%-10s %12s %7s %10s\n", "table", "rows", "chunks", "bytes")
	for _, t := range rep.Tables {
		fmt.Fprintf(w, "%-10s %12d %7d %10s\n", t.Name, t.Rows, t.Chunks, units.FormatBytes(t.Bytes))
	}
	fmt.Fprintf(w, "%-10s %12d %7s %10s\n", "total", rep.Rows, "", units.FormatBytes(rep.Bytes))
	if rep.Seconds > 0 {
		fmt.Fprintf(w, "%.2f s on %d workers: %.0f rows/s, %.1f MB/s written\n", rep.Seconds, rep.Workers, rep.RowsPerSec, rep.MBPerSec)
	}
	return nil
}
