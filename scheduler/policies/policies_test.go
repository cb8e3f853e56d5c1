package policies_test

import (
	"testing"

	"gostachio/scheduler"
	_ "gostachio/scheduler/policies"
	"gostachio/scheduler/scentest"
)

// TestScenarios runs every policy's scenario under testdata (and the
// template a new policy's scenario starts from). Rewrite the expected
// output with `go test ./scheduler/policies -run Scenario -rewrite` after
// checking the diff.
func TestScenarios(t *testing.T) { scentest.Walk(t, "testdata") }

// TestRegistered: every policy of the package resolves by name with its
// defaults, and refuses a bad value of its own parameters.
func TestRegistered(t *testing.T) {
	for _, tc := range []struct{ name, bad string }{
		{"littles", "slack=-1"},
		{"littles", "observe=x"},
		{"netfirst", "hold=3XB"},
	} {
		if _, err := scheduler.NewPolicy(tc.name, ""); err != nil {
			t.Errorf("NewPolicy(%q): %v", tc.name, err)
		}
		if _, err := scheduler.NewPolicy(tc.name, tc.bad); err == nil {
			t.Errorf("NewPolicy(%q, %q) accepted", tc.name, tc.bad)
		}
	}
	if _, err := scheduler.NewPolicy("littles", "slack=2,depth=4,observe=0"); err != nil {
		t.Errorf("parameters beside knobs: %v", err)
	}
}
