package dataset

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"gostachio/dataset/internal/synth"
	"gostachio/tpch/schema"
)

// tiny is the one-chunk table of the checked-in corpus: every buffer costs
// 4096 padded bytes, so the corpus files stay small only with few columns.
var tiny = schema.Table{Name: "t", Columns: []schema.Column{
	{Name: "k", Type: schema.Int64}, {Name: "s", Type: schema.String}}}

// fuzzSeed builds a valid one-table dataset and returns its manifest and
// its data file.
func fuzzSeed(t testing.TB, tbl *schema.Table, rows ...int) (manifest, data []byte) {
	dir := filepath.Join(t.TempDir(), "seed")
	var chunks []*schema.Batch
	for i, n := range rows {
		chunks = append(chunks, synth.Random(tbl, n, uint64(i+1)))
	}
	writeDataset(t, dir, CreateOptions{}, []tableData{{tbl, chunks}})
	m, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	d, err := os.ReadFile(filepath.Join(dir, tbl.Name+".arrow"))
	if err != nil {
		t.Fatal(err)
	}
	return m, d
}

// fuzzVariants are seed inputs: the valid pair and corrupted variants
// (truncated file, smashed footer, smashed message, truncated manifest).
func fuzzVariants(m, d []byte) [][2][]byte {
	flip := func(b []byte, at int) []byte {
		c := append([]byte{}, b...)
		c[at] ^= 0xff
		return c
	}
	return [][2][]byte{
		{m, d},
		{m, d[:len(d)-1]},
		{m, d[:len(d)/2]},
		{m, flip(d, len(d)-20)},
		{m, flip(d, len(d)-40)},
		{m, flip(d, 8+4)},
		{m, flip(d, 4096+8)},
		{m[:len(m)/2], d},
		{m, nil},
	}
}

// FuzzOpen writes the two inputs as manifest.json and as the data file
// (under both names the seeds use, nation.arrow and t.arrow) and opens the
// folder; Open and, when it succeeds, ReadChunk on every chunk and
// Inspect must return (values or errors) without panicking. The seed corpus
// is under testdata/fuzz/FuzzOpen and runs in plain go test.
func FuzzOpen(f *testing.F) {
	for _, v := range fuzzVariants(fuzzSeed(f, &schema.Nation, 25, 3)) {
		f.Add(v[0], v[1])
	}
	f.Fuzz(func(t *testing.T, manifest, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, ManifestName), manifest, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"nation.arrow", "t.arrow"} {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		ds, err := Open(dir)
		if err != nil {
			return
		}
		for _, name := range ds.Tables() {
			tm, _ := ds.Table(name)
			for i := range tm.Chunks {
				ds.ReadChunk(name, i, nil)
			}
		}
		Inspect(dir, true, discard{})
		Inspect(dir, false, discard{})
	})
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// TestWriteFuzzCorpus regenerates testdata/fuzz/FuzzOpen from fuzzVariants
// when GOSTACHIO_WRITE_FUZZ_CORPUS=1 (after a format change).
func TestWriteFuzzCorpus(t *testing.T) {
	if os.Getenv("GOSTACHIO_WRITE_FUZZ_CORPUS") != "1" {
		t.Skip("set GOSTACHIO_WRITE_FUZZ_CORPUS=1 to regenerate the seed corpus")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzOpen")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, v := range fuzzVariants(fuzzSeed(t, &tiny, 4))[:6] {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n[]byte(%q)\n", v[0], v[1])
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
