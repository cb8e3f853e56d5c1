package cluster

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// LoadColocationRounds: each launch's rounds once (its rows repeat them),
// pooled over files; the median of them and of one more launch's; clear
// errors for rows of another cluster, of the queries' operators, files
// without rounds and files that are not rows.
func TestLoadColocationRounds(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, rows []SimBenchRow) string { return writeJSONFile(t, dir, name, rows) }
	row := func(q string, launch int, ratios ...float64) SimBenchRow {
		return SimBenchRow{Query: q, Engine: []float64{1}, Launch: launch, Nodes: 4, Devices: 1, Link: "1Gbit", ColocationRatios: ratios}
	}
	a := write("a.json", []SimBenchRow{row("q3", 1, 0.5, 0.6, 0.7), row("q5", 1, 0.5, 0.6, 0.7), row("q3", 2, 0.9, 0.8), row("q5", 2, 0.9, 0.8)})
	old := row("q9", 0, 0.4)
	old.Nodes, old.Devices, old.Link = 0, 0, "" // written before the fields
	b := write("b.json", []SimBenchRow{old})
	pool, err := LoadColocationRounds([]string{a, b}, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(pool.Ratios) != 6 || pool.Launches != 3 {
		t.Fatalf("pooled %v from %d launches, want 6 rounds of 3", pool.Ratios, pool.Launches)
	}
	// Rounds 0.4 0.5 0.6 0.7 0.8 0.9: median 0.65; with 0.3 and 0.35: 0.55.
	if e := pool.Efficiency(); math.Abs(e-0.65) > 1e-12 {
		t.Errorf("efficiency %v, want 0.65", e)
	}
	if e, n := pool.With([]float64{0.3, 0.35}), len(pool.Ratios); math.Abs(e.Efficiency()-0.55) > 1e-12 || e.Launches != 4 || len(pool.Ratios) != n {
		t.Errorf("with 0.3, 0.35: %v of %d launches (the pool itself now %d rounds), want 0.55 of 4, 6 unchanged", e.Efficiency(), e.Launches, len(pool.Ratios))
	}
	if e := (PooledColocation{Ratios: []float64{1.2, 1.4}}).Efficiency(); e != 1 {
		t.Errorf("rounds above 1: efficiency %v, want 1", e)
	}
	queries := row("q3", 1, 0.8)
	queries.ColocationLoop = 0.6
	notRows := filepath.Join(dir, "bad.json")
	os.WriteFile(notRows, []byte(`{"query": "q3"}`), 0o644)
	for _, tc := range []struct {
		paths          []string
		nodes, devices int
		want           string
	}{
		{[]string{a}, 2, 1, "a.json row 1 ran 4 workers x 1 devices, this launch 2 x 1"},
		{[]string{write("q.json", []SimBenchRow{queries})}, 4, 1, "q.json row 1 measured the co-location on the queries' operators"},
		{[]string{a, write("given.json", []SimBenchRow{row("q3", 1)})}, 4, 1, "given.json has no co-location rounds"},
		{[]string{write("neg.json", []SimBenchRow{row("q3", 1, 0.5, -1)})}, 4, 1, "neg.json row 1: co-location round -1"},
		{[]string{notRows}, 4, 1, "bad.json: not bench-sim --json rows"},
		{[]string{filepath.Join(dir, "missing.json")}, 4, 1, "missing.json"},
	} {
		if _, err := LoadColocationRounds(tc.paths, tc.nodes, tc.devices); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one naming %q", tc.paths, err, tc.want)
		}
	}
}

// writeJSONFile writes v as JSON to dir/name and returns the path.
func writeJSONFile(t *testing.T, dir, name string, v any) string {
	t.Helper()
	p := filepath.Join(dir, name)
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
