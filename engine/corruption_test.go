package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"gostachio/dataset"
	"gostachio/tpch/verify"
)

// TestCorruption mutates a dataset at random — one field of its manifest,
// or bytes of one of its data files — and runs a TPC-H query over it after
// each mutation: the query must either fail with an error that names the
// place (the dataset's folder or one of its files) or give the official
// answer. A wrong answer, an error that names nothing, or a panic fails
// the test with the mutation that caused it; a seed and an index reproduce
// any mutation. The run is short in `make test`;
// GOSTACHIO_CORRUPTION_MUTATIONS=10000 runs a long one (and
// GOSTACHIO_CORRUPTION_SEED another sequence). In the manner of SQLancer
// and TigerBeetle's VOPR: many random faults against an oracle.
func TestCorruption(t *testing.T) {
	n, seed := 120, uint64(1)
	if s := os.Getenv("GOSTACHIO_CORRUPTION_MUTATIONS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("GOSTACHIO_CORRUPTION_MUTATIONS=%q: want a positive count", s)
		}
		n = v
	}
	if s := os.Getenv("GOSTACHIO_CORRUPTION_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("GOSTACHIO_CORRUPTION_SEED=%q: %v", s, err)
		}
		seed = v
	}
	src := testData(t, 0.01)
	dir := filepath.Join(t.TempDir(), "ds")
	if err := os.CopyFS(dir, os.DirFS(src.Dir)); err != nil {
		t.Fatal(err)
	}
	queries := []string{"q1", "q6", "q14"}
	answers := map[string]*verify.Table{}
	prefix := map[string]bool{}
	for _, q := range queries {
		path, pre, ok := verify.AnswerPath(answersDir, officialDir, q, 0.01)
		if !ok {
			t.Fatalf("no official answer for %s at SF0.01", q)
		}
		want, err := verify.ReadAnswer(path)
		if err != nil {
			t.Fatal(err)
		}
		answers[q], prefix[q] = want, pre
	}
	mpath := filepath.Join(dir, dataset.ManifestName)
	pristine, err := os.ReadFile(mpath)
	if err != nil {
		t.Fatal(err)
	}
	dataFiles, err := filepath.Glob(filepath.Join(dir, "*.arrow"))
	if err != nil || len(dataFiles) == 0 {
		t.Fatalf("data files: %v %v", dataFiles, err)
	}
	sort.Strings(dataFiles)
	// Half the data mutations land in a buffer of a column the queries
	// read (every one reads lineitem), the others anywhere in any file:
	// most of a dataset's bytes are not read by a given query.
	read := lineitemBuffers(t, src)
	stamp := time.Now()
	counts := map[string]int{}
	for i := 0; i < n; i++ {
		rng := rand.New(rand.NewPCG(seed, uint64(i)^seed<<32))
		var what string
		var restore func()
		target := "data"
		if rng.IntN(2) == 0 {
			target = "manifest"
			what, restore = mutateManifest(t, rng, mpath, pristine)
		} else {
			what, restore = mutateData(t, rng, dataFiles, read)
		}
		// A fresh modification time for every version of the manifest:
		// Open caches by time and size, and a digit changed within the
		// file system's clock tick would keep both.
		stamp = stamp.Add(time.Second)
		if err := os.Chtimes(mpath, stamp, stamp); err != nil {
			t.Fatal(err)
		}
		q := queries[rng.IntN(len(queries))]
		outcome := runMutated(dir, q, answers[q], prefix[q])
		counts[outcome.kind]++
		counts[target+" "+outcome.kind]++
		if outcome.bad != "" {
			t.Errorf("mutation %d (seed %d) %s: %s: %s", i, seed, what, q, outcome.bad)
		}
		restore()
	}
	t.Logf("%d mutations (seed %d): %d refused naming the place, %d the official answer (the bytes or fields changed were not read), %d wrong; "+
		"manifest fields: %d refused, %d right; data bytes: %d refused, %d right",
		n, seed, counts["refused"], counts["right"], counts["wrong"],
		counts["manifest refused"], counts["manifest right"], counts["data refused"], counts["data right"])
	if counts["refused"] == 0 {
		t.Error("no mutation was refused: the test did not reach the checks")
	}
}

type mutationOutcome struct {
	kind string // refused, right, wrong
	bad  string // why it fails the test
}

// runMutated opens the dataset in dir and runs query q, and judges the
// outcome against want.
func runMutated(dir, q string, want *verify.Table, prefix bool) (out mutationOutcome) {
	defer func() {
		if r := recover(); r != nil {
			out = mutationOutcome{"wrong", fmt.Sprintf("panic: %v", r)}
		}
	}()
	ds, err := dataset.Open(dir)
	var r *QueryResult
	if err == nil {
		r, err = runQuery(context.Background(), ds, q, QueryOptions{Devices: 2, Mem: 256 << 20})
	}
	if err != nil {
		if !namesPlace(err.Error(), dir) {
			return mutationOutcome{"wrong", "an error that does not name the dataset or its file: " + err.Error()}
		}
		return mutationOutcome{kind: "refused"}
	}
	got := &verify.Table{Header: r.Columns, Rows: r.Rows()}
	if err := verify.Compare(got, want, prefix); err != nil {
		return mutationOutcome{"wrong", "a wrong answer: " + err.Error()}
	}
	return mutationOutcome{kind: "right"}
}

// namesPlace reports whether an error message names where the fault is:
// the dataset's folder, its manifest, or one of its data files.
func namesPlace(msg, dir string) bool {
	if strings.Contains(msg, dir) || strings.Contains(msg, dataset.ManifestName) {
		return true
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.arrow"))
	for _, f := range files {
		if strings.Contains(msg, filepath.Base(f)) {
			return true
		}
	}
	return false
}

// mutateManifest changes one leaf of the manifest's JSON tree (a number by
// a small or large step, to zero or to another leaf's value of the same
// key; a string by one character; or removes the leaf's key) and returns
// what it did and how to restore the pristine manifest.
func mutateManifest(t *testing.T, rng *rand.Rand, mpath string, pristine []byte) (string, func()) {
	t.Helper()
	var root any
	if err := json.Unmarshal(pristine, &root); err != nil {
		t.Fatal(err)
	}
	type leaf struct {
		path   string
		key    string
		parent any
		value  any
	}
	var leaves []leaf
	var walk func(v any, path, key string, parent any)
	walk = func(v any, path, key string, parent any) {
		switch x := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(x[k], path+"."+k, k, x)
			}
		case []any:
			for i, e := range x {
				walk(e, fmt.Sprintf("%s[%d]", path, i), strconv.Itoa(i), x)
			}
		default:
			leaves = append(leaves, leaf{path, key, parent, v})
		}
	}
	walk(root, "", "", nil)
	l := leaves[rng.IntN(len(leaves))]
	set := func(v any) {
		switch p := l.parent.(type) {
		case map[string]any:
			p[l.key] = v
		case []any:
			i, _ := strconv.Atoi(l.key)
			p[i] = v
		}
	}
	var what string
	switch v := l.value.(type) {
	case float64:
		var nv float64
		switch rng.IntN(5) {
		case 0:
			nv = v + 1
		case 1:
			nv = v - 1
		case 2:
			nv = 0
		case 3:
			nv = v * 10
		default: // another leaf's value under the same key: a swapped offset, count or statistic
			var same []float64
			for _, o := range leaves {
				if f, ok := o.value.(float64); ok && o.key == l.key && f != v {
					same = append(same, f)
				}
			}
			nv = v + 4096
			if len(same) > 0 {
				nv = same[rng.IntN(len(same))]
			}
		}
		if nv == v { // zero, or ten times zero: change it all the same
			nv = v + 1
		}
		set(nv)
		what = fmt.Sprintf("manifest %s: %v -> %v", l.path, v, nv)
	case string:
		if p, ok := l.parent.(map[string]any); ok && rng.IntN(4) == 0 {
			delete(p, l.key)
			what = fmt.Sprintf("manifest %s: removed", l.path)
			break
		}
		b := []byte(v)
		if len(b) == 0 {
			b = []byte{'x'}
		} else {
			b[rng.IntN(len(b))] ^= 1 << rng.IntN(7)
		}
		set(string(b))
		what = fmt.Sprintf("manifest %s: %q -> %q", l.path, v, b)
	case bool:
		set(!v)
		what = fmt.Sprintf("manifest %s: %v -> %v", l.path, v, !v)
	default:
		set(1.0)
		what = fmt.Sprintf("manifest %s: null -> 1", l.path)
	}
	data, err := json.Marshal(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mpath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return what, func() {
		if err := os.WriteFile(mpath, pristine, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// span is a file region: a column buffer.
type span struct {
	file     string
	off, len int64
}

// lineitemBuffers lists the column buffers of lineitem's chunks.
func lineitemBuffers(t *testing.T, ds *dataset.Dataset) []span {
	t.Helper()
	tm, err := ds.Table("lineitem")
	if err != nil {
		t.Fatal(err)
	}
	var out []span
	for _, ch := range tm.Chunks {
		for _, cc := range ch.Columns {
			for _, b := range cc.Buffers {
				if b.Len > 8 {
					out = append(out, span{tm.Files[ch.File].Path, b.Off, b.Len})
				}
			}
		}
	}
	return out
}

// mutateData changes bytes of one data file: one bit, one byte, or eight
// bytes zeroed, in a buffer of read (half the time) or anywhere in any of
// files (buffers, padding, IPC metadata, footer), and returns what it did
// and how to restore them.
func mutateData(t *testing.T, rng *rand.Rand, files []string, read []span) (string, func()) {
	t.Helper()
	n := int64(1)
	kind := rng.IntN(3)
	if kind == 2 {
		n = 8
	}
	var path string
	var off int64
	if rng.IntN(2) == 0 {
		b := read[rng.IntN(len(read))]
		path, off = filepath.Join(filepath.Dir(files[0]), b.file), b.off+rng.Int64N(b.len-n)
	} else {
		path = files[rng.IntN(len(files))]
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		off = rng.Int64N(max(st.Size()-n, 1))
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	orig := make([]byte, n)
	if _, err := f.ReadAt(orig, off); err != nil {
		t.Fatal(err)
	}
	mut := append([]byte(nil), orig...)
	switch kind {
	case 0:
		mut[0] ^= 1 << rng.IntN(8)
	case 1:
		mut[0] = byte(rng.IntN(256))
	default:
		clear(mut)
	}
	if _, err := f.WriteAt(mut, off); err != nil {
		t.Fatal(err)
	}
	what := fmt.Sprintf("%s: %d bytes at offset %d: %x -> %x", filepath.Base(path), n, off, orig, mut)
	return what, func() {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteAt(orig, off); err != nil {
			t.Fatal(err)
		}
	}
}
