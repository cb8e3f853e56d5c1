package gpu

import (
	"math"
	"strings"
	"testing"

	"gostachio/kernels/cpu"
)

// exactBounds bounds every integer, decimal and date column of g by its
// values in b (what the dataset's chunk statistics give the engine).
func exactBounds(t *testing.T, g *Batch, b *cpu.Batch) {
	t.Helper()
	for k, v := range b.Cols {
		lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
		switch v.Type {
		case cpu.TInt64, cpu.TDecimal:
			for _, x := range v.I64[:b.Rows] {
				lo, hi = min(lo, x), max(hi, x)
			}
		case cpu.TInt32, cpu.TDate:
			for _, x := range v.I32[:b.Rows] {
				lo, hi = min(lo, int64(x)), max(hi, int64(x))
			}
		default:
			continue
		}
		if err := g.Bound(b.Names[k], lo, hi); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRangesDropChecks: with the columns' ranges (the random batch's:
// prices below 10^5 in cents, discounts 0..0.10) every product and sum of
// the pipelines is proven in range, and the sums are bounded; without
// ranges the 64-bit arithmetic stays checked and the sums tracked; a
// range that allows overflow keeps the check.
func TestRangesDropChecks(t *testing.T) {
	b := randomBatch(1000, 5, 5)
	for _, c := range pipelineCases() {
		if !c.compiles {
			continue
		}
		shape := hostTypes(b)
		fp, err := compileFused(shape, c.ops)
		if err != nil {
			t.Fatal(err)
		}
		if src := fp.rowSource(); !strings.Contains(src, "pl_mul_ovf") {
			t.Fatalf("%s: unbounded decimal products not checked:\n%s", c.name, src)
		}
		if track, _ := fp.tracked(); !track[fp.aggSlot[0]] {
			t.Fatalf("%s: the unbounded sum of qty not tracked", c.name)
		}
		exactBounds(t, shape, b)
		if fp, err = compileFused(shape, c.ops); err != nil {
			t.Fatal(err)
		}
		if src := fp.rowSource(); strings.Contains(src, "_ovf(") {
			t.Fatalf("%s: checks left with every range known:\n%s", c.name, src)
		}
		track, bound := fp.tracked()
		for a, s := range fp.slots {
			if track[a] {
				t.Fatalf("%s: slot %d still tracked", c.name, a)
			}
			if s.kind == plSum && bound[a] == 0 && s.reg >= 0 {
				t.Fatalf("%s: slot %d unbounded", c.name, a)
			}
		}
		// Narrowed: products of in-range values widen from 32 bits;
		// comparisons of dates (the filter's) run in 32 bits.
		fp.narrow = true
		src := fp.rowSource()
		if !strings.Contains(src, "(long long)(int)") || (fp.filter >= 0 && !strings.Contains(src, " = (int)")) {
			t.Fatalf("%s: nothing narrowed:\n%s", c.name, src)
		}
		fp.narrow = false
		// qty's bound: its largest |value|, 50 x 100.
		if got := bound[fp.aggSlot[0]]; got > 5000 || got < 100 {
			t.Fatalf("%s: bound of sum(qty) %d, want at most 5000", c.name, got)
		}
		if err := shape.Bound("price", 0, math.MaxInt64/50); err != nil {
			t.Fatal(err)
		}
		if fp, err = compileFused(shape, c.ops); err != nil {
			t.Fatal(err)
		}
		if src := fp.rowSource(); !strings.Contains(src, "pl_mul_ovf") {
			t.Fatalf("%s: a product that may overflow is unchecked:\n%s", c.name, src)
		}
	}
	g := hostTypes(b)
	if err := g.Bound("flag", 0, 1); err == nil {
		t.Fatal("a string column bounded")
	}
	if err := g.Bound("qty", 2, 1); err == nil {
		t.Fatal("an empty range accepted")
	}
	if err := g.Bound("nope", 0, 1); err == nil {
		t.Fatal("a missing column bounded")
	}
}
