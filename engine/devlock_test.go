package engine

import (
	"testing"
	"time"

	"gostachio/kernels/cpu"
	"gostachio/plan"
)

// lockPlan has a partial aggregate pipeline (0) and a hash-build pipeline
// (1), both on a key column k.
func lockPlan() *plan.Plan {
	agg := plan.Aggs{{Fn: plan.AggSum, Arg: plan.Col("v"), As: "s"}}
	return &plan.Plan{Name: "locks", Pipelines: []plan.Pipeline{
		{Name: "fold", Ops: []plan.Op{{Kind: plan.OpScan}, {Kind: plan.OpAggPartial, Keys: []string{"k"}, Expr: agg}, {Kind: plan.OpShuffle, Keys: []string{"k"}}}},
		{Name: "build", Ops: []plan.Op{{Kind: plan.OpScan}, {Kind: plan.OpHashBuild, Keys: []string{"k"}}}},
	}}
}

func keyBatch(n int) *cpu.Batch {
	k, v := make([]int64, n), make([]int64, n)
	for i := range k {
		k[i], v[i] = int64(i%97), 1
	}
	return &cpu.Batch{Names: []string{"k", "v"}, Cols: []cpu.Vec{{Type: cpu.TInt64, I64: k}, {Type: cpu.TInt64, I64: v}}, Rows: n}
}

// within fails the test unless fn returns within a generous bound (it
// must not wait on the other device at all; the bound only turns a
// deadlock into a failure).
func within(t *testing.T, what string, fn func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s waited on another device's work", what)
	}
}

// The devices of a pipeline fold into their own states and build their own
// tables at the same time: while device 0 is busy with its state or table
// (its lock held), device 1 folds, materializes and builds without waiting.
// Under the pipeline's lock the devices took turns, and each of two
// devices' folds of TPC-H Q18's lineitem took 1.75x as long as one alone.
func TestDevicesWorkInParallel(t *testing.T) {
	p := lockPlan()
	d := newRunData(nil, p, 2, 1<<30)
	fold, build := &d.pipes[0], &d.pipes[1]

	fold.devMu[0].Lock()
	within(t, "device 1's fold", func() error {
		groups, err := d.fold(0, &p.Pipelines[0].Ops[1], 1, keyBatch(1000))
		if err == nil && groups != 97 {
			t.Errorf("device 1's fold reported %d new groups, want 97", groups)
		}
		return err
	})
	within(t, "device 1's emission", func() error {
		rows, _, err := d.materialize(0, 1)
		if err == nil && rows != 97 {
			t.Errorf("device 1 emitted %d groups, want 97", rows)
		}
		return err
	})
	fold.devMu[0].Unlock()
	if fold.state[0] != nil || !fold.emitted[1] {
		t.Errorf("device 0's state %v (want none), device 1 emitted %v (want true)", fold.state[0], fold.emitted[1])
	}

	build.devMu[0].Lock()
	build.left[1] = []*cpu.Batch{keyBatch(10), keyBatch(20)}
	within(t, "device 1's build", func() error { return d.buildTable(1, 1) })
	build.devMu[0].Unlock()
	if build.tables[1] == nil || build.tables[0] != nil {
		t.Fatalf("tables after device 1's build: %v", build.tables)
	}
	if len(build.left[1]) != 1 || build.left[1][0].Rows != 30 {
		t.Errorf("device 1 retains %d batches after its build, want its 30 rows in one", len(build.left[1]))
	}
}
