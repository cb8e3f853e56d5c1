package traces

import (
	"slices"
	"testing"
)

// TestQueryPaths: one file per query run, never two runs on one path.
func TestQueryPaths(t *testing.T) {
	for _, c := range []struct {
		path  string
		names []string
		want  []string
	}{
		{"t.json", []string{"q3"}, []string{"t.json"}},
		{"out/t.json", []string{"q3", "q9"}, []string{"out/t-q3.json", "out/t-q9.json"}},
		{"t.json", []string{"q17", "q3", "q17", "q17"}, []string{"t-q17-1.json", "t-q3.json", "t-q17-2.json", "t-q17-3.json"}},
		{"trace", []string{"q1", "q1"}, []string{"trace-q1-1", "trace-q1-2"}},
	} {
		p := NewQueryPaths(c.path, c.names)
		var got []string
		for _, n := range c.names {
			got = append(got, p.Next(n))
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s %v: %v, want %v", c.path, c.names, got, c.want)
		}
		seen := map[string]bool{}
		for _, g := range got {
			if seen[g] {
				t.Errorf("%s %v: two runs traced to %s", c.path, c.names, g)
			}
			seen[g] = true
		}
	}
	// A run beyond the list (not expected from the callers) still gets a
	// path of its own.
	p := NewQueryPaths("t.json", []string{"q1", "q2"})
	if a, b := p.Next("q1"), p.Next("q1"); a == b || b != "t-q1-2.json" {
		t.Errorf("q1 run twice though listed once: %s then %s", a, b)
	}
}
