package peer

import (
	"fmt"
	"strconv"
	"strings"

	tpchqueries "gostachio/tpch/queries"
)

// The 22 TPC-H queries DuckDB runs are the texts gostachio's SQL planner
// plans (tpch/queries/sql: spec 2.4.1-2.4.22 with the validation
// substitution parameters of spec 2.4.x.3, qgen's defaults), so that both
// engines run the same text. Deviations from the spec's text, none
// changing the answer: Q15 uses a CTE instead of creating and dropping
// the revenue0 view; Q11's FRACTION is the spec's 0.0001/SF (the SF0.01
// validation answers were made with 0.0001 and do not apply); intervals
// are written interval 'N' unit. Row-limited queries keep their limit
// (Q2 100, Q3 10, Q10 20, Q18 100, Q21 100). Output column names follow
// tpch/answers where the spec leaves them unnamed.

// QueryNames returns "q1".."q22" in order.
func QueryNames() []string { return tpchqueries.Names() }

// SQL returns the SQL text of TPC-H query name ("q1".."q22", case and
// leading zeros ignored) with the validation parameters at SF1.
func SQL(name string) (string, error) { return SQLAt(name, 1) }

// SQLAt is SQL with the parameters that depend on the scale factor sf
// substituted (Q11's FRACTION = 0.0001/SF).
func SQLAt(name string, sf float64) (string, error) {
	s, found := strings.CutPrefix(strings.ToLower(name), "q")
	n, err := strconv.Atoi(s)
	if !found || err != nil || n < 1 || n > 22 || strings.ContainsAny(s, "+-") {
		return "", fmt.Errorf("peer: unknown TPC-H query %q (want q1..q22)", name)
	}
	if !(sf > 0) {
		return "", fmt.Errorf("peer: scale factor %v must be positive", sf)
	}
	text, err := tpchqueries.SQLText("q"+strconv.Itoa(n), sf)
	if err != nil {
		return "", fmt.Errorf("peer: %w", err)
	}
	return text, nil
}
