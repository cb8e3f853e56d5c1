package cluster

import (
	"testing"

	"gostachio/plan"
	"gostachio/tpch/queries"
)

// TestFingerprintSeesOperators: plans of the same shape whose operators
// do different work (a query planned from other text) fingerprint
// differently, and equal plans alike.
func TestFingerprintSeesOperators(t *testing.T) {
	build := func() *plan.Plan {
		tables, err := queries.Stats(0.01, 4096)
		if err != nil {
			t.Fatal(err)
		}
		p, err := queries.Build("q6", 0.01, tables)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b := build(), build()
	if fingerprint(a) != fingerprint(b) {
		t.Fatal("two builds of q6 fingerprint differently")
	}
	f := &b.Pipelines[0].Ops[1]
	if f.Kind != plan.OpFilter {
		t.Fatalf("q6's second operator is %s, want its filter", f.Kind)
	}
	f.Expr = plan.Lt(plan.Col("l_quantity"), plan.Int(25))
	if fingerprint(a) == fingerprint(b) {
		t.Error("q6 with another predicate fingerprints as q6")
	}
}
