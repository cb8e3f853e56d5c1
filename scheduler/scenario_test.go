package scheduler_test

import (
	"testing"

	"gostachio/scheduler/scentest"
)

// TestScenarios runs the scenario files under testdata (see package
// scentest for their commands). Rewrite the expected output with
// `go test ./scheduler -run Scenario -rewrite` after checking the diff.
func TestScenarios(t *testing.T) { scentest.Walk(t, "testdata") }
