package scheduler

import (
	"context"
	"testing"

	"gostachio/plan"
	"gostachio/tpch/queries"
)

// releasingBackend records ReleaseOutput calls, checking that no task of a
// pipeline reading a released output starts afterwards.
type releasingBackend struct {
	*testBackend
	released map[int32]int
	readers  map[int32][]int32 // pipeline -> pipelines reading its output
	t        *testing.T
}

func (b *releasingBackend) ReleaseOutput(node, p int32) { b.released[p]++ }

func (b *releasingBackend) Start(t *Task) error {
	for in, readers := range b.readers {
		for _, r := range readers {
			if r == t.Pipeline && b.released[in] > 0 {
				b.t.Errorf("task %d of pipeline %d starts after its input %d was released", t.ID, t.Pipeline, in)
			}
		}
	}
	return b.testBackend.Start(t)
}

// TestOutputsReleasedOnceAfterReaders: every pipeline's output is released
// exactly once, and only after every pipeline reading it started its last
// task (the backend may drop the data then).
func TestOutputsReleasedOnceAfterReaders(t *testing.T) {
	tables, err := queries.Stats(0.01, 5000)
	if err != nil {
		t.Fatal(err)
	}
	p, err := queries.Build("q3", 0.01, tables)
	if err != nil {
		t.Fatal(err)
	}
	readers := map[int32][]int32{}
	for i, pl := range p.Pipelines {
		for _, in := range pl.Source.Inputs {
			readers[int32(in)] = append(readers[int32(in)], int32(i))
		}
		for _, op := range pl.Ops {
			if op.Kind == plan.OpHashProbe {
				readers[int32(op.Build)] = append(readers[int32(op.Build)], int32(i))
			}
		}
	}
	topo := Topology{Nodes: 2, Devices: 2, SSDs: 1, NICs: 1, DeviceMem: 1 << 30, PinnedMem: 1 << 30}
	b := &releasingBackend{testBackend: newTestBackend(topo, "random", 3), released: map[int32]int{}, readers: readers, t: t}
	pol, _ := NewPolicy("overlap", "")
	if _, err := Run(context.Background(), p, pol, b, nil); err != nil {
		t.Fatal(err)
	}
	for i := range p.Pipelines {
		if len(readers[int32(i)]) == 0 {
			continue
		}
		// One call per node.
		if got := b.released[int32(i)]; got != topo.Nodes {
			t.Errorf("pipeline %d released %d times, want %d (once per node)", i, got, topo.Nodes)
		}
	}
}
