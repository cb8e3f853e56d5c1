package sqlplan

import (
	"testing"

	"gostachio/plan"
)

// TestOneScan checks where a block and its IN subquery read the
// subquery's table once (onescan.go) and where twice.
func TestOneScan(t *testing.T) {
	in := " in (select a from t group by a having sum(b) > 5)"
	for _, tc := range []struct {
		sql   string
		scans int // scans of t
	}{
		{"select u.c, sum(t.b) as x, count(*) as n, min(t.d) as lo, max(t.b) as hi, max(u.a) as m from u, t where u.a = t.a and u.a" + in + " group by u.c", 1},
		{"select u.c, sum(t.b) as x from u, t where t.a = u.a and t.a" + in + " group by u.c", 1},
		{"select u.c, count(t.s) as x from u, t where u.a = t.a and t.d > date '1995-01-01' and u.a in (select a from t where t.d > date '1995-01-01' group by a having count(*) > 1) group by u.c", 1},
		// t filtered only in the block, or only in the subquery.
		{"select u.c, sum(t.b) as x from u, t where u.a = t.a and t.b > 1 and u.a" + in + " group by u.c", 2},
		{"select u.c, sum(t.b) as x from u, t where u.a = t.a and u.a in (select a from t where b > 1 group by a having sum(b) > 5) group by u.c", 2},
		// t's columns outside its aggregates, or aggregates that repeat.
		{"select t.s, sum(t.b) as x from u, t where u.a = t.a and u.a" + in + " group by t.s", 2},
		{"select u.c, sum(t.b) as x from u, t where u.a = t.a and t.b < u.c and u.a" + in + " group by u.c", 2},
		{"select u.c, avg(t.b) as x from u, t where u.a = t.a and u.a" + in + " group by u.c", 2},
		{"select u.c, sum(t.b) as x, sum(u.a) as y from u, t where u.a = t.a and u.a" + in + " group by u.c", 2},
		{"select sum(t.b) as x from u, t where u.a = t.a and u.a" + in, 2},
		// joined on another column than the IN's.
		{"select u.c, sum(t.b) as x from u, t where u.c = t.a and u.a" + in + " group by u.c", 2},
	} {
		p, err := Plan("c", tc.sql, testTables(), Options{Workers: 4})
		if err != nil {
			t.Errorf("%q: %v", tc.sql, err)
			continue
		}
		n := 0
		for _, pl := range p.Pipelines {
			if pl.Source.Kind == plan.SourceScan && p.Tables[pl.Source.Table].Name == "t" {
				n++
			}
		}
		if n != tc.scans {
			t.Errorf("%q: %d scans of t, want %d", tc.sql, n, tc.scans)
		}
	}
}
