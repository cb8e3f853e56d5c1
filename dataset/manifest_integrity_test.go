package dataset

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"gostachio/tpch/schema"
)

// chunkColumn is column name of chunk ci of table tbl in a generic manifest.
func chunkColumn(m map[string]any, tbl string, ci int, name string) map[string]any {
	tm := table(m, tbl)
	k := -1
	for i, c := range tm["columns"].([]any) {
		if c.(map[string]any)["name"] == name {
			k = i
		}
	}
	if k < 0 {
		panic("test: no column " + name)
	}
	return tm["chunks"].([]any)[ci].(map[string]any)["columns"].([]any)[k].(map[string]any)
}

func TestManifestDigestRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	writeDataset(t, dir, CreateOptions{}, sampleData())
	ds, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ds.Manifest.Digest, DigestPrefix) || len(ds.Manifest.Digest) != len(DigestPrefix)+64 {
		t.Fatalf("digest %q, want %s and 64 hex digits", ds.Manifest.Digest, DigestPrefix)
	}
	got, err := ds.Manifest.ComputeDigest()
	if err != nil || got != ds.Manifest.Digest {
		t.Fatalf("ComputeDigest = %q, %v; recorded %q", got, err, ds.Manifest.Digest)
	}
	c := *ds.Manifest
	c.ScaleFactor += 1
	if d, _ := c.ComputeDigest(); d == got {
		t.Fatal("a changed scale factor hashes the same")
	}
}

// TestEditedStatisticRefused: one digit of a chunk's max changed in the
// manifest. Below the min, Open names the chunk and column; above it, the
// digest refuses the dataset and inspect --verify names the field from
// the data. Without either, a query prunes chunks it should read.
func TestEditedStatisticRefused(t *testing.T) {
	good := filepath.Join(t.TempDir(), "good")
	writeDataset(t, good, CreateOptions{}, sampleData())
	ds, err := Open(good)
	if err != nil {
		t.Fatal(err)
	}
	k := schema.Lineitem.Column("l_shipdate")
	realMin := ds.Manifest.Tables[0].Chunks[2].Columns[k].Min.Int
	realMax := ds.Manifest.Tables[0].Chunks[2].Columns[k].Max.Int
	if realMax-1 <= realMin {
		t.Fatalf("synthetic l_shipdate of chunk 2 spans %d..%d: too narrow for the test", realMin, realMax)
	}

	below := filepath.Join(t.TempDir(), "below")
	copyDir(t, good, below)
	editManifest(t, below, func(m map[string]any) {
		chunkColumn(m, "lineitem", 2, "l_shipdate")["max"] = realMin - 1
	})
	_, err = Open(below)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "chunk 2 column l_shipdate: min") {
		t.Fatalf("max below min: Open = %v, want ErrCorrupt naming chunk 2 column l_shipdate", err)
	}

	above := filepath.Join(t.TempDir(), "above")
	copyDir(t, good, above)
	editManifest(t, above, func(m map[string]any) {
		chunkColumn(m, "lineitem", 2, "l_shipdate")["max"] = realMax - 1
	})
	if _, err := Open(above); !errors.Is(err, ErrDigest) {
		t.Fatalf("max edited: Open = %v, want ErrDigest", err)
	}
	var out bytes.Buffer
	err = VerifyDataset(context.Background(), above, false, &out, nil)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("VerifyDataset = %v, want ErrCorrupt", err)
	}
	text := out.String()
	for _, want := range []string{"chunk 2 column l_shipdate: max is", "MISMATCH manifest digest", "FAILED"} {
		if !strings.Contains(text, want) {
			t.Errorf("inspect --verify output lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "verified") {
		t.Errorf("inspect --verify says verified on a failed check:\n%s", text)
	}
	if i, j := strings.Index(text, "MISMATCH"), strings.Index(text, "FAILED"); i > j {
		t.Errorf("the verdict comes before the findings:\n%s", text)
	}
}

// TestSwappedBuffersRefused: the offsets and checksums of two columns
// swapped in the manifest (each buffer still matches its checksum) are
// refused at Open, naming the column, with or without a digest.
func TestSwappedBuffersRefused(t *testing.T) {
	good := filepath.Join(t.TempDir(), "good")
	writeDataset(t, good, CreateOptions{}, sampleData())
	for _, keepDigest := range []bool{true, false} {
		dir := filepath.Join(t.TempDir(), "swapped")
		copyDir(t, good, dir)
		editManifest(t, dir, func(m map[string]any) {
			if !keepDigest {
				delete(m, "digest")
			}
			a := chunkColumn(m, "lineitem", 0, "l_quantity")["buffers"].([]any)[1].(map[string]any)
			b := chunkColumn(m, "lineitem", 0, "l_extendedprice")["buffers"].([]any)[1].(map[string]any)
			a["off"], b["off"] = b["off"], a["off"]
			a["crc"], b["crc"] = b["crc"], a["crc"]
		})
		_, err := Open(dir)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "chunk 0 column l_quantity: buffer 1 offset") {
			t.Errorf("digest kept %v: Open = %v, want ErrCorrupt naming chunk 0 column l_quantity's buffer offset", keepDigest, err)
		}
	}
}

// TestVerifyCleanDataset: an intact dataset verifies, statistics included.
func TestVerifyCleanDataset(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	writeDataset(t, dir, CreateOptions{}, sampleData())
	var out bytes.Buffer
	if err := VerifyDataset(context.Background(), dir, false, &out, nil); err != nil {
		t.Fatalf("VerifyDataset: %v\n%s", err, out.String())
	}
	if !strings.HasPrefix(out.String(), "verified ") || !strings.Contains(out.String(), "manifest digest ok") {
		t.Errorf("output %q", out.String())
	}
}
