package queries

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"gostachio/plan"
)

// explainAt builds query name at SF1 in chunks of 1,000,000 rows, after
// letting edit change the tables' statistics, and explains it.
func explainAt(t *testing.T, name string, edit func([]plan.TableStats)) *plan.Explanation {
	t.Helper()
	tables, err := Stats(1, 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(tables)
	}
	p, err := Build(name, 1, tables)
	if err != nil {
		t.Fatal(err)
	}
	e, err := p.Explain()
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestExplainScanFigures checks Q6's scan against the specification: SF1
// lineitem has 6,001,215 rows (clause 4.2.5, the dbgen count), in 7
// chunks of at most 1,000,000, and Q6 reads l_quantity, l_extendedprice
// and l_discount (decimals, 8 bytes) and l_shipdate (date32, 4 bytes):
// 28 bytes a row.
func TestExplainScanFigures(t *testing.T) {
	e := explainAt(t, "q6", nil)
	src := e.Pipelines[0].Source
	if src.Kind != "scan" || src.Table != "lineitem" || src.Chunks != 7 || src.Pruned != 0 {
		t.Errorf("q6 source = %+v, want a scan of lineitem's 7 chunks, none pruned", src)
	}
	if src.Rows != 6_001_215 || src.Bytes != 6_001_215*28 {
		t.Errorf("q6 scan reads %d rows, %d bytes; want 6001215 rows, %d bytes", src.Rows, src.Bytes, 6_001_215*28)
	}
	scan, filter := e.Pipelines[0].Ops[0], e.Pipelines[0].Ops[1]
	if scan.RowsOut != 6_001_215 || filter.RowsIn != 6_001_215 {
		t.Errorf("scan out %d, filter in %d; want 6001215", scan.RowsOut, filter.RowsIn)
	}
	// 1.90% of 6,001,215 is 114,023.085: a fraction of a row is a row.
	if filter.RowsOut != 114_024 {
		t.Errorf("q6 filter out = %d rows, want 114024", filter.RowsOut)
	}
	if len(scan.Prune) != 1 || scan.Prune[0].Column != "l_shipdate" {
		t.Errorf("q6 scan prune = %+v, want one range on l_shipdate", scan.Prune)
	}
	// Q6 answers one row (the official answer: revenue 123141078.23).
	if e.Totals.ResultRows != 1 || e.Totals.Scans != 1 || e.Totals.ScanRows != 6_001_215 {
		t.Errorf("q6 totals = %+v, want 1 result row, 1 scan of 6001215 rows", e.Totals)
	}
}

// TestExplainPruning gives lineitem's chunks l_shipdate ranges of 300 days
// each from 1992-01-01 and checks the chunks Q6's range (1994) prunes
// against a direct count of the chunks whose [min, max] meets 1994.
func TestExplainPruning(t *testing.T) {
	start := plan.Day(1992, 1, 1)
	lo, hi := plan.Day(1994, 1, 1), plan.Day(1994, 12, 31)
	var survive int
	var rows int64
	e := explainAt(t, "q6", func(tables []plan.TableStats) {
		for i := range tables {
			li := &tables[i]
			if li.Name != "lineitem" {
				continue
			}
			c := li.Column("l_shipdate")
			for k := range li.Chunks {
				ch := &li.Chunks[k]
				ch.Stats = make([]plan.MinMax, len(li.Columns))
				mn := start + int64(300*k)
				ch.Stats[c] = plan.MinMax{Valid: true, Min: mn, Max: mn + 299}
				if mn <= hi && mn+299 >= lo {
					survive++
					rows += ch.Rows
				}
			}
		}
	})
	// 1994 is days 731..1095 after 1992-01-01: chunks 2 and 3 only.
	if survive != 2 || rows != 2_000_000 {
		t.Fatalf("direct count: %d chunks, %d rows; want 2 chunks of 1000000", survive, rows)
	}
	src := e.Pipelines[0].Source
	if src.Chunks-src.Pruned != survive || src.Rows != rows || src.Bytes != rows*28 {
		t.Errorf("q6 source = %+v, want %d of 7 chunks, %d rows, %d bytes", src, survive, rows, rows*28)
	}
	if e.Totals.Pruned != 5 || e.Totals.Chunks != 7 {
		t.Errorf("totals: %d of %d chunks pruned, want 5 of 7", e.Totals.Pruned, e.Totals.Chunks)
	}
}

// TestExplainLinks checks Q3's pipeline links and row flow: customer
// (150,000 rows at SF1) filtered to BUILDING (one segment of five) is
// broadcast and built, the build is probed by the orders scan, a pipeline
// reading others starts from the sum of their outputs, and the result is
// Q3's 10 rows (its LIMIT; the official answer has 10).
func TestExplainLinks(t *testing.T) {
	e := explainAt(t, "q3", nil)
	byName := map[string]*plan.ExplainedPipeline{}
	for i := range e.Pipelines {
		byName[e.Pipelines[i].Name] = &e.Pipelines[i]
	}
	cust := byName["q3 scan customer"]
	if cust == nil || cust.Source.Rows != 150_000 || cust.RowsOut != 30_000 || cust.Ops[len(cust.Ops)-1].Exchange != "broadcast" {
		t.Fatalf("q3 scan customer = %+v, want 150000 rows in, 30000 broadcast", cust)
	}
	build, orders := byName["q3 build customer"], byName["q3 scan orders"]
	if build == nil || orders == nil {
		t.Fatal("q3 lacks its customer build or orders scan")
	}
	if len(build.ProbedBy) != 1 || build.ProbedBy[0] != orders.Index {
		t.Errorf("customer build probed by %v, want [%d]", build.ProbedBy, orders.Index)
	}
	var probe *plan.ExplainedOp
	for i := range orders.Ops {
		if orders.Ops[i].Kind == "hash-probe" {
			probe = &orders.Ops[i]
		}
	}
	if probe == nil || probe.Build == nil || *probe.Build != build.Index {
		t.Errorf("orders probe = %+v, want a probe of #%d", probe, build.Index)
	}
	for i := range e.Pipelines {
		p := &e.Pipelines[i]
		if p.Source.Kind != "inputs" {
			continue
		}
		var sum int64
		for _, in := range p.Source.Inputs {
			sum += e.Pipelines[in].RowsOut
		}
		// Each output is rounded up on its own; the sum is not.
		if p.Source.Rows > sum || p.Source.Rows < sum-int64(len(p.Source.Inputs)) {
			t.Errorf("%s: source rows %d, inputs' outputs sum to %d", p.Name, p.Source.Rows, sum)
		}
	}
	if e.Totals.ResultRows != 10 {
		t.Errorf("q3 result rows = %d, want 10", e.Totals.ResultRows)
	}
}

// TestExplainResultGroups checks that aggregates output their groups: Q1's
// answer has 4 rows (A/F, N/F, N/O, R/F).
func TestExplainResultGroups(t *testing.T) {
	if e := explainAt(t, "q1", nil); e.Totals.ResultRows != 4 {
		t.Errorf("q1 result rows = %d, want 4", e.Totals.ResultRows)
	}
}

// TestExplainOutputs checks the text and JSON renderings carry the figures.
func TestExplainOutputs(t *testing.T) {
	tables, err := Stats(1, 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Build("q6", 1, tables)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := p.ExplainText(&buf, 0); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"plan q6: 2 pipelines", "source: scan lineitem, 7 of 7 chunks (0 pruned), 6,001,215 rows",
		"filter      6,001,215 -> 114,024 rows", "gather"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("explain text lacks %q:\n%s", want, buf.String())
		}
	}
	// 1994-01-01 and 1994-12-31 are days 8766 and 9130 of date32; the
	// range prints as dates where the tables' schema types l_shipdate.
	if !strings.Contains(buf.String(), "l_shipdate in [8766, 9130]") && !strings.Contains(buf.String(), "l_shipdate in [1994-01-01, 1994-12-31]") {
		t.Errorf("explain text lacks Q6's l_shipdate range:\n%s", buf.String())
	}
	js, err := p.ExplainJSON(0)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Query     string `json:"query"`
		Pipelines []struct {
			Source struct {
				Rows int64 `json:"rows"`
			} `json:"source"`
			Ops []map[string]any `json:"ops"`
		} `json:"pipelines"`
		Totals map[string]any `json:"totals"`
	}
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Query != "q6" || len(doc.Pipelines) != 2 || doc.Pipelines[0].Source.Rows != 6_001_215 ||
		doc.Pipelines[0].Ops[1]["rows_out"] != float64(114_024) || doc.Totals["scan_rows"] != float64(6_001_215) {
		t.Errorf("explain JSON = %s", js)
	}
}
