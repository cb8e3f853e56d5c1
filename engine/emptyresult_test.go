package engine

import (
	"context"
	"slices"
	"testing"

	"gostachio/plan"
)

// emptyAggPlan aggregates the lineitems with a negative quantity (there
// are none) without keys, or by l_returnflag when grouped, and projects
// the count under another name.
func emptyAggPlan(t *testing.T, stats []plan.TableStats, grouped bool) *plan.Plan {
	t.Helper()
	var keys []string
	var groups int64 = 1
	if grouped {
		keys, groups = []string{"l_returnflag"}, 3
	}
	aggs := []plan.Agg{plan.Count("n"), plan.Sum("s", plan.Col("l_quantity")), plan.Min("m", plan.Col("l_shipdate"))}
	b := plan.NewBuilder("empty", stats)
	li := b.Scan("lineitem", "l_quantity", "l_shipdate", "l_returnflag").
		Where(plan.Lt(plan.Col("l_quantity"), plan.Int(0)), 0.001).
		Partial(groups, 24, keys, aggs...).
		Gather()
	out := []string{"cnt", "s", "m"}
	proj := []plan.Named{plan.As("cnt", plan.Col("n")), plan.As("s", plan.Col("s")), plan.As("m", plan.Col("m"))}
	if grouped {
		out = append([]string{"l_returnflag"}, out...)
		proj = append(plan.Keep("l_returnflag"), proj...)
	}
	b.From(li).Final(groups, 24, keys, aggs...).Select(24, proj...).Output(out...)
	p, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A scalar aggregate over no rows gives one row, as SQL does: count 0
// (also renamed by a projection), sum and min NULL (empty cells); grouped,
// it gives no row.
func TestScalarAggregateOverNoRows(t *testing.T) {
	ds := testData(t, 0.01)
	for _, policy := range []string{"serial", "overlap"} {
		r, err := Query(context.Background(), ds, emptyAggPlan(t, ds.PlanStats(), false), QueryOptions{Policy: policy, Devices: 2})
		if err != nil {
			t.Fatal(err)
		}
		rows := r.Rows()
		if len(rows) != 1 || !slices.Equal(rows[0], []string{"0", "", ""}) {
			t.Errorf("%s: scalar aggregate over no rows gives %q (columns %q), want one row 0||", policy, rows, r.Columns)
		}
		r, err = Query(context.Background(), ds, emptyAggPlan(t, ds.PlanStats(), true), QueryOptions{Policy: policy, Devices: 2})
		if err != nil {
			t.Fatal(err)
		}
		if rows := r.Rows(); len(rows) != 0 {
			t.Errorf("%s: grouped aggregate over no rows gives %q, want no rows", policy, rows)
		}
	}
}
