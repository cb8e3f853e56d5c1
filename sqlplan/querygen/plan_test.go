package querygen_test

import (
	"fmt"
	"testing"

	"gostachio/plan"
	"gostachio/sqlplan"
	"gostachio/sqlplan/querygen"
)

// TestGeneratedQueriesPlan plans 1,000 generated queries over SF0.01
// statistics on 1 to 3 workers: planning never panics and never fails;
// every plan validates and ends in the result.
func TestGeneratedQueriesPlan(t *testing.T) {
	p := tpchSF001(t)
	g, err := querygen.New(p.cfg)
	if err != nil {
		t.Fatal(err)
	}
	for seed := uint64(1); seed <= 1000; seed++ {
		q := g.Query(seed)
		pl, err := planNoPanic(q, p, int(seed%3)+1)
		if err != nil {
			t.Errorf("seed %d:\n%s\n: %v", seed, q.SQL, err)
			continue
		}
		if err := pl.Validate(); err != nil {
			t.Errorf("seed %d: plan does not validate: %v", seed, err)
		}
	}
}

// planNoPanic plans q, turning a panic into an error that fails the test.
func planNoPanic(q querygen.Query, p profiled, workers int) (pl *plan.Plan, err error) {
	defer func() {
		if r := recover(); r != nil {
			pl, err = nil, fmt.Errorf("panic: %v", r)
		}
	}()
	return sqlplan.Plan(fmt.Sprintf("seed%d", q.Seed), q.SQL, p.stats, sqlplan.Options{Workers: workers})
}
