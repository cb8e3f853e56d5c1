package plan

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

// explainTables is one table t(d date, x decimal(15,2)) of four chunks of
// 100 rows, chunk k holding d in [100k, 100k+99] and x in [0, 10.00].
func explainTables() []TableStats {
	t := TableStats{Name: "t", Columns: []string{"d", "x"},
		Schema: []ColumnStats{{Type: TypeDate}, {Type: TypeDecimal, Scale: 2}}}
	for k := range 4 {
		t.Chunks = append(t.Chunks, ChunkStats{Rows: 100, Bytes: []int64{400, 800},
			Stats: []MinMax{{Valid: true, Min: int64(100 * k), Max: int64(100*k + 99)}, {Valid: true, Min: 0, Max: 1000}}})
	}
	return []TableStats{t}
}

func TestExplainTypedRanges(t *testing.T) {
	b := NewBuilder("p", explainTables())
	s := b.Scan("t", "d", "x").Prune("d", 150, math.MaxInt32).Prune("x", -250, 5).Filter("d >= 150", 0.5).Gather()
	b.From(s).AggFinal("count(*)", 1, 8).Result()
	p, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	e, err := p.Explain()
	if err != nil {
		t.Fatal(err)
	}
	// d >= 150 meets chunks 1, 2 and 3 (100..399); x <= 0.05 meets them
	// all (each holds 0).
	src := e.Pipelines[0].Source
	if src.Pruned != 1 || src.Rows != 300 || src.Bytes != 3*1200 {
		t.Errorf("source = %+v, want 1 chunk pruned, 300 rows, 3600 bytes", src)
	}
	r := e.Pipelines[0].Ops[0].Prune
	if len(r) != 2 || r[0].Text != "[1970-05-31, +inf]" || r[1].Text != "[-2.50, 0.05]" {
		t.Errorf("ranges = %+v, want d in [1970-05-31, +inf], x in [-2.50, 0.05]", r)
	}
	fin := e.Pipelines[1]
	if fin.Source.Rows != 150 || fin.RowsOut != 1 || e.Totals.ResultRows != 1 {
		t.Errorf("final: %d rows in, %d out, result %d; want 150, 1, 1", fin.Source.Rows, fin.RowsOut, e.Totals.ResultRows)
	}
	var buf bytes.Buffer
	if err := e.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "scan t, 3 of 4 chunks (1 pruned), 300 rows, 3.5 KiB") {
		t.Errorf("text:\n%s", buf.String())
	}
}

func TestExplainRefusesInvalidPlan(t *testing.T) {
	p := &Plan{Name: "bad", Pipelines: []Pipeline{{Name: "empty"}}}
	if _, err := p.Explain(); err == nil || !strings.Contains(err.Error(), "no operators") {
		t.Errorf("explain of a pipeline without operators: %v, want the validation error", err)
	}
}
