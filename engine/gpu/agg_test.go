package gpu

import (
	"cmp"
	"slices"
	"testing"

	"gostachio/kernels/cpu"
	"gostachio/plan"
)

// TestGroupOrder: a partial state whose groups come in the GPU table's
// slot order (sorted by the high bits of the key hash, which the CPU
// aggregator's table uses too) piles into one long run of the
// aggregator's linear probing when merged; in orderGroups' order it does
// not, and orderGroups sorts by key.
func TestGroupOrder(t *testing.T) {
	const n, units = 200_000, 5
	keys := make([]int64, n)
	for i := range keys {
		keys[i] = int64(i) * 4
	}
	hb := &cpu.Batch{Names: []string{"k"}, Cols: []cpu.Vec{{Type: cpu.TInt64, I64: keys}}, Rows: n}
	hs := cpu.HashColumns(hb, []int{0}, nil)
	merge := func(order func(keep []int, packed []int64)) int {
		a := cpu.NewAggregator([]string{"k"}, plan.Aggs{plan.Count("c")}, false)
		longest := 0
		for u := 0; u < units; u++ {
			// A unit's groups: every units-th key, numbered in slot order.
			var ks []int64
			for i := u; i < n; i += units {
				ks = append(ks, keys[i])
			}
			slot := make([]int, len(ks))
			for i := range slot {
				slot[i] = i
			}
			slices.SortFunc(slot, func(x, y int) int { return cmp.Compare(hs[(u+x*units)], hs[(u+y*units)]) })
			packed := make([]int64, len(ks))
			for g, i := range slot {
				packed[g] = ks[i]
			}
			keep := make([]int, len(ks))
			for g := range keep {
				keep[g] = g
			}
			order(keep, packed)
			// Merge goes through the state's rows in order, so the table
			// after its first k rows is the table after merging them
			// alone: look at it every tenth of the state.
			for lo := 0; lo < len(keep); lo += len(keep) / 10 {
				part := keep[lo:min(lo+len(keep)/10, len(keep))]
				state := &cpu.Batch{Names: []string{"k", "c"}, Cols: []cpu.Vec{{Type: cpu.TInt64}, {Type: cpu.TInt64}}, Rows: len(part)}
				for _, g := range part {
					state.Cols[0].I64 = append(state.Cols[0].I64, packed[g])
					state.Cols[1].I64 = append(state.Cols[1].I64, 1)
				}
				if err := a.Merge(state); err != nil {
					t.Fatal(err)
				}
				longest = max(longest, a.LongestRun())
			}
		}
		if a.Groups() != n {
			t.Fatalf("%d groups, want %d", a.Groups(), n)
		}
		return longest
	}
	slotOrder := merge(func([]int, []int64) {})
	keyOrder := merge(orderGroups)
	if keyOrder > 200 || slotOrder < 10*keyOrder {
		t.Errorf("longest probe run: %d slots in key order, %d in slot order: want a short one in key order, far longer in slot order", keyOrder, slotOrder)
	}
	t.Logf("longest probe run: slot order %d, key order %d", slotOrder, keyOrder)
	keep, packed := []int{0, 1, 2, 3}, []int64{7, -3, 5, 0}
	orderGroups(keep, packed)
	if !slices.Equal(keep, []int{1, 3, 2, 0}) {
		t.Errorf("orderGroups: %v, want by key [1 3 2 0]", keep)
	}
}

// BenchmarkMergeStates merges five partial states of 300,000 groups each
// (q18's lineitem at SF1: 1.5 M orders over five units) into one CPU
// aggregator, in the GPU table's slot order and in orderGroups' order;
// each unit holds every fifth order, as units of ascending keys do.
func BenchmarkMergeStates(b *testing.B) {
	const n, units = 1_500_000, 5
	keys := make([]int64, n)
	for i := range keys {
		keys[i] = int64(i)*4 + 1
	}
	hb := &cpu.Batch{Names: []string{"k"}, Cols: []cpu.Vec{{Type: cpu.TInt64, I64: keys}}, Rows: n}
	hs := cpu.HashColumns(hb, []int{0}, nil)
	states := func(order func([]int, []int64)) []*cpu.Batch {
		var out []*cpu.Batch
		for u := 0; u < units; u++ {
			lo, hi := u*n/units, (u+1)*n/units
			packed := append([]int64(nil), keys[lo:hi]...)
			slices.SortFunc(packed, func(x, y int64) int { return cmp.Compare(hs[(x-1)/4], hs[(y-1)/4]) })
			keep := make([]int, len(packed))
			for g := range keep {
				keep[g] = g
			}
			order(keep, packed)
			st := &cpu.Batch{Names: []string{"k", "c"}, Cols: []cpu.Vec{{Type: cpu.TInt64}, {Type: cpu.TInt64}}, Rows: len(keep)}
			for _, g := range keep {
				st.Cols[0].I64 = append(st.Cols[0].I64, packed[g])
				st.Cols[1].I64 = append(st.Cols[1].I64, 1)
			}
			out = append(out, st)
		}
		return out
	}
	for _, c := range []struct {
		name  string
		order func([]int, []int64)
	}{{"slot-order", func([]int, []int64) {}}, {"key-order", orderGroups}} {
		sts := states(c.order)
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				a := cpu.NewAggregator([]string{"k"}, plan.Aggs{plan.Count("c")}, false)
				for _, st := range sts {
					if err := a.Merge(st); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
