package queries

import (
	"testing"

	"gostachio/plan"
)

func TestStats(t *testing.T) {
	tables, err := Stats(1, 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*plan.TableStats{}
	for i := range tables {
		byName[tables[i].Name] = &tables[i]
	}
	li := byName["lineitem"]
	if got := li.Rows(); got != 6_001_215 {
		t.Errorf("lineitem rows = %d, want 6001215", got)
	}
	if len(li.Chunks) != 7 || li.Chunks[6].Rows != 1_215 {
		t.Errorf("lineitem chunks = %d, last %d rows; want 7, 1215", len(li.Chunks), li.Chunks[len(li.Chunks)-1].Rows)
	}
	q, c := li.Column("l_quantity"), li.Column("l_comment")
	if li.Chunks[0].Bytes[q] != 8_000_000 || li.Chunks[0].Bytes[c] != 30_500_000 {
		t.Errorf("chunk 0 bytes: quantity %d (want 8000000), comment %d (want 30500000)", li.Chunks[0].Bytes[q], li.Chunks[0].Bytes[c])
	}
	// Chunk 1 starts where chunk 0's columns end.
	var sum int64
	for _, b := range li.Chunks[0].Bytes {
		sum += b
	}
	if li.Chunks[1].Base != sum {
		t.Errorf("chunk 1 base = %d, want %d", li.Chunks[1].Base, sum)
	}
	if got := li.Chunks[0].ColumnOffset(2); got != 16_000_000 {
		t.Errorf("l_suppkey offset = %d, want 16000000", got)
	}
	if n := byName["nation"].Rows(); n != 25 {
		t.Errorf("nation rows at SF1 = %d, want 25", n)
	}
	big, _ := Stats(1000, 1_000_000)
	for i := range big {
		if big[i].Name == "orders" && big[i].Rows() != 1_500_000_000 {
			t.Errorf("orders at SF1000 = %d rows", big[i].Rows())
		}
		if big[i].Name == "region" && big[i].Rows() != 5 {
			t.Errorf("region at SF1000 = %d rows", big[i].Rows())
		}
	}
	for _, bad := range []struct {
		sf   float64
		rows int
	}{{0, 10}, {-1, 10}, {1, 0}} {
		if _, err := Stats(bad.sf, bad.rows); err == nil {
			t.Errorf("Stats(%v, %d) accepted", bad.sf, bad.rows)
		}
	}
}
