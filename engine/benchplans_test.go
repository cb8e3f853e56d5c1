package engine

import (
	"slices"
	"testing"

	"gostachio/plan"
)

func TestPlanShapeDiff(t *testing.T) {
	tables := []plan.TableStats{
		{Name: "a", Columns: []string{"k", "v"}, Chunks: []plan.ChunkStats{{Rows: 10, Bytes: []int64{80, 80}}}},
		{Name: "b", Columns: []string{"k", "w"}, Chunks: []plan.ChunkStats{{Rows: 10, Bytes: []int64{80, 80}}}},
	}
	build := func(broadcast bool) *plan.Plan {
		b := plan.NewBuilder("p", tables)
		side := b.Scan("b", "k").Named("b")
		var ht int
		if broadcast {
			ht = b.From(side.Broadcast()).HashBuild("k")
		} else {
			ht = b.From(side.Shuffle("k")).HashBuild("k")
		}
		probe := b.Scan("a", "k", "v").Prune("v", 0, 5)
		if !broadcast {
			probe = b.From(probe.Shuffle("k"))
		}
		g := probe.Join(plan.JoinSemi, ht, []string{"k"}, nil, 0.5, 16).Gather()
		b.From(g).Output("k", "v")
		p, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, s := ShapeOf(build(true)), ShapeOf(build(false))
	if a.Exchanges["broadcast"] != 1 || s.Exchanges["shuffle"] != 2 || a.Joins["semi"] != 1 || a.Pruned != 1 {
		t.Fatalf("shapes: %+v, %+v", a, s)
	}
	want := []string{"pipelines 4 vs 5", "broadcast 1 vs 0", "shuffle 0 vs 2"}
	if got := a.Diff(s); !slices.Equal(got, want) {
		t.Fatalf("diff %q, want %q", got, want)
	}
	if got := a.Diff(a); len(got) != 0 {
		t.Fatalf("a plan differs from itself: %q", got)
	}
}
