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
)

// TestMemoryBudgetTooSmall: a query that cannot fit fails with an error
// naming the budget, instead of exceeding it.
func TestMemoryBudgetTooSmall(t *testing.T) {
	ds := testData(t, 0.01)
	for _, mem := range []int64{64 << 10, 1 << 20} {
		_, err := Query(context.Background(), ds, "q9", QueryOptions{Mem: mem})
		if err == nil || !strings.Contains(err.Error(), "--mem") {
			t.Errorf("mem %d: got %v, want an error naming --mem", mem, err)
		}
	}
	// The same query fits a sane budget, and its peak stays under it.
	r, err := Query(context.Background(), ds, "q9", QueryOptions{Mem: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if r.PeakRetained <= 0 || r.PeakRetained > 64<<20 {
		t.Fatalf("peak intermediate %d outside (0, 64 MiB]", r.PeakRetained)
	}
}

func TestUnknownQuery(t *testing.T) {
	ds := testData(t, 0.01)
	if _, err := Query(context.Background(), ds, "q23", QueryOptions{}); !errors.Is(err, ErrUnknownQuery) {
		t.Fatalf("q23: %v, want ErrUnknownQuery", err)
	}
	if _, err := ParseQueries("q1,q99"); !errors.Is(err, ErrUnknownQuery) {
		t.Fatalf("q99: %v", err)
	}
	if qs, err := ParseQueries("Q01, q6"); err != nil || len(qs) != 2 || qs[0] != "q1" || qs[1] != "q6" {
		t.Fatalf("ParseQueries(Q01, q6) = %v, %v", qs, err)
	}
}

func TestRunQueriesBadInput(t *testing.T) {
	err := RunQueries(context.Background(), RunOptions{Data: filepath.Join(t.TempDir(), "missing"), Query: "q1"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("missing dataset: %v", err)
	}
	ds := testData(t, 0.01)
	err = RunQueries(context.Background(), RunOptions{Data: ds.Dir, Query: "q1", Format: "xml"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "xml") {
		t.Fatalf("bad format: %v", err)
	}
}

// TestCorruptStringOffsets: bytes changed behind the manifest make the
// query fail with an error naming the column, not panic or answer.
func TestCorruptStringOffsets(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := tpch.Gen(context.Background(), tpch.GenOptions{ScaleFactor: 0.01, Out: dir}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	ds, err := dataset.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	tm, _ := ds.Table("lineitem")
	ci := tm.Schema.Column("l_returnflag")
	off := tm.Chunks[0].Columns[ci].Buffers[1]
	path, _, _ := ds.ChunkPath("lineitem", 0)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Offset 10 jumps far past the data.
	if _, err := f.WriteAt([]byte{0xff, 0xff, 0xff, 0x7f}, off.Off+40); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = Query(context.Background(), ds, "q1", QueryOptions{})
	if err == nil || !strings.Contains(err.Error(), "l_returnflag") || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("corrupt offsets: %v, want an error naming l_returnflag as corrupt", err)
	}
}
