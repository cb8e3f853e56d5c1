package querygen_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"gostachio/plan"
	"gostachio/sqlplan"
	"gostachio/sqlplan/querygen"
)

// TestGeneratedQueriesPlan plans 1,000 generated queries over SF0.01
// statistics on 1 to 3 workers: planning never panics, and never fails
// except on the one construct the planner refuses by design (several
// count(DISTINCT ...) over different columns in one query block), with
// that error; every plan validates and ends in the result.
func TestGeneratedQueriesPlan(t *testing.T) {
	p := tpchSF001(t)
	g, err := querygen.New(p.cfg)
	if err != nil {
		t.Fatal(err)
	}
	const unsupported = "only one count(DISTINCT ...) per query block is supported"
	refused := 0
	for seed := uint64(1); seed <= 1000; seed++ {
		q := g.Query(seed)
		pl, err := planNoPanic(q, p, int(seed%3)+1)
		if err != nil {
			var pe *sqlplan.Error
			if errors.As(err, &pe) && strings.Contains(pe.Msg, unsupported) && strings.Count(strings.ToLower(q.SQL), "count(distinct") > 1 {
				refused++
				continue
			}
			t.Errorf("seed %d:\n%s\n: %v", seed, q.SQL, err)
			continue
		}
		if err := pl.Validate(); err != nil {
			t.Errorf("seed %d: plan does not validate: %v", seed, err)
		}
	}
	if refused > 50 {
		t.Errorf("%d of 1000 queries refused for several count(DISTINCT)", refused)
	}
	t.Logf("%d of 1000 queries refused for several count(DISTINCT)", refused)
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
