package dataset

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// flipByte inverts one byte of the file at off.
func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// TestVerify writes a dataset, checks that it verifies clean, then
// changes one byte of one buffer (a value of a fixed-width column, which
// no structural check can notice) and checks that Verify names exactly that
// buffer and that ReadChunk refuses the chunk.
func TestVerify(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	writeDataset(t, dir, CreateOptions{}, sampleData())
	ds, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !ds.Checksummed() {
		t.Fatalf("a new dataset records checksums %q, want %q", ds.Manifest.Checksums, ChecksumCRC32C)
	}
	r, err := ds.Verify(context.Background(), nil)
	if err != nil {
		t.Fatalf("clean dataset: %v", err)
	}
	var want int64 // every column's unpadded bytes, as inspect counts them
	for _, tb := range ds.Report().Tables {
		for _, c := range tb.Columns {
			want += c.Bytes
		}
	}
	if r.Bytes != want || r.BadCount != 0 || r.Chunks != 6 || r.Tables != 4 {
		t.Fatalf("clean report %+v, want %d bytes in 6 chunks of 4 tables, none bad", r, want)
	}

	// lineitem chunk 2, column l_quantity (an int64 column): its 100th value.
	tm, _ := ds.Table("lineitem")
	k := tm.Schema.Column("l_quantity")
	ref := tm.Chunks[2].Columns[k].Buffers[1]
	flipByte(t, filepath.Join(dir, "lineitem.arrow"), ref.Off+8*100)

	ds, err = Open(dir) // sizes unchanged: Open cannot see it
	if err != nil {
		t.Fatal(err)
	}
	r, err = ds.Verify(context.Background(), nil)
	if !errors.Is(err, ErrChecksum) || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("corrupt dataset: error %v, want ErrChecksum", err)
	}
	if r.BadCount != 1 || len(r.Bad) != 1 {
		t.Fatalf("report lists %d bad buffers (%d counted), want 1", len(r.Bad), r.BadCount)
	}
	b := r.Bad[0]
	if b.Table != "lineitem" || b.Chunk != 2 || b.Column != "l_quantity" || b.Offset != ref.Off || b.Want != ref.CRC || b.Got == ref.CRC {
		t.Fatalf("bad buffer %+v, want lineitem chunk 2 l_quantity at %d", b, ref.Off)
	}
	if !strings.Contains(err.Error(), "lineitem.arrow") || !strings.Contains(err.Error(), "l_quantity") {
		t.Fatalf("error %q does not name the file and column", err)
	}
	if _, err := ds.ReadChunk("lineitem", 2, []string{"l_quantity"}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("ReadChunk of the changed chunk: %v, want ErrCorrupt", err)
	}
	if _, err := ds.ReadChunk("lineitem", 0, []string{"l_quantity"}); err != nil {
		t.Fatalf("ReadChunk of an intact chunk: %v", err)
	}
}

// TestVerifyWithoutChecksums: a manifest from before checksums opens (its
// data reads as before) and Verify says it cannot check it.
func TestVerifyWithoutChecksums(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	writeDataset(t, dir, CreateOptions{}, sampleData())
	editManifest(t, dir, func(m map[string]any) {
		delete(m, "digest")
		delete(m, "checksums")
		for _, tb := range m["tables"].([]any) {
			for _, ch := range tb.(map[string]any)["chunks"].([]any) {
				for _, cc := range ch.(map[string]any)["columns"].([]any) {
					for _, b := range cc.(map[string]any)["buffers"].([]any) {
						delete(b.(map[string]any), "crc")
					}
				}
			}
		}
	})
	ds, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ds.Checksummed() {
		t.Fatal("Checksummed without checksums")
	}
	if _, err := ds.Verify(context.Background(), nil); !errors.Is(err, ErrNoChecksums) {
		t.Fatalf("Verify: %v, want ErrNoChecksums", err)
	}
	if _, err := ds.ReadChunk("lineitem", 2, nil); err != nil {
		t.Fatalf("ReadChunk: %v", err)
	}
}
