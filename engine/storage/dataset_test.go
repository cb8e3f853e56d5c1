package storage_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"gostachio/dataset"
	"gostachio/engine/storage"
	"gostachio/engine/storage/alloc"
	"gostachio/tpch"
)

// TestReadGeneratedDataset reads every column buffer of every chunk of a
// generated, two-way striped TPC-H SF0.01 dataset through both reader
// backends, one request per chunk (the chunk's columns combined), on the
// device queue of the chunk's stripe, and compares every byte with a plain
// read of the file.
func TestReadGeneratedDataset(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "sf0.01")
	stripe := filepath.Join(root, "stripe")
	if err := os.Mkdir(stripe, 0o755); err != nil {
		t.Fatal(err)
	}
	err := tpch.Gen(context.Background(), tpch.GenOptions{ScaleFactor: 0.01, Out: dir, ChunkRows: 4096,
		Stripes: []string{stripe}}, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := dataset.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(ds.Stripes()); got != 2 {
		t.Fatalf("dataset has %d stripes, want 2", got)
	}
	for _, backend := range []string{storage.IOUring, storage.IOPread} {
		t.Run(backend, func(t *testing.T) {
			pool, err := alloc.NewPool(alloc.Options{})
			if err != nil {
				t.Fatal(err)
			}
			checked := alloc.NewChecked(pool)
			opts := storage.DefaultOptions()
			opts.IO = backend
			opts.Allocator = checked
			r, err := storage.NewReader(opts)
			if err != nil {
				t.Skipf("%s reader unavailable here: %v", backend, err)
			}
			devices := storage.NewDeviceMap()
			plain := map[string][]byte{}
			var want [][][]byte // per request, per range
			var reqs []storage.Request
			for _, name := range ds.Tables() {
				tm, _ := ds.Table(name)
				for ci := range tm.Chunks {
					path, _, err := ds.ChunkPath(name, ci)
					if err != nil {
						t.Fatal(err)
					}
					if plain[path] == nil {
						if plain[path], err = os.ReadFile(path); err != nil {
							t.Fatal(err)
						}
					}
					dev, err := devices.Device(filepath.Dir(path))
					if err != nil {
						t.Fatal(err)
					}
					req := storage.Request{Tag: uint64(len(reqs)), Device: dev}
					var w [][]byte
					for _, col := range tm.Chunks[ci].Columns {
						for _, b := range col.Buffers {
							if b.Len == 0 {
								continue
							}
							req.Ranges = append(req.Ranges, storage.Range{Path: path, Offset: b.Off, Length: b.Len})
							w = append(w, plain[path][b.Off:b.Off+b.Len])
						}
					}
					reqs = append(reqs, req)
					want = append(want, w)
				}
			}
			if err := r.Submit(reqs...); err != nil {
				t.Fatal(err)
			}
			var got int
			for got < len(reqs) {
				cs, err := r.Wait(context.Background(), nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range cs {
					if c.Err != nil {
						t.Fatalf("request %d: %v", c.Tag, c.Err)
					}
					for i, rg := range c.Ranges {
						if !bytes.Equal(rg, want[c.Tag][i]) {
							t.Fatalf("request %d range %d: bytes differ from a plain read", c.Tag, i)
						}
					}
					c.Buffer.Release()
					got++
				}
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			if err := checked.Check(); err != nil {
				t.Fatalf("leaked buffers: %v", err)
			}
			t.Logf("%s: %d requests over %d files read and compared", backend, len(reqs), len(plain))
		})
	}
}
