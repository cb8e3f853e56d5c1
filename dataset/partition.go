package dataset

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"path/filepath"
	"runtime"
	"sync"

	"gostachio/tpch/schema"
)

// Partitioned datasets. A dataset split into N partitions holds each
// partitioned table's rows grouped by PartitionOf(key, N): partition p's
// rows are in file <table>.p<p>.arrow, as chunks whose manifest entry says
// partition p. Tables that are not partitioned are replicated: their
// chunks carry no partition and any worker may read them. The scheduler
// deals a chunk of partition p only to node p mod Nodes; the engine reads
// every chunk from the same dataset folder, so a cluster needs the folder
// on shared or replicated storage (a node reads only its partitions' files
// and the replicated tables).

// The partition hash is the engine's row hash of a one-column integer key
// (kernels/cpu.HashColumns, a seedless wyhash-style multiply-fold), so
// every process and the engine's hash exchange agree on it: a row with key
// k lives on partition hash(k) mod N. partition_test.go checks the two
// stay equal.
const (
	hashK0 = 0xa0761d6478bd642f
	hashK1 = 0xe7037ed1a0b428db
)

// KeyHash is the 64-bit hash of integer-coded key value k (int64, int32,
// date days or decimal cents, by its int64 value).
func KeyHash(k int64) uint64 {
	hi, lo := bits.Mul64(uint64(k)^hashK0, hashK1)
	return hi ^ lo
}

// PartitionOf is the partition of key value k among n >= 1 partitions:
// KeyHash(k) mod n. It panics if n < 1.
func PartitionOf(k int64, n int) int {
	if n < 1 {
		panic(fmt.Sprintf("dataset: PartitionOf over %d partitions", n))
	}
	return int(KeyHash(k) % uint64(n))
}

// TablePlacement says how Partition places one table.
type TablePlacement struct {
	// Key is the integer-coded column whose PartitionOf places each row.
	Key string
	// With names a table partitioned on the same key values (the leader:
	// lineitem's l_orderkey is orders' o_orderkey). When the source has
	// the two co-chunked (chunk i of both covers the same disjoint,
	// ascending key range, as gen writes orders and lineitem), the output
	// keeps that: chunk j of partition p of this table holds exactly the
	// rows whose keys are in chunk j of partition p of the leader.
	With string
}

// TPCHPlacement is the TPC-H placement: every table that grows with the
// scale factor is hash-partitioned, orders and lineitem on the order key
// (so an order and its lines share a partition), part and partsupp on the
// part key, customer and supplier on their keys. Nation (25 rows) and
// region (5 rows) are absent, hence replicated: they are too small to
// split and every join with them is a broadcast anyway.
var TPCHPlacement = map[string]TablePlacement{
	"lineitem": {Key: "l_orderkey", With: "orders"},
	"orders":   {Key: "o_orderkey"},
	"customer": {Key: "c_custkey"},
	"part":     {Key: "p_partkey"},
	"partsupp": {Key: "ps_partkey", With: "part"},
	"supplier": {Key: "s_suppkey"},
}

// Splitter routes the rows of a partitioned table's batches to their
// partitions by PartitionOf of the key column and appends each partition's
// rows to the TableWriter as chunks. Not safe for concurrent use.
type Splitter struct {
	tw   *TableWriter
	key  int
	n    int
	rows int
	acc  []*schema.Batch // per partition: rows not yet written
	// OnFlush, when set, runs after partition p's pending rows were
	// written as a chunk (and before more rows reach p); a leader's
	// Splitter uses it to cut its follower's chunk at the same place.
	OnFlush func(p int) error
	idx     [][]int32 // scratch: row indices per partition
}

// NewSplitter returns a Splitter appending to tw (started with
// PartitionedTable). A partition's pending rows are written as a chunk
// before a batch would take them past chunkRows rows, and, unless OnFlush
// is set, as soon as they reach it. Chunk boundaries are batch boundaries:
// a single batch bringing more than chunkRows rows of one partition makes
// one larger chunk. chunkRows 0: only FlushPartition and Flush write (a
// follower's Splitter). A leader (OnFlush set) must be given each batch
// before its follower is given the matching one.
func NewSplitter(tw *TableWriter, chunkRows int) (*Splitter, error) {
	if tw.parts == 0 {
		return nil, fmt.Errorf("dataset: splitter on %s, which is not partitioned", tw.table.Name)
	}
	if chunkRows < 0 {
		return nil, fmt.Errorf("dataset: splitter on %s: %d chunk rows", tw.table.Name, chunkRows)
	}
	key, err := keyColumn(tw.table, tw.meta.PartitionKey)
	if err != nil {
		return nil, err
	}
	s := &Splitter{tw: tw, key: key, n: tw.parts, rows: chunkRows,
		acc: make([]*schema.Batch, tw.parts), idx: make([][]int32, tw.parts)}
	for p := range s.acc {
		s.acc[p] = emptyBatch(tw.table)
	}
	return s, nil
}

func emptyBatch(t *schema.Table) *schema.Batch {
	b := &schema.Batch{Table: t, Cols: make([]schema.Vector, len(t.Columns))}
	for i, c := range t.Columns {
		if c.Type == schema.String {
			b.Cols[i].Offsets = []int32{0}
		}
	}
	return b
}

// Add routes b's rows (b has the table's columns) to their partitions.
// Add does not keep b.
func (s *Splitter) Add(b *schema.Batch) error {
	if err := sameColumns(s.tw.table, b.Table); err != nil {
		return err
	}
	if err := b.Validate(); err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	for p := range s.idx {
		s.idx[p] = s.idx[p][:0]
	}
	kv := &b.Cols[s.key]
	if w := s.tw.table.Columns[s.key].Type.Width(); w == 8 {
		for i, k := range kv.I64[:b.Rows] {
			p := PartitionOf(k, s.n)
			s.idx[p] = append(s.idx[p], int32(i))
		}
	} else {
		for i, k := range kv.I32[:b.Rows] {
			p := PartitionOf(int64(k), s.n)
			s.idx[p] = append(s.idx[p], int32(i))
		}
	}
	for p, rows := range s.idx {
		if len(rows) == 0 {
			continue
		}
		if s.rows > 0 && s.acc[p].Rows > 0 && s.acc[p].Rows+len(rows) > s.rows {
			if err := s.FlushPartition(p); err != nil {
				return err
			}
		}
		if err := gather(s.acc[p], b, rows); err != nil {
			return fmt.Errorf("dataset: %s partition %d: %w", s.tw.table.Name, p, err)
		}
		// A leader's chunk may end only before a batch (its follower's
		// rows of this batch are added after Add returns); others cut a
		// full chunk at once.
		if s.rows > 0 && s.OnFlush == nil && s.acc[p].Rows >= s.rows {
			if err := s.FlushPartition(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// gather appends rows idx of src to dst (same columns).
func gather(dst, src *schema.Batch, idx []int32) error {
	for c, col := range src.Table.Columns {
		sv, dv := &src.Cols[c], &dst.Cols[c]
		switch col.Type {
		case schema.Int64, schema.Decimal, schema.Float64:
			for _, i := range idx {
				dv.I64 = append(dv.I64, sv.I64[i])
			}
		case schema.Int32, schema.Date:
			for _, i := range idx {
				dv.I32 = append(dv.I32, sv.I32[i])
			}
		default:
			for _, i := range idx {
				dv.Bytes = append(dv.Bytes, sv.Bytes[sv.Offsets[i]:sv.Offsets[i+1]]...)
				if len(dv.Bytes) > 1<<31-1 {
					return fmt.Errorf("column %s holds more than 2 GiB of strings in one chunk", col.Name)
				}
				dv.Offsets = append(dv.Offsets, int32(len(dv.Bytes)))
			}
		}
	}
	dst.Rows += len(idx)
	return nil
}

// FlushPartition writes partition p's pending rows as one chunk (nothing
// when there are none), then runs OnFlush(p).
func (s *Splitter) FlushPartition(p int) error {
	if s.acc[p].Rows > 0 {
		if err := s.tw.AppendPartition(p, s.acc[p]); err != nil {
			return err
		}
		s.acc[p] = emptyBatch(s.tw.table)
	}
	if s.OnFlush != nil {
		return s.OnFlush(p)
	}
	return nil
}

// Flush writes every partition's pending rows (FlushPartition in partition
// order).
func (s *Splitter) Flush() error {
	for p := range s.acc {
		if err := s.FlushPartition(p); err != nil {
			return err
		}
	}
	return nil
}

// PartitionOptions configure Partition.
type PartitionOptions struct {
	// Partitions is the number of partitions (>= 1).
	Partitions int
	// Placement maps table names to their placement; tables not in it are
	// replicated. Nil: TPCHPlacement.
	Placement map[string]TablePlacement
	// Force replaces an existing non-empty output folder.
	Force bool
	// Stripes are additional output folders (as CreateOptions.Stripes):
	// partition p's files go to stripe p mod S.
	Stripes []string
	// Workers bounds the tables (or leader/follower pairs) rewritten at
	// once (default GOMAXPROCS).
	Workers int
}

// Partition writes a copy of src to out with its tables placed by
// opts.Placement over opts.Partitions partitions: a partitioned table's
// rows are routed by PartitionOf(key, N) and written per partition in
// chunks of at most the source table's largest chunk (so chunk sizes stay
// as the source had them), in source row order within a partition;
// replicated tables keep their chunks. The manifest keeps src's name,
// scale factor and generator, and records the partitioning. Like Create
// and Commit, the output is written to a temporary folder and renamed into
// place; on error or cancellation nothing is left at out. src may itself
// be partitioned (it is re-split); out must not be src's folder.
func Partition(ctx context.Context, src *Dataset, out string, opts PartitionOptions) error {
	if opts.Partitions < 1 {
		return fmt.Errorf("dataset: partition %s: %d partitions: must be at least 1", src.Dir, opts.Partitions)
	}
	if out == "" {
		return errors.New("dataset: partition: no output folder")
	}
	place := opts.Placement
	if place == nil {
		place = TPCHPlacement
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return fmt.Errorf("dataset: partition: %w", err)
	}
	for _, s := range src.stripes {
		if abs == s {
			return fmt.Errorf("dataset: partition: output %s is a folder of the source dataset", abs)
		}
	}
	jobs, err := partitionJobs(src, place)
	if err != nil {
		return err
	}
	m := src.Manifest
	gen := m.Generator
	if m.Generator.Params != nil {
		gen.Params = make(map[string]string, len(m.Generator.Params))
		for k, v := range m.Generator.Params {
			gen.Params[k] = v
		}
	}
	w, err := Create(out, CreateOptions{Force: opts.Force, Stripes: opts.Stripes, Partitions: opts.Partitions,
		Meta: Meta{Name: m.Name, ScaleFactor: m.ScaleFactor, Generator: gen}})
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			w.Abort()
		}
	}()
	// Start every table in source order first, so the manifest lists
	// them as the source does whatever order the jobs finish in.
	tws := make(map[string]*TableWriter, len(m.Tables))
	for ti := range m.Tables {
		tm := &m.Tables[ti]
		var tw *TableWriter
		if pl, ok := place[tm.Name]; ok {
			tw, err = w.PartitionedTable(tm.Schema, pl.Key)
		} else {
			tw, err = w.Table(tm.Schema)
		}
		if err != nil {
			return err
		}
		tws[tm.Name] = tw
	}
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, workers)
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			if err := j.run(ctx, src, tws); err != nil {
				cancel(err)
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return fmt.Errorf("dataset: partition %s: %w", src.Dir, err)
	}
	if err := w.Commit(); err != nil {
		return err
	}
	ok = true
	return nil
}

// partJob rewrites one table, or a leader with its co-chunked follower
// (read in lockstep, chunk i of both at a time).
type partJob struct {
	table, follower string
	key, fkey       string // partition keys ("" = replicated)
	chunkRows       int
}

// partitionJobs checks the placement against src and returns the jobs:
// one per table, except that a follower co-chunked with its leader in src
// joins the leader's job.
func partitionJobs(src *Dataset, place map[string]TablePlacement) ([]partJob, error) {
	for name, pl := range place {
		tm, err := src.Table(name)
		if err != nil {
			continue // a placement for a table src lacks is not an error
		}
		if _, err := keyColumn(tm.Schema, pl.Key); err != nil {
			return nil, fmt.Errorf("dataset: partition %s: table %s: %w", src.Dir, name, err)
		}
		if pl.With != "" {
			lp, ok := place[pl.With]
			if !ok || lp.With != "" {
				return nil, fmt.Errorf("dataset: partition %s: table %s is placed with %s, which is not a partitioned leader", src.Dir, name, pl.With)
			}
		}
	}
	follows := map[string]string{} // leader -> co-chunked follower
	for name, pl := range place {
		if pl.With == "" {
			continue
		}
		if coChunked(src, pl.With, place[pl.With].Key, name, pl.Key) {
			if prev, dup := follows[pl.With]; dup {
				// Two followers of one leader: keep one (by name, for
				// determinism); the other is rewritten on its own.
				name = min(name, prev)
			}
			follows[pl.With] = name
		}
	}
	followed := map[string]bool{}
	for _, f := range follows {
		followed[f] = true
	}
	var jobs []partJob
	for _, tm := range src.Manifest.Tables {
		if followed[tm.Name] {
			continue
		}
		j := partJob{table: tm.Name, key: place[tm.Name].Key}
		for _, c := range tm.Chunks {
			j.chunkRows = max(j.chunkRows, int(c.Rows))
		}
		if f, ok := follows[tm.Name]; ok {
			j.follower, j.fkey = f, place[f].Key
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// coChunked reports whether chunk i of the leader and of the follower
// cover the same key range for every i, with the leader's ranges ascending
// and disjoint: then every follower row of chunk i refers to a leader row
// of chunk i (given the reference is valid), so cutting both at the same
// source chunks keeps them co-chunked.
func coChunked(src *Dataset, leader, lkey, follower, fkey string) bool {
	lt, err1 := src.Table(leader)
	ft, err2 := src.Table(follower)
	if err1 != nil || err2 != nil || len(lt.Chunks) != len(ft.Chunks) {
		return false
	}
	lc, fc := lt.Schema.Column(lkey), ft.Schema.Column(fkey)
	if lc < 0 || fc < 0 {
		return false
	}
	for i := range lt.Chunks {
		l, f := &lt.Chunks[i].Columns[lc], &ft.Chunks[i].Columns[fc]
		if l.Min.IsStr || f.Min.IsStr || f.Min.Int < l.Min.Int || f.Max.Int > l.Max.Int {
			return false
		}
		if i > 0 && lt.Chunks[i-1].Columns[lc].Max.Int >= l.Min.Int {
			return false
		}
	}
	return true
}

// run rewrites the job's table(s) chunk by chunk.
func (j *partJob) run(ctx context.Context, src *Dataset, tws map[string]*TableWriter) error {
	tm, _ := src.Table(j.table)
	if j.key == "" {
		// Replicated: copy chunk for chunk.
		for i := range tm.Chunks {
			if err := ctx.Err(); err != nil {
				return err
			}
			b, err := src.ReadChunk(j.table, i, nil)
			if err != nil {
				return err
			}
			if err := tws[j.table].Append(b); err != nil {
				return err
			}
		}
		return nil
	}
	lead, err := NewSplitter(tws[j.table], j.chunkRows)
	if err != nil {
		return err
	}
	var fol *Splitter
	if j.follower != "" {
		if fol, err = NewSplitter(tws[j.follower], 0); err != nil {
			return err
		}
		// The leader's chunk of partition p is cut before its rows of the
		// next source chunk are added; the follower's rows of that source
		// chunk are added after the leader's, so cutting the follower
		// here ends its chunk at the same source chunk.
		lead.OnFlush = fol.FlushPartition
	}
	for i := range tm.Chunks {
		if err := ctx.Err(); err != nil {
			return err
		}
		b, err := src.ReadChunk(j.table, i, nil)
		if err != nil {
			return err
		}
		if err := lead.Add(b); err != nil {
			return err
		}
		if fol != nil {
			fb, err := src.ReadChunk(j.follower, i, nil)
			if err != nil {
				return err
			}
			if err := fol.Add(fb); err != nil {
				return err
			}
		}
	}
	return lead.Flush()
}
