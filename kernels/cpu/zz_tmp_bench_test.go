package cpu

import (
	"testing"

	"gostachio/plan"
)

func BenchmarkZZ(bm *testing.B) {
	b := benchLineitem(1 << 16)[0]
	p, d := b.Cols[1].I64, b.Cols[2].I64
	out := make([]int64, len(p))
	bm.Run("plainmul", func(bm *testing.B) {
		for bm.Loop() {
			for i, x := range p {
				out[i] = x * d[i]
			}
		}
	})
	bm.Run("ovfmul", func(bm *testing.B) {
		for bm.Loop() {
			evArithI64(plan.FnMul, p, false, d, false, len(p), out)
		}
	})
	bm.Run("sub-cv", func(bm *testing.B) {
		for bm.Loop() {
			evArithI64(plan.FnSub, []int64{100}, true, d, false, len(p), out)
		}
	})
	bm.Run("eval", func(bm *testing.B) {
		for bm.Loop() {
			Eval(b, testQ1Charge)
		}
	})
}
