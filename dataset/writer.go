package dataset

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"gostachio/dataset/arrowipc"
	"gostachio/tpch/schema"
)

// ErrExists is returned by Create when the target folder (or a stripe
// folder) exists and is not empty and CreateOptions.Force is false.
var ErrExists = errors.New("dataset folder exists and is not empty (use force to replace it)")

// Meta is the descriptive part of a manifest.
type Meta struct {
	Name        string // default: the base name of the dataset folder
	ScaleFactor float64
	Generator   Generator
}

// CreateOptions configure Create.
type CreateOptions struct {
	// Force allows replacing an existing non-empty dataset folder (and
	// stripe folders); the old content is removed only at Commit.
	Force bool
	// Stripes are additional folders (typically on other devices) that
	// chunks are spread over: with S = 1+len(Stripes) stripes, chunk i of
	// every table goes to stripe i%S; stripe 0 is the dataset folder and
	// stripe k>0 is the folder <Stripes[k-1]>/<name>.stripe<k>.
	Stripes []string
	// Partitions is the dataset's partition count (0: unpartitioned).
	// Tables started with PartitionedTable are split into this many
	// partitions; tables started with Table are then replicated (their
	// chunks are not placed).
	Partitions int
	Meta       Meta
	// Log receives notes about what Create found (temporary folders of
	// interrupted runs it removed); nil: discarded.
	Log io.Writer
}

func (o CreateOptions) log() io.Writer {
	if o.Log == nil {
		return io.Discard
	}
	return o.Log
}

// Writer builds a dataset in temporary folders beside its final folders
// and moves it into place at Commit. Until Commit returns, the final
// folder holds no manifest written by this Writer, so an interrupted run
// leaves nothing that looks like a complete dataset. Table may be called
// from several goroutines; Commit and Abort must not run concurrently with
// Append.
type Writer struct {
	dir     string // absolute final folder
	force   bool
	parts   int // CreateOptions.Partitions
	stripes []stripeDir

	mu     sync.Mutex
	meta   Meta
	tables []*TableWriter
	done   bool // committed or aborted
}

type stripeDir struct {
	final string // absolute final folder
	tmp   string // temporary folder written into
}

// Create starts a dataset that Commit will place at dir.
func Create(dir string, opts CreateOptions) (*Writer, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("dataset: create %s: %w", dir, err)
	}
	if opts.Partitions < 0 {
		return nil, fmt.Errorf("dataset: create %s: %d partitions: must be at least 1 (or 0: unpartitioned)", dir, opts.Partitions)
	}
	w := &Writer{dir: abs, force: opts.Force, parts: opts.Partitions, meta: opts.Meta}
	finals := []string{abs}
	for k, s := range opts.Stripes {
		sa, err := filepath.Abs(s)
		if err != nil {
			return nil, fmt.Errorf("dataset: stripe %s: %w", s, err)
		}
		finals = append(finals, filepath.Join(sa, fmt.Sprintf("%s.stripe%d", filepath.Base(abs), k+1)))
	}
	for _, f := range finals {
		if err := checkTarget(f, opts.Force); err != nil {
			return nil, err
		}
	}
	for _, f := range finals {
		parent := filepath.Dir(f)
		if err := os.MkdirAll(parent, 0o755); err != nil {
			w.Abort()
			return nil, fmt.Errorf("dataset: create %s: %w", parent, err)
		}
		removed, err := removeStale(parent, filepath.Base(f))
		if err != nil {
			w.Abort()
			return nil, err
		}
		for _, r := range removed {
			fmt.Fprintf(opts.log(), "removed %s, left by an interrupted run\n", r)
		}
		tmp, err := makeTempDir(parent, filepath.Base(f))
		if err != nil {
			w.Abort()
			return nil, fmt.Errorf("dataset: create temporary folder in %s: %w", parent, err)
		}
		w.stripes = append(w.stripes, stripeDir{final: f, tmp: tmp})
	}
	return w, nil
}

// checkTarget fails when path exists as a non-folder, or as a non-empty
// folder without force.
func checkTarget(path string, force bool) error {
	st, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("dataset: %s: %w", path, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("dataset: %s exists and is not a folder", path)
	}
	if force {
		return nil
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return fmt.Errorf("dataset: %s: %w", path, err)
	}
	if len(ents) > 0 {
		return fmt.Errorf("dataset: %s: %w", path, ErrExists)
	}
	return nil
}

// Dir is the absolute folder the dataset will have after Commit.
func (w *Writer) Dir() string { return w.dir }

// SetMeta replaces the name, scale factor and generator recorded at Commit.
func (w *Writer) SetMeta(m Meta) {
	w.mu.Lock()
	w.meta = m
	w.mu.Unlock()
}

// TableWriter appends chunks of one table. Its methods are safe for
// concurrent use (Appends are serialized); different TableWriters write
// different files and proceed in parallel.
type TableWriter struct {
	w     *Writer
	table *schema.Table

	// parts is the table's partition count (0: chunks not placed).
	parts int

	mu sync.Mutex
	// files are per stripe (nil until the stripe gets a chunk), or for a
	// partitioned table per partition (all created at the start).
	files []*tableFile
	meta  TableMeta
	// sketches[c] holds every value of column c appended so far; finish
	// records their estimates as ColumnMeta.Distinct.
	sketches []Sketch
	err      error // sticky: a failed write leaves the file unusable
	closed   bool
}

type tableFile struct {
	f    *os.File
	bw   *bufio.Writer
	fw   *arrowipc.FileWriter
	idx  int // index into meta.Files
	nbat int
}

// Table starts table t. Each table may be started once per Writer. The
// file of stripe 0 is created at once, so a table without chunks still has
// a file holding its schema. In a partitioned dataset the table is
// replicated: its chunks are not placed on partitions.
func (w *Writer) Table(t *schema.Table) (*TableWriter, error) {
	return w.table(t, "")
}

// PartitionedTable starts table t split by column key (integer-coded)
// into the dataset's CreateOptions.Partitions partitions. Rows are routed
// by the caller (a Splitter does it by PartitionOf) and appended with
// AppendPartition; partition p's chunks go to file <table>.p<p>.arrow on
// stripe p mod S, all files created at once. The manifest lists the
// table's chunks by partition, each partition's in append order, so a
// partition's chunks are consecutive.
func (w *Writer) PartitionedTable(t *schema.Table, key string) (*TableWriter, error) {
	if w.parts == 0 {
		return nil, fmt.Errorf("dataset: partitioned table %s in an unpartitioned dataset (CreateOptions.Partitions is 0)", tableName(t))
	}
	if t != nil {
		if _, err := keyColumn(t, key); err != nil {
			return nil, fmt.Errorf("dataset: table %s: %w", t.Name, err)
		}
	}
	return w.table(t, key)
}

func tableName(t *schema.Table) string {
	if t == nil {
		return "<nil>"
	}
	return t.Name
}

// keyColumn returns the index of partition key column key of t, which must
// be integer-coded.
func keyColumn(t *schema.Table, key string) (int, error) {
	c := t.Column(key)
	if c < 0 {
		return 0, fmt.Errorf("no partition key column %q", key)
	}
	switch t.Columns[c].Type {
	case schema.Int64, schema.Int32, schema.Date, schema.Decimal:
		return c, nil
	}
	return 0, fmt.Errorf("partition key column %q is %v, want an integer-coded type", key, t.Columns[c].Type)
}

func (w *Writer) table(t *schema.Table, key string) (*TableWriter, error) {
	if t == nil || !validName(t.Name) {
		return nil, fmt.Errorf("dataset: invalid table name")
	}
	if len(t.Columns) == 0 {
		return nil, fmt.Errorf("dataset: table %s has no columns", t.Name)
	}
	seen := map[string]bool{}
	for _, c := range t.Columns {
		if seen[c.Name] || c.Name == "" {
			return nil, fmt.Errorf("dataset: table %s: empty or duplicate column name %q", t.Name, c.Name)
		}
		seen[c.Name] = true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return nil, fmt.Errorf("dataset: Table(%s) after Commit or Abort", t.Name)
	}
	for _, tw := range w.tables {
		if tw.table.Name == t.Name {
			return nil, fmt.Errorf("dataset: table %s started twice", t.Name)
		}
	}
	tw := &TableWriter{w: w, table: t, files: make([]*tableFile, len(w.stripes)),
		sketches: make([]Sketch, len(t.Columns)),
		meta:     TableMeta{Name: t.Name, Columns: columnsMeta(t), Files: []FileMeta{}, Chunks: []ChunkMeta{}}}
	if key != "" {
		tw.parts = w.parts
		tw.files = make([]*tableFile, w.parts)
		tw.meta.Partitions, tw.meta.PartitionKey = w.parts, key
		for p := range w.parts {
			if _, err := tw.file(p); err != nil {
				tw.abandon()
				return nil, err
			}
		}
	} else if _, err := tw.file(0); err != nil {
		return nil, err
	}
	w.tables = append(w.tables, tw)
	return tw, nil
}

func validName(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, `/\`)
}

// file returns the open file of slot i (a stripe, or for a partitioned
// table a partition), creating it on first use.
func (tw *TableWriter) file(i int) (*tableFile, error) {
	if tf := tw.files[i]; tf != nil {
		return tf, nil
	}
	name, s := tw.table.Name+".arrow", i
	if tw.parts > 0 {
		name, s = fmt.Sprintf("%s.p%d.arrow", tw.table.Name, i), i%len(tw.w.stripes)
	}
	path := filepath.Join(tw.w.stripes[s].tmp, name)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("dataset: create %s: %w", path, err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	fw, err := arrowipc.NewFileWriter(bw, tw.table.Columns)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("dataset: %s: %w", path, err)
	}
	tf := &tableFile{f: f, bw: bw, fw: fw, idx: len(tw.meta.Files)}
	tw.meta.Files = append(tw.meta.Files, FileMeta{Path: name, Stripe: s})
	tw.files[i] = tf
	return tf, nil
}

// Append writes b as the table's next chunk (one record batch) in the file
// of stripe (chunk index mod stripes). The caller sizes chunks; a batch
// with zero rows is ignored (no chunk is recorded). b's columns must match
// the table's names and types. Append does not keep b. A partitioned
// table takes AppendPartition instead.
func (tw *TableWriter) Append(b *schema.Batch) error {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.parts > 0 {
		return fmt.Errorf("dataset: %s is partitioned: use AppendPartition", tw.table.Name)
	}
	return tw.appendLocked(-1, NoPartition, b)
}

// AppendPartition writes b as the next chunk of partition p of a table
// started with PartitionedTable. Every row of b must belong to p (the
// caller routes rows; AppendPartition does not rehash them). Otherwise as
// Append.
func (tw *TableWriter) AppendPartition(p int, b *schema.Batch) error {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.parts == 0 {
		return fmt.Errorf("dataset: %s is not partitioned: use Append", tw.table.Name)
	}
	if p < 0 || p >= tw.parts {
		return fmt.Errorf("dataset: %s: partition %d outside 0..%d", tw.table.Name, p, tw.parts-1)
	}
	return tw.appendLocked(p, p, b)
}

// appendLocked writes b as a chunk of partition part to the file of slot
// (-1: the next stripe in turn).
func (tw *TableWriter) appendLocked(slot, part int, b *schema.Batch) error {
	if tw.err != nil {
		return tw.err
	}
	if tw.closed {
		return fmt.Errorf("dataset: %s: Append after Commit or Abort", tw.table.Name)
	}
	if b == nil || b.Table == nil {
		return fmt.Errorf("dataset: %s: nil batch", tw.table.Name)
	}
	if err := sameColumns(tw.table, b.Table); err != nil {
		return err
	}
	if err := b.Validate(); err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	if b.Rows == 0 {
		return nil
	}
	ci := len(tw.meta.Chunks)
	if slot < 0 {
		slot = ci % len(tw.files)
	}
	tf, err := tw.file(slot)
	if err != nil {
		tw.err = err
		return err
	}
	// The sketches are updated while the batch is encoded and written:
	// the two touch b read-only, and hashing every value is as much work
	// as the write itself, which would otherwise lengthen the one
	// goroutine that appends a table's chunks.
	var sketching sync.WaitGroup
	sketching.Go(func() {
		for i, c := range tw.table.Columns {
			sketchColumn(&tw.sketches[i], c.Type, &b.Cols[i], b.Rows)
		}
	})
	defer sketching.Wait()
	lay, err := tf.fw.WriteBatch(b)
	if err != nil {
		tw.err = fmt.Errorf("dataset: write chunk %d of %s to %s: %w", ci, tw.table.Name, tf.f.Name(), err)
		return tw.err
	}
	ch := ChunkMeta{File: tf.idx, Batch: tf.nbat, Rows: int64(b.Rows),
		Offset: lay.Block.Offset, MetaLength: lay.Block.MetaLength, BodyLength: lay.Block.BodyLength,
		Columns: make([]ColumnChunk, len(tw.table.Columns)), Partition: part}
	for i, c := range tw.table.Columns {
		cc := &ch.Columns[i]
		for _, buf := range lay.Columns[i] {
			cc.Buffers = append(cc.Buffers, BufferRef{Off: buf.Offset, Len: buf.Length, CRC: buf.CRC})
		}
		cc.Min, cc.Max = columnStats(c.Type, &b.Cols[i], b.Rows)
	}
	tf.nbat++
	tw.meta.Chunks = append(tw.meta.Chunks, ch)
	tw.meta.Rows += int64(b.Rows)
	return nil
}

// sameColumns checks that got has want's column names and types in order.
func sameColumns(want, got *schema.Table) error {
	if len(want.Columns) != len(got.Columns) {
		return fmt.Errorf("dataset: %s batch has %d columns, table %s has %d", got.Name, len(got.Columns), want.Name, len(want.Columns))
	}
	for i, c := range want.Columns {
		if g := got.Columns[i]; g.Name != c.Name || g.Type != c.Type || g.Scale != c.Scale {
			return fmt.Errorf("dataset: %s column %d is %s %v, want %s %v", want.Name, i, g.Name, g.Type, c.Name, c.Type)
		}
	}
	return nil
}

// finish closes the table's files: footer, flush, fsync, close; records
// file sizes.
func (tw *TableWriter) finish() error {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	tw.closed = true
	for _, tf := range tw.files {
		if tf == nil {
			continue
		}
		size, err := tf.fw.Close()
		if err == nil {
			err = tf.bw.Flush()
		}
		if err == nil {
			err = tf.f.Sync()
		}
		if cerr := tf.f.Close(); err == nil {
			err = cerr
		}
		if err != nil && tw.err == nil {
			tw.err = fmt.Errorf("dataset: finish %s: %w", tf.f.Name(), err)
		}
		tw.meta.Files[tf.idx].Size = size
	}
	tw.files = nil
	for i := range tw.sketches {
		tw.meta.Columns[i].Distinct = tw.sketches[i].Estimate()
	}
	if tw.parts > 0 {
		// Each partition has its own file, so ordering by partition keeps
		// every file's batches in order (as Open checks).
		slices.SortStableFunc(tw.meta.Chunks, func(a, b ChunkMeta) int { return a.Partition - b.Partition })
	}
	return tw.err
}

// abandon closes the table's files without finishing them.
func (tw *TableWriter) abandon() {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	tw.closed = true
	for _, tf := range tw.files {
		if tf != nil {
			tf.f.Close()
		}
	}
	tw.files = nil
}

// Commit finishes every table file (footer + fsync), writes manifest.json
// into the temporary folder (temp file + fsync + rename), then renames the
// stripe folders and finally the dataset folder into place, replacing
// existing ones only when Force was set. On error everything written is
// removed (as by Abort).
func (w *Writer) Commit() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return fmt.Errorf("dataset: %s: Commit after Commit or Abort", w.dir)
	}
	err := w.commit()
	if err != nil {
		w.abortLocked()
	}
	w.done = true
	return err
}

func (w *Writer) commit() error {
	m := Manifest{FormatVersion: FormatVersion, Name: w.meta.Name, ScaleFactor: w.meta.ScaleFactor,
		Generator: w.meta.Generator, Alignment: arrowipc.Alignment, Partitions: w.parts,
		Checksums: ChecksumCRC32C, Tables: []TableMeta{}}
	if m.Name == "" {
		m.Name = filepath.Base(w.dir)
	}
	for k, s := range w.stripes {
		if k == 0 {
			m.Stripes = append(m.Stripes, ".")
		} else {
			m.Stripes = append(m.Stripes, s.final)
		}
	}
	for _, tw := range w.tables {
		if err := tw.finish(); err != nil {
			return err
		}
		m.Tables = append(m.Tables, tw.meta)
	}
	for _, s := range w.stripes {
		if err := syncDir(s.tmp); err != nil {
			return err
		}
	}
	digest, err := m.ComputeDigest()
	if err != nil {
		return err
	}
	m.Digest = digest
	data, err := json.MarshalIndent(&m, "", " ")
	if err != nil {
		return fmt.Errorf("dataset: encode manifest: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(w.stripes[0].tmp, ManifestName), append(data, '\n')); err != nil {
		return err
	}
	// Stripes first, the folder holding the manifest last: once dir has a
	// manifest, every file it names is in place.
	for k := len(w.stripes) - 1; k >= 0; k-- {
		s := &w.stripes[k]
		if err := os.Remove(filepath.Join(s.tmp, ownerFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("dataset: %w", err)
		}
		if err := replaceDir(s.tmp, s.final, w.force); err != nil {
			return err
		}
		s.tmp = ""
	}
	return nil
}

// writeFileAtomic writes data to path via path.tmp, fsync and rename.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("dataset: write %s: %w", tmp, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("dataset: write %s: %w", path, err)
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("dataset: sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("dataset: sync %s: %w", dir, err)
	}
	return nil
}

// replaceDir renames tmp to final. An existing empty final is removed
// first; a non-empty one is replaced only with force: it is first moved
// aside into a hidden holder folder and removed after the rename.
func replaceDir(tmp, final string, force bool) error {
	parent := filepath.Dir(final)
	if err := checkTarget(final, force); err != nil {
		return err
	}
	var holder string
	ents, err := os.ReadDir(final)
	if err == nil && len(ents) == 0 {
		// os.Rename refuses to replace a folder, even an empty one.
		if err := os.Remove(final); err != nil {
			return fmt.Errorf("dataset: replace empty %s: %w", final, err)
		}
	}
	if err == nil && len(ents) > 0 {
		holder, err = os.MkdirTemp(parent, "."+filepath.Base(final)+".old-")
		if err != nil {
			return fmt.Errorf("dataset: replace %s: %w", final, err)
		}
		if err := os.Rename(final, filepath.Join(holder, "old")); err != nil {
			os.Remove(holder)
			return fmt.Errorf("dataset: move %s aside: %w", final, err)
		}
	}
	if err := os.Rename(tmp, final); err != nil {
		if holder != "" {
			os.Rename(filepath.Join(holder, "old"), final)
			os.Remove(holder)
		}
		return fmt.Errorf("dataset: rename %s to %s: %w", tmp, final, err)
	}
	if holder != "" {
		if err := os.RemoveAll(holder); err != nil {
			return fmt.Errorf("dataset: remove old %s: %w", final, err)
		}
	}
	return syncDir(parent)
}

// Abort closes and removes everything this Writer wrote. It is a no-op
// after Commit or a previous Abort.
func (w *Writer) Abort() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return
	}
	w.abortLocked()
	w.done = true
}

func (w *Writer) abortLocked() {
	for _, tw := range w.tables {
		tw.abandon()
	}
	for i := range w.stripes {
		if w.stripes[i].tmp != "" {
			os.RemoveAll(w.stripes[i].tmp)
			w.stripes[i].tmp = ""
		}
	}
}
