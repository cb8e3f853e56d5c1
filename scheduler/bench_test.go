package scheduler

import (
	"context"
	"testing"

	"gostachio/tpch/queries"
)

// BenchmarkRun measures the scheduler's cost per task: Run over an instant
// backend (tasks complete in start order, no work), Q6 / Q3 on TPC-H SF10
// with 10,000-row chunks (6,000 lineitem chunks), 1 node x 8 devices. The
// figure to watch is tasks/s (each task is one start and one completion
// event); allocs/op divided by tasks is the per-task allocation rate.
func BenchmarkRun(b *testing.B) {
	tables, err := queries.Stats(10, 10_000)
	if err != nil {
		b.Fatal(err)
	}
	topo := Topology{Nodes: 1, Devices: 8, SSDs: 8, NICs: 8, DeviceMem: 40 << 30, PinnedMem: 64 << 30}
	for _, bc := range []struct{ q, policy, set string }{
		{"q6", "serial", ""},
		{"q6", "overlap", "chunk=0"},
		{"q6", "overlap", "chunk=0,combine=off,metacache=off,defer=off"},
		{"q6", "overlap", "chunk=0,adaptive=off"},
		{"q3", "overlap", "chunk=0"},
	} {
		p, err := queries.Build(bc.q, 10, tables)
		if err != nil {
			b.Fatal(err)
		}
		pol, err := NewPolicy(bc.policy, bc.set)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.q+"/"+bc.policy+"/"+bc.set, func(b *testing.B) {
			b.ReportAllocs()
			var tasks int64
			for b.Loop() {
				res, err := Run(context.Background(), p, pol, &instantBackend{topo: topo}, nil)
				if err != nil {
					b.Fatal(err)
				}
				tasks += res.Tasks
			}
			b.ReportMetric(float64(tasks)/b.Elapsed().Seconds(), "tasks/s")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(tasks), "ns/task")
		})
	}
}
