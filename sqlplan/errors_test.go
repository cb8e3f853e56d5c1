package sqlplan

import (
	"errors"
	"strings"
	"testing"

	"gostachio/plan"
)

// testTables is a small catalog: t(a int64, b decimal(2), d date, s text)
// and u(a int64, c int64), 1000 and 100 rows.
func testTables() []plan.TableStats {
	mk := func(name string, rows int64, cols []string, schema []plan.ColumnStats) plan.TableStats {
		ch := plan.ChunkStats{Rows: rows, Bytes: make([]int64, len(cols))}
		for i := range ch.Bytes {
			ch.Bytes[i] = rows * 8
		}
		return plan.TableStats{Name: name, Columns: cols, Chunks: []plan.ChunkStats{ch}, Schema: schema}
	}
	return []plan.TableStats{
		mk("t", 1000, []string{"a", "b", "d", "s"}, []plan.ColumnStats{
			{Type: plan.TypeInt64, Distinct: 1000, Range: plan.MinMax{Valid: true, Min: 1, Max: 1000}},
			{Type: plan.TypeDecimal, Scale: 2, Distinct: 50},
			{Type: plan.TypeDate, Distinct: 365},
			{Type: plan.TypeString, Distinct: 10, AvgLen: 6},
		}),
		mk("u", 100, []string{"a", "c"}, []plan.ColumnStats{
			{Type: plan.TypeInt64, Distinct: 100},
			{Type: plan.TypeInt64, Distinct: 10},
		}),
		mk("bare", 10, []string{"x"}, nil),
	}
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct{ sql, want string }{
		{"select ax from t", `sql:1:8: unknown column "ax" (did you mean a?)`},
		{"select a from tt", `sql:1:15: unknown table "tt" (did you mean t?)`},
		{"select a from t, u", `sql:1:8: ambiguous column "a" (in t and u)`},
		{"select a from t where d < 'abc'", "cannot compare a date with text 'abc'"},
		{"select s + 1 from t", "cannot apply + to text and bigint"},
		{"select sum(s) from t", "sum of a text, want a number"},
		{"select a from t\nwhere a in (select c from u) or b > 1", "sql:2:"},
		{"select a from t where", `sql:1:17: syntax error at "where", the end of the query`},
		{"select a frm t", `sql:1:14: syntax error near 't'`},
		{"select a from t where (a = 1", `sql:1:28: syntax error at "1", the end of the query`},
		{"select t.a, count(u.c) from t left join u on t.a = u.a where u.c > 1 group by t.a", "LEFT JOIN u: WHERE reads the right side"},
		{"select t.a, sum(u.c) from t left join u on t.a = u.a group by t.a", "aggregate sum(c) reads it"},
		{"select x from bare", `table "bare" has no schema`},
		{"select case when a = 1 then 1 end from t", "CASE needs an ELSE"},
		{"select a from t where s is null", "IS [NOT] NULL"},
	} {
		_, err := Plan("e", tc.sql, testTables(), Options{})
		var pe *Error
		if err == nil || !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one containing %q", tc.sql, err, tc.want)
		}
	}
}

// TestConstructs plans one statement per supported construct and checks
// the shape the planner must give it.
func TestConstructs(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		want []string // operator labels (substrings) the plan must hold
	}{
		{"select a from t where a between 10 and 20 order by a", []string{"sort [a]"}},
		{"select a, s as x from t", []string{"a, s as x", "a, x"}},
		{"select case when a > 1 then b else a end as x, case when a > 2 then b * b else b end as y from t", []string{"as x", "as y"}},
		{"select a from t where (select count(*) from u where u.a = t.a) <> 2", []string{"left outer join", "(count(*) <> 2)"}},
		{"select a from t where 5 > (select max(c) from u where u.a = t.a)", []string{"inner join", "(5 > max(c))"}},
		{"select s, count(*) as n from t group by s order by n desc limit 3", []string{"top 3 [n desc]", "gather"}},
		{"select count(distinct s) from t", []string{"final count"}},
		{"select a from t where exists (select * from u where u.a = t.a and u.c <> t.a)", []string{"min(", "max("}},
		{"select a from t where not exists (select * from u where u.a = t.a)", []string{"anti join"}},
		{"select a from t where a in (select c from u)", []string{"semi join"}},
		{"select a from t where b > (select avg(c) from u)", []string{"inner join carrying"}},
		{"select t.a, count(u.c) as n from t left join u on t.a = u.a group by t.a", []string{"left outer join"}},
		{"with w as (select a from t where a < 5) select a from w", []string{"(a < 5)"}},
		{"select extract(year from d) as y, sum(b) from t where d >= date '1995-01-01' + interval '1' year group by y", []string{"extract(year"}},
	} {
		p, err := Plan("c", tc.sql, testTables(), Options{Workers: 4})
		if err != nil {
			t.Errorf("%q: %v", tc.sql, err)
			continue
		}
		var labels []string
		for _, pl := range p.Pipelines {
			for _, op := range pl.Ops {
				labels = append(labels, op.Label)
			}
		}
		all := strings.Join(labels, " | ")
		for _, w := range tc.want {
			if !strings.Contains(all, w) {
				t.Errorf("%q: plan lacks %q:\n%s", tc.sql, w, all)
			}
		}
		if out := p.Pipelines[len(p.Pipelines)-1].Sink(); out.Kind != plan.OpResult {
			t.Errorf("%q: last pipeline ends in %s", tc.sql, out.Kind)
		}
	}
}

// FuzzPlan checks that no text makes the planner panic: Plan returns a
// plan or an *Error.
func FuzzPlan(f *testing.F) {
	for _, s := range []string{
		"select a, sum(b) from t where d < date '1995-01-01' group by a order by a limit 5",
		"select a from t where exists (select * from u where u.a = t.a and u.c <> t.a)",
		"select t.a, count(u.c) from t left join u on t.a = u.a group by t.a",
		"with w (x) as (select a from t) select x from w where x in (select c from u)",
		"select case when s like 'a%' then b else 0 end from t where b > (select avg(c) from u)",
	} {
		f.Add(s)
	}
	tables := testTables()
	f.Fuzz(func(t *testing.T, text string) {
		p, err := Plan("f", text, tables, Options{})
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("%q: error %T %v, want *Error", text, err, err)
			}
			if strings.Contains(pe.Msg, "internal planner error") {
				t.Fatalf("%q: %v", text, err)
			}
			return
		}
		if p == nil {
			t.Fatalf("%q: nil plan without error", text)
		}
	})
}
