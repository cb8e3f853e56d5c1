package calibrate

import (
	"fmt"
	"runtime"

	"gostachio/costmodel"
	"gostachio/kernels/cpu"
	"gostachio/plan"
)

// textKeys times the operators that key on text (plan.Op.StrKeys) —
// q16's groups, shuffle and sort on p_brand, p_type and p_size — beside
// the same operators over the same rows keyed on two integers
// (p_size, p_partkey): a text key hashes and compares byte by byte (q16's
// sort ran 5x its price when its text keys cost what integers do), and
// the plans' scan pipelines key on text only in q1, on one-byte flags.
// Each kernel's sample prices its keys as the cost model prices the plan's
// operators (plan.Op.Terms, StrTerms; a sort's times costmodel.SortLog).
func (m *micro) textKeys() error {
	part, err := m.table("part")
	if err != nil {
		return err
	}
	devices := runtime.GOMAXPROCS(0)
	count := plan.Aggs{plan.Count("n")}
	for _, n := range m.sizes(part.Rows) {
		in, err := cols(part, []string{"p_partkey", "p_brand", "p_type", "p_size"}, n)
		if err != nil {
			return err
		}
		width := int(bytesOf(in) / int64(in.Rows))
		for _, keys := range [][]string{{"p_brand", "p_type", "p_size"}, {"p_size", "p_partkey"}} {
			text := textColumns(in, keys)
			label := fmt.Sprintf("%v", keys)

			partial := plan.Op{Kind: plan.OpAggPartial, Keys: keys, Expr: count, OutWidth: width + 8, StrKeys: text}
			var st *cpu.Aggregator
			ns, err := m.time(func() (e error) { st, e = fold(&partial, in); return })
			if err != nil {
				return err
			}
			partial.Groups = int64(st.Groups())
			m.add(plan.OpAggPartial, partial.Terms(), "group by "+label, in, ns)
			m.out[len(m.out)-1].StrTerms = partial.StrTerms()
			m.out[len(m.out)-1].Table = aggStateBytes(&partial, st)

			// The final over two devices' copies of the state.
			state, err := st.Result(false)
			if err != nil {
				return err
			}
			both, err := cpu.Concat([]*cpu.Batch{state, state})
			if err != nil {
				return err
			}
			final := partial
			final.Kind = plan.OpAggFinal
			ns, err = m.time(func() error {
				a := cpu.NewAggregator(keys, count, true)
				if err := a.Merge(both); err != nil {
					return err
				}
				_, err := a.Result(true)
				return err
			})
			if err != nil {
				return err
			}
			m.add(plan.OpAggFinal, final.Terms(), "final by "+label, both, ns)
			m.out[len(m.out)-1].StrTerms = final.StrTerms()
			m.out[len(m.out)-1].Table = aggStateBytes(&final, st)

			ns, err = m.time(func() error { _, e := cpu.Partition(in, keys, devices); return e })
			if err != nil {
				return err
			}
			m.add(plan.OpShuffle, float64(len(keys)), "shuffle on "+label, in, ns)
			m.out[len(m.out)-1].StrTerms = float64(text)

			ns, err = m.time(func() error { _, e := cpu.Sort(in, plan.ParseSortKeys(keys), 0); return e })
			if err != nil {
				return err
			}
			l := costmodel.SortLog(float64(in.Rows))
			m.add(plan.OpSort, float64(len(keys))*l, "sort by "+label, in, ns)
			m.out[len(m.out)-1].StrTerms = float64(text) * l
		}
	}
	return nil
}

// textColumns counts the text columns of b among names as the plans do
// (plan.Op.StrKeys): longer than plan.TextFlagBytes on average.
func textColumns(b *cpu.Batch, names []string) int {
	n := 0
	for _, c := range names {
		i := b.Col(plan.ParseSortKey(c).Col)
		if i < 0 || b.Cols[i].Type != cpu.TString || b.Rows == 0 {
			continue
		}
		off := b.Cols[i].Off
		if float64(off[b.Rows]-off[0])/float64(b.Rows) > plan.TextFlagBytes {
			n++
		}
	}
	return n
}
