package queries

import (
	"fmt"
	"slices"
	"testing"

	"gostachio/plan"
	"gostachio/sqlplan"
)

// sqlTables is Stats(sf): the layout and the column statistics the
// specification gives, as a dataset's manifest records them.
func sqlTables(t testing.TB, sf float64) []plan.TableStats {
	t.Helper()
	tables, err := Stats(sf, 1<<17)
	if err != nil {
		t.Fatal(err)
	}
	return tables
}

// answerSQL is query q's SQL text with the parameters the SF0.01 answer
// files were made with: the spec's at sf, except Q11's FRACTION, which
// they take at SF1 (0.0001; see TestAnswers).
func answerSQL(t *testing.T, q string, sf float64) string {
	t.Helper()
	if q == "q11" {
		sf = 1
	}
	text, err := SQLText(q, sf)
	if err != nil {
		t.Fatal(err)
	}
	return text
}

// TestSQLAnswers plans every query from its SQL over SF0.01 statistics,
// runs the plan through the static checker and the reference interpreter
// on 1 and 3 devices, and compares with the official answers.
func TestSQLAnswers(t *testing.T) {
	const sf = 0.01
	ds := loadData(t, sf)
	tables := sqlTables(t, sf)
	for _, q := range Names() {
		t.Run(q, func(t *testing.T) {
			text := answerSQL(t, q, sf)
			p, err := sqlplan.Plan(q, text, tables, sqlplan.Options{Workers: 3})
			if err != nil {
				t.Fatal(err)
			}
			c, err := checkPlan(p)
			if err != nil {
				t.Fatal(err)
			}
			header, want := answerFile(t, "sf0.01", q)
			out := p.Pipelines[len(p.Pipelines)-1].Sink()
			if !slices.Equal(out.Out, header) {
				t.Errorf("outputs %v, answer header %v", out.Out, header)
			}
			skip := map[int]bool{}
			for _, name := range textDiffers[q] {
				skip[slices.Index(header, name)] = true
			}
			if q == "q13" {
				want = q13Brute(t, ds)
			}
			for _, w := range []int{1, 3} {
				res, err := run(c, ds, w)
				if err != nil {
					t.Fatalf("%d devices: %v", w, err)
				}
				compareRows(t, fmt.Sprintf("%d devices", w), header, res.rows, want, skip)
			}
		})
	}
}

// BenchmarkPlanTPCH plans each query from its SQL over SF1 statistics
// and reports the planning time per query.
func BenchmarkPlanTPCH(b *testing.B) {
	tables := sqlTables(b, 1)
	for _, q := range Names() {
		text, err := SQLText(q, 1)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(q, func(b *testing.B) {
			for b.Loop() {
				if _, err := sqlplan.Plan(q, text, tables, sqlplan.Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
