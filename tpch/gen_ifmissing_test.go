package tpch

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gostachio/dataset"
)

// TestGenIfMissing: --if-missing keeps an intact dataset, and refuses —
// saying what is wrong — one whose data fails its checksums (before, it
// was reused), one whose data file is truncated (before: "exists and is
// not empty"), and a folder that is not a dataset.
func TestGenIfMissing(t *testing.T) {
	good := filepath.Join(t.TempDir(), "sf")
	genSmall(t, good, GenOptions{})
	run := func(dir string) error {
		return Gen(context.Background(), GenOptions{ScaleFactor: 0.01, ChunkRows: 2048, Out: dir, IfMissing: true}, io.Discard, io.Discard)
	}
	if err := run(good); err != nil {
		t.Fatalf("an intact dataset: %v", err)
	}
	copyTree := func(name string) string {
		dst := filepath.Join(t.TempDir(), name)
		if err := os.CopyFS(dst, os.DirFS(good)); err != nil {
			t.Fatal(err)
		}
		return dst
	}
	ds, err := dataset.Open(good)
	if err != nil {
		t.Fatal(err)
	}
	li, _ := ds.Table("lineitem")
	liFile := filepath.Join("lineitem.arrow")
	if li.Files[0].Path != liFile {
		t.Fatalf("lineitem file %q", li.Files[0].Path)
	}

	flipped := copyTree("flipped")
	f, err := os.OpenFile(filepath.Join(flipped, liFile), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	off := li.Chunks[1].Columns[4].Buffers[1].Off
	b := []byte{0}
	f.ReadAt(b, off)
	b[0] ^= 1
	f.WriteAt(b, off)
	f.Close()
	if err := run(flipped); err == nil || !strings.Contains(err.Error(), "fails verification") || !strings.Contains(err.Error(), "--force") {
		t.Errorf("a dataset failing its checksums: %v, want a refusal naming the verification and --force", err)
	}

	truncated := copyTree("truncated")
	if err := os.Truncate(filepath.Join(truncated, liFile), li.Files[0].Size/2); err != nil {
		t.Fatal(err)
	}
	if err := run(truncated); err == nil || !strings.Contains(err.Error(), "shorter than") {
		t.Errorf("a truncated dataset: %v, want the file named as shorter than the manifest says", err)
	}

	other := filepath.Join(t.TempDir(), "other")
	os.MkdirAll(other, 0o755)
	os.WriteFile(filepath.Join(other, "notes.txt"), []byte("mine"), 0o644)
	if err := run(other); err == nil || !strings.Contains(err.Error(), "holds no manifest.json") {
		t.Errorf("a folder that is not a dataset: %v", err)
	}
}
