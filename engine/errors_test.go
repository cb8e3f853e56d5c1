package engine

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gostachio/dataset"
	"gostachio/tpch"
	"gostachio/tpch/queries"
)

// TestMemoryBudgetTooSmall: a query that cannot fit fails with an error
// naming the budget, instead of exceeding it.
func TestMemoryBudgetTooSmall(t *testing.T) {
	ds := testData(t, 0.01)
	for _, mem := range []int64{64 << 10, 1 << 20} {
		_, err := runQuery(context.Background(), ds, "q9", QueryOptions{Mem: mem})
		if err == nil || !strings.Contains(err.Error(), "--mem") {
			t.Errorf("mem %d: got %v, want an error naming --mem", mem, err)
		}
	}
	// The same query fits a sane budget, and its peak stays under it.
	r, err := runQuery(context.Background(), ds, "q9", QueryOptions{Mem: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if r.PeakRetained <= 0 || r.PeakRetained > 64<<20 {
		t.Fatalf("peak intermediate %d outside (0, 64 MiB]", r.PeakRetained)
	}
}

func TestUnknownQuery(t *testing.T) {
	ds := testData(t, 0.01)
	if _, err := runQuery(context.Background(), ds, "q23", QueryOptions{}); !errors.Is(err, ErrUnknownQuery) {
		t.Fatalf("q23: %v, want ErrUnknownQuery", err)
	}
	if _, err := ParseQueries("q1,q99", queries.Names()); !errors.Is(err, ErrUnknownQuery) {
		t.Fatalf("q99: %v", err)
	}
	if qs, err := ParseQueries("Q01, q6", queries.Names()); err != nil || len(qs) != 2 || qs[0] != "q1" || qs[1] != "q6" {
		t.Fatalf("ParseQueries(Q01, q6, queries.Names()) = %v, %v", qs, err)
	}
}

func TestRunQueriesBadInput(t *testing.T) {
	err := RunQueries(context.Background(), RunOptions{Catalog: queries.Catalog(), Data: filepath.Join(t.TempDir(), "missing"), Query: "q1"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("missing dataset: %v", err)
	}
	ds := testData(t, 0.01)
	err = RunQueries(context.Background(), RunOptions{Catalog: queries.Catalog(), Data: ds.Dir, Query: "q1", Format: "xml"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "xml") {
		t.Fatalf("bad format: %v", err)
	}
}

// TestCorruptStringOffsets: bytes changed behind the manifest make the
// query fail with an error naming the column, not panic or answer.
func TestCorruptStringOffsets(t *testing.T) {
	ds := ownData(t)
	// Offset 10 jumps far past the data.
	overwrite(t, ds, "l_returnflag", 40, []byte{0xff, 0xff, 0xff, 0x7f})
	// Without the checksums (which catch it first: TestCorruptValue), the
	// structural check of the offsets must still refuse them.
	_, err := runQuery(context.Background(), ds, "q1", QueryOptions{NoVerify: true})
	if err == nil || !strings.Contains(err.Error(), "l_returnflag") || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("corrupt offsets: %v, want an error naming l_returnflag as corrupt", err)
	}
	if errors.Is(err, dataset.ErrChecksum) {
		t.Fatalf("corrupt offsets with NoVerify: %v, a checksum error", err)
	}
}

// TestCorruptValue: one byte of one value changed behind the manifest
// leaves every structure intact, so only the checksums can tell. The query
// fails naming the file, chunk and column; skipping the check
// (NoVerify) answers, and differently from the intact data — the wrong
// answer that looks right which the check prevents.
func TestCorruptValue(t *testing.T) {
	ds := ownData(t)
	clean, err := runQuery(context.Background(), ds, "q1", QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Value 100's second byte: +0x..00 cents, a large change of one sum.
	overwrite(t, ds, "l_quantity", 8*100+1, []byte{0x7f})
	_, err = runQuery(context.Background(), ds, "q1", QueryOptions{})
	if !errors.Is(err, dataset.ErrChecksum) {
		t.Fatalf("changed value: %v, want a checksum error", err)
	}
	for _, s := range []string{"lineitem.arrow", "chunk 0", "l_quantity"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not name %q", err, s)
		}
	}
	wrong, err := runQuery(context.Background(), ds, "q1", QueryOptions{NoVerify: true})
	if err != nil {
		t.Fatalf("NoVerify: %v", err)
	}
	same := wrong.Batch.Rows == clean.Batch.Rows
	for i, row := range clean.Rows() {
		if !same {
			break
		}
		same = strings.Join(row, "|") == strings.Join(wrong.Rows()[i], "|")
	}
	if same {
		t.Fatal("the changed value did not change q1's answer: the test does not show what the check prevents")
	}
}

// ownData generates an SF0.01 dataset for one test alone (it may change
// the files).
func ownData(t *testing.T) *dataset.Dataset {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	if err := tpch.Gen(context.Background(), tpch.GenOptions{ScaleFactor: 0.01, Out: dir}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	ds, err := dataset.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// overwrite writes b at byte at of the values (or string offsets) buffer of
// lineitem column col in chunk 0, behind the manifest's back.
func overwrite(t *testing.T, ds *dataset.Dataset, col string, at int64, b []byte) {
	t.Helper()
	tm, _ := ds.Table("lineitem")
	ref := tm.Chunks[0].Columns[tm.Schema.Column(col)].Buffers[1]
	path, _, _ := ds.ChunkPath("lineitem", 0)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, ref.Off+at); err != nil {
		t.Fatal(err)
	}
}
