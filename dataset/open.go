package dataset

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"gostachio/dataset/arrowipc"
	"gostachio/tpch/schema"
)

// Sentinel errors of Open, for callers that branch (errors.Is).
var (
	// ErrNoManifest: the folder has no manifest.json (or does not exist).
	ErrNoManifest = errors.New("no manifest.json: not a complete dataset")
	// ErrFormatVersion: the manifest's format_version is not FormatVersion.
	ErrFormatVersion = errors.New("unsupported dataset format version")
	// ErrCorrupt: the manifest or a data file is malformed, missing,
	// truncated, or disagrees with the other.
	ErrCorrupt = errors.New("corrupt dataset")
	// ErrDigest: the manifest's content does not hash to the digest it
	// recorded when it was written (it was edited since). It wraps
	// ErrCorrupt.
	ErrDigest = fmt.Errorf("%w: manifest digest mismatch", ErrCorrupt)
)

// Dataset is an opened, validated dataset. It is immutable and shared:
// Open returns the same *Dataset for the same folder while manifest.json is
// unchanged, so callers must not modify Manifest.
type Dataset struct {
	// Dir is the absolute dataset folder (stripe 0).
	Dir      string
	Manifest *Manifest
	stripes  []string // absolute stripe folders
	byName   map[string]int
}

// cacheKey identifies one version of a manifest: the process-wide cache
// re-reads a dataset when its manifest.json changes size or mtime.
type cacheKey struct {
	mtime int64
	size  int64
}

type cacheEntry struct {
	key cacheKey
	ds  *Dataset
}

// maxCached bounds the metadata cache; beyond it an arbitrary entry is
// evicted (a process normally uses a handful of datasets).
const maxCached = 64

var metaCache = struct {
	sync.Mutex
	m map[string]cacheEntry
}{m: map[string]cacheEntry{}}

// Open validates and returns the dataset in dir. Manifest and IPC footers
// are read once per dataset per process (cache keyed by absolute path and
// manifest mtime/size); every Open still checks that each data file exists
// with the size the manifest records. Errors name the file and the problem
// and wrap ErrNoManifest, ErrFormatVersion or ErrCorrupt.
func Open(dir string) (*Dataset, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("dataset: open %s: %w", dir, err)
	}
	mpath := filepath.Join(abs, ManifestName)
	st, err := os.Stat(mpath)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("dataset: open %s: %w: %w", abs, ErrNoManifest, err)
		}
		return nil, fmt.Errorf("dataset: open %s: %w", mpath, err)
	}
	key := cacheKey{mtime: st.ModTime().UnixNano(), size: st.Size()}
	metaCache.Lock()
	e, ok := metaCache.m[abs]
	metaCache.Unlock()
	if ok && e.key == key {
		if err := e.ds.checkFiles(); err != nil {
			metaCache.Lock()
			delete(metaCache.m, abs)
			metaCache.Unlock()
			return nil, err
		}
		return e.ds, nil
	}
	ds, err := load(abs, true)
	if err != nil {
		return nil, err
	}
	metaCache.Lock()
	if len(metaCache.m) >= maxCached {
		for k := range metaCache.m {
			delete(metaCache.m, k)
			break
		}
	}
	metaCache.m[abs] = cacheEntry{key: key, ds: ds}
	metaCache.Unlock()
	return ds, nil
}

func corrupt(path, format string, args ...any) error {
	return fmt.Errorf("dataset: %s: %w: %s", path, ErrCorrupt, fmt.Sprintf(format, args...))
}

// load reads and validates a dataset without the cache. The checks that
// name what disagrees (the manifest's own consistency, the files' sizes,
// the IPC footers, every record batch's metadata) run before the digest,
// which catches any other edit; checkDigest false skips it, for Verify to
// name what an edit changed.
func load(abs string, checkDigest bool) (*Dataset, error) {
	mpath := filepath.Join(abs, ManifestName)
	data, err := os.ReadFile(mpath)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("dataset: open %s: %w: %w", abs, ErrNoManifest, err)
		}
		return nil, fmt.Errorf("dataset: read %s: %w", mpath, err)
	}
	var probe struct {
		FormatVersion *int `json:"format_version"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, corrupt(mpath, "invalid JSON: %v", err)
	}
	if probe.FormatVersion == nil {
		return nil, corrupt(mpath, "no format_version")
	}
	if *probe.FormatVersion != FormatVersion {
		return nil, fmt.Errorf("dataset: %s: %w: format_version %d, this build reads %d", mpath, ErrFormatVersion, *probe.FormatVersion, FormatVersion)
	}
	m := &Manifest{}
	if err := json.Unmarshal(data, m); err != nil {
		return nil, corrupt(mpath, "invalid JSON: %v", err)
	}
	ds := &Dataset{Dir: abs, Manifest: m, byName: map[string]int{}}
	if err := ds.validate(mpath); err != nil {
		return nil, err
	}
	if err := ds.checkFiles(); err != nil {
		return nil, err
	}
	for ti := range m.Tables {
		if err := ds.checkFooters(&m.Tables[ti]); err != nil {
			return nil, err
		}
		if err := ds.checkBatchHeaders(&m.Tables[ti]); err != nil {
			return nil, err
		}
	}
	if checkDigest {
		if err := ds.checkDigest(mpath); err != nil {
			return nil, err
		}
	}
	return ds, nil
}

// checkDigest compares the manifest's content with the digest it recorded.
func (ds *Dataset) checkDigest(mpath string) error {
	m := ds.Manifest
	if m.Digest == "" {
		return nil
	}
	got, err := m.ComputeDigest()
	if err != nil {
		return err
	}
	if got != m.Digest {
		return fmt.Errorf("dataset: %s: %w: it records %s, its content hashes to %s: the manifest was edited after it was written "+
			"(`gostachio inspect --verify %s` names the fields that disagree with the data; regenerate the dataset or restore the manifest)",
			mpath, ErrDigest, m.Digest, got, ds.Dir)
	}
	return nil
}

// checkBatchHeaders reads every record batch's metadata message and checks
// the row count and every buffer's offset and length against the
// manifest's chunk index, naming the chunk, column and field that differ.
// The manifest is what the engine reads by; the metadata is what the file
// says, and the two were written together.
func (ds *Dataset) checkBatchHeaders(tm *TableMeta) error {
	files := make([]*os.File, len(tm.Files))
	defer func() {
		for _, f := range files {
			if f != nil {
				f.Close()
			}
		}
	}()
	for ci := range tm.Chunks {
		c := &tm.Chunks[ci]
		p := ds.filePath(tm, c.File)
		if files[c.File] == nil {
			f, err := os.Open(p)
			if err != nil {
				return fmt.Errorf("dataset: data file %s: %w: %w", p, ErrCorrupt, err)
			}
			files[c.File] = f
		}
		h, err := arrowipc.ReadBatchHeader(files[c.File], c.Block())
		if err != nil {
			return corrupt(p, "table %s chunk %d: %v", tm.Name, ci, err)
		}
		if h.Length != c.Rows {
			return corrupt(p, "table %s chunk %d: rows is %d in the manifest, %d in the record batch", tm.Name, ci, c.Rows, h.Length)
		}
		if len(h.Nodes) != len(c.Columns) {
			return corrupt(p, "table %s chunk %d: %d columns in the manifest, %d in the record batch", tm.Name, ci, len(c.Columns), len(h.Nodes))
		}
		body := c.Block().BodyOffset()
		j := 0
		for k, cc := range c.Columns {
			name := tm.Schema.Columns[k].Name
			for bi, b := range cc.Buffers {
				if j >= len(h.Buffers) {
					return corrupt(p, "table %s chunk %d column %s: buffer %d is in the manifest, not in the record batch", tm.Name, ci, name, bi)
				}
				fb := h.Buffers[j]
				j++
				if body+fb.Offset != b.Off {
					return corrupt(p, "table %s chunk %d column %s: buffer %d offset is %d in the manifest, %d in the record batch", tm.Name, ci, name, bi, b.Off, body+fb.Offset)
				}
				if fb.Length != b.Len {
					return corrupt(p, "table %s chunk %d column %s: buffer %d length is %d in the manifest, %d in the record batch", tm.Name, ci, name, bi, b.Len, fb.Length)
				}
			}
		}
		if j != len(h.Buffers) {
			return corrupt(p, "table %s chunk %d: %d buffers in the manifest, %d in the record batch", tm.Name, ci, j, len(h.Buffers))
		}
	}
	return nil
}

// validate checks the manifest's internal consistency: names, types (and
// TPC-H tables against tpch/schema), stripes, files, and for every chunk
// the buffer count, lengths implied by the row count, alignment and
// bounds, and statistic kinds.
func (ds *Dataset) validate(mpath string) error {
	m := ds.Manifest
	if m.Alignment != arrowipc.Alignment {
		return corrupt(mpath, "alignment %d, want %d", m.Alignment, arrowipc.Alignment)
	}
	if len(m.Stripes) == 0 || m.Stripes[0] != "." {
		return corrupt(mpath, "stripes %q must start with \".\"", m.Stripes)
	}
	for _, s := range m.Stripes {
		if s == "" {
			return corrupt(mpath, "empty stripe path")
		}
		if !filepath.IsAbs(s) {
			s = filepath.Join(ds.Dir, s)
		}
		ds.stripes = append(ds.stripes, s)
	}
	if m.Partitions < 0 {
		return corrupt(mpath, "partitions %d is negative", m.Partitions)
	}
	if m.Checksums != "" && m.Checksums != ChecksumCRC32C {
		return corrupt(mpath, "checksums %q: this build knows %q", m.Checksums, ChecksumCRC32C)
	}
	for ti := range m.Tables {
		tm := &m.Tables[ti]
		where := fmt.Sprintf("%s: table %q", mpath, tm.Name)
		if !validName(tm.Name) {
			return corrupt(mpath, "invalid table name %q", tm.Name)
		}
		if _, dup := ds.byName[tm.Name]; dup {
			return corrupt(mpath, "table %s listed twice", tm.Name)
		}
		ds.byName[tm.Name] = ti
		t, err := tableSchema(tm)
		if err != nil {
			return corrupt(where, "%v", err)
		}
		tm.Schema = t
		for fi, f := range tm.Files {
			if !filepath.IsLocal(f.Path) || f.Stripe < 0 || f.Stripe >= len(m.Stripes) || f.Size < 0 {
				return corrupt(where, "file %d (%q, stripe %d, size %d) is invalid", fi, f.Path, f.Stripe, f.Size)
			}
		}
		if err := validateChunks(tm, t); err != nil {
			return corrupt(where, "%v", err)
		}
		if err := validatePlacement(tm, t, m.Partitions); err != nil {
			return corrupt(where, "%v", err)
		}
	}
	return nil
}

// validatePlacement checks a table's partitioning against the dataset's
// partition count: a partitioned table has the dataset's count, an
// integer-coded key column, and every chunk on a partition in range; an
// unpartitioned one has neither key nor placed chunks.
func validatePlacement(tm *TableMeta, t *schema.Table, parts int) error {
	if tm.Partitions == 0 {
		if tm.PartitionKey != "" {
			return fmt.Errorf("partition key %q without partitions", tm.PartitionKey)
		}
		for ci := range tm.Chunks {
			if p := tm.Chunks[ci].Partition; p != NoPartition {
				return fmt.Errorf("chunk %d is on partition %d of an unpartitioned table", ci, p)
			}
		}
		return nil
	}
	if tm.Partitions != parts {
		return fmt.Errorf("%d partitions, the dataset has %d", tm.Partitions, parts)
	}
	if _, err := keyColumn(t, tm.PartitionKey); err != nil {
		return err
	}
	for ci := range tm.Chunks {
		if p := tm.Chunks[ci].Partition; p < 0 || p >= tm.Partitions {
			return fmt.Errorf("chunk %d is on partition %d, want 0..%d", ci, p, tm.Partitions-1)
		}
	}
	return nil
}

// tableSchema turns a manifest table into a schema.Table: the canonical
// TPC-H table when the name is one (columns must then match it exactly),
// else a table built from the manifest columns.
func tableSchema(tm *TableMeta) (*schema.Table, error) {
	if len(tm.Columns) == 0 {
		return nil, fmt.Errorf("no columns")
	}
	t := &schema.Table{Name: tm.Name}
	seen := map[string]bool{}
	for _, c := range tm.Columns {
		typ, err := schema.ParseType(c.Type)
		if err != nil {
			return nil, fmt.Errorf("column %q: %v", c.Name, err)
		}
		if c.Name == "" || seen[c.Name] {
			return nil, fmt.Errorf("empty or duplicate column name %q", c.Name)
		}
		seen[c.Name] = true
		if typ == schema.Decimal {
			if c.Precision < 1 || c.Precision > schema.MaxDecimalPrecision || c.Scale < 0 || c.Scale > c.Precision {
				return nil, fmt.Errorf("column %q of type %s has precision/scale %d/%d, want 0 <= scale <= precision <= %d", c.Name, c.Type, c.Precision, c.Scale, schema.MaxDecimalPrecision)
			}
		} else if c.Precision != 0 || c.Scale != 0 {
			return nil, fmt.Errorf("column %q of type %s has precision/scale %d/%d, want 0/0", c.Name, c.Type, c.Precision, c.Scale)
		}
		t.Columns = append(t.Columns, schema.Column{Name: c.Name, Type: typ, Precision: c.Precision, Scale: c.Scale})
	}
	canon, err := schema.Lookup(tm.Name)
	if err != nil {
		return t, nil
	}
	if len(canon.Columns) != len(t.Columns) {
		return nil, fmt.Errorf("%d columns, TPC-H %s has %d", len(t.Columns), canon.Name, len(canon.Columns))
	}
	for i, c := range canon.Columns {
		if t.Columns[i].Name != c.Name || t.Columns[i].Type != c.Type || t.Columns[i].Scale != c.Scale || t.Columns[i].Precision != c.Precision {
			return nil, fmt.Errorf("column %d is %s %v, TPC-H says %s %v", i, t.Columns[i].Name, t.Columns[i].Type, c.Name, c.Type)
		}
	}
	return canon, nil
}

func validateChunks(tm *TableMeta, t *schema.Table) error {
	var rows int64
	nbat := make([]int, len(tm.Files))
	for ci := range tm.Chunks {
		c := &tm.Chunks[ci]
		if c.File < 0 || c.File >= len(tm.Files) {
			return fmt.Errorf("chunk %d names file %d of %d", ci, c.File, len(tm.Files))
		}
		size := tm.Files[c.File].Size
		if c.Batch != nbat[c.File] {
			return fmt.Errorf("chunk %d is batch %d of file %d, want %d", ci, c.Batch, c.File, nbat[c.File])
		}
		nbat[c.File]++
		if c.Rows <= 0 || c.Rows > 1<<31-2 {
			return fmt.Errorf("chunk %d has %d rows", ci, c.Rows)
		}
		rows += c.Rows
		body := c.Offset + int64(c.MetaLength)
		if c.Offset < 8 || c.MetaLength < 16 || c.BodyLength < 0 || body%arrowipc.Alignment != 0 ||
			c.BodyLength > size || body > size-c.BodyLength {
			return fmt.Errorf("chunk %d block (offset %d, metadata %d, body %d) is misaligned or outside the %d-byte file", ci, c.Offset, c.MetaLength, c.BodyLength, size)
		}
		if len(c.Columns) != len(t.Columns) {
			return fmt.Errorf("chunk %d has %d columns, want %d", ci, len(c.Columns), len(t.Columns))
		}
		for k, col := range t.Columns {
			cc := &c.Columns[k]
			want := []int64{0, c.Rows * int64(col.Type.Width())}
			if col.Type == schema.String {
				want = []int64{0, (c.Rows + 1) * 4, -1}
			}
			if len(cc.Buffers) != len(want) {
				return fmt.Errorf("chunk %d column %s has %d buffers, want %d", ci, col.Name, len(cc.Buffers), len(want))
			}
			for j, b := range cc.Buffers {
				if (want[j] >= 0 && b.Len != want[j]) || b.Len < 0 || b.Len > 1<<31-1 {
					return fmt.Errorf("chunk %d column %s buffer %d has length %d, want %d", ci, col.Name, j, b.Len, want[j])
				}
				if b.Off%arrowipc.Alignment != 0 || b.Off < body || b.Off > body+c.BodyLength-b.Padded() {
					return fmt.Errorf("chunk %d column %s buffer %d at %d+%d is misaligned or outside the body %d+%d", ci, col.Name, j, b.Off, b.Len, body, c.BodyLength)
				}
			}
			isStr := col.Type == schema.String
			if cc.Min.IsStr != isStr || cc.Max.IsStr != isStr {
				return fmt.Errorf("chunk %d column %s statistics have the wrong kind", ci, col.Name)
			}
			if col.Type.Width() == 4 && (cc.Min.Int != int64(int32(cc.Min.Int)) || cc.Max.Int != int64(int32(cc.Max.Int))) {
				return fmt.Errorf("chunk %d column %s statistics exceed int32", ci, col.Name)
			}
			if valueLess(cc.Max, cc.Min) {
				return fmt.Errorf("chunk %d column %s: min %s is above max %s", ci, col.Name, statString(cc.Min), statString(cc.Max))
			}
		}
	}
	if rows != tm.Rows {
		return fmt.Errorf("chunks hold %d rows, table says %d", rows, tm.Rows)
	}
	return nil
}

// filePath is the absolute path of file fi of tm.
func (ds *Dataset) filePath(tm *TableMeta, fi int) string {
	f := tm.Files[fi]
	return filepath.Join(ds.stripes[f.Stripe], f.Path)
}

// checkFiles stats every data file: it must exist with the recorded size.
func (ds *Dataset) checkFiles() error {
	for ti := range ds.Manifest.Tables {
		tm := &ds.Manifest.Tables[ti]
		for fi, f := range tm.Files {
			p := ds.filePath(tm, fi)
			st, err := os.Stat(p)
			if err != nil {
				return fmt.Errorf("dataset: data file %s of table %s: %w: %w", p, tm.Name, ErrCorrupt, err)
			}
			if st.Size() != f.Size {
				what := "shorter"
				if st.Size() > f.Size {
					what = "longer"
				}
				return corrupt(p, "data file has %d bytes, %s than the %d the manifest says", st.Size(), what, f.Size)
			}
		}
	}
	return nil
}

// checkFooters reads each file's IPC footer and checks its schema and
// record-batch blocks against the manifest.
func (ds *Dataset) checkFooters(tm *TableMeta) error {
	for fi, f := range tm.Files {
		p := ds.filePath(tm, fi)
		fh, err := os.Open(p)
		if err != nil {
			return fmt.Errorf("dataset: data file %s: %w: %w", p, ErrCorrupt, err)
		}
		ft, err := arrowipc.ReadFooter(fh, f.Size)
		fh.Close()
		if err != nil {
			return corrupt(p, "%v", err)
		}
		if len(ft.Fields) != len(tm.Schema.Columns) {
			return corrupt(p, "IPC schema has %d fields, manifest table %s has %d columns", len(ft.Fields), tm.Name, len(tm.Schema.Columns))
		}
		for i, c := range tm.Schema.Columns {
			if fd := ft.Fields[i]; fd.Name != c.Name || fd.Type != c.Type {
				return corrupt(p, "IPC schema field %d is %s %v, manifest says %s %v", i, fd.Name, fd.Type, c.Name, c.Type)
			}
		}
		var blocks []arrowipc.Block
		for ci := range tm.Chunks {
			if tm.Chunks[ci].File == fi {
				blocks = append(blocks, tm.Chunks[ci].Block())
			}
		}
		if len(blocks) != len(ft.Blocks) {
			return corrupt(p, "IPC footer lists %d record batches, manifest %d", len(ft.Blocks), len(blocks))
		}
		for i, b := range blocks {
			if ft.Blocks[i] != b {
				return corrupt(p, "record batch %d is at %+v in the IPC footer, %+v in the manifest", i, ft.Blocks[i], b)
			}
		}
	}
	return nil
}
