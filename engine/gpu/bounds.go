package gpu

import (
	"fmt"
	"math"
	"math/big"

	"gostachio/kernels/cpu"
)

// Value ranges: where a batch's columns come with the range of their
// values (the dataset's chunk statistics, Batch.Bound), the compiled
// pipelines drop what the ranges prove needless: the overflow checks of
// additions, subtractions and products that cannot overflow, and the
// per-row tracking of each sum's largest |value| (the host bounds the sum
// by rows x the range's largest |value| instead). Both cost 64-bit work
// on every row: TPC-H Q1 computes two checked products and tracks six
// sums per row.

// SetRanges turns the use of the columns' value ranges on (the default)
// or off, for A/B runs: off, every compiled pipeline checks all its
// arithmetic and tracks its sums, as without ranges.
func (d *Device) SetRanges(on bool) { d.noRanges.Store(!on) }

// SetNarrow turns 32-bit arithmetic on where the value ranges allow it
// (additions, subtractions and comparisons whose operands and result fit
// in 32 bits; products of 32-bit operands widened to 64 bits in one
// instruction) or off (the default: 64-bit everywhere). It is off until a
// GPU run measures it: host-tested only (TestJITRowSourceMatchesCPU).
func (d *Device) SetNarrow(on bool) { d.narrow.Store(on) }

// Bound records that column name's values lie in [lo, hi] (integer,
// decimal and date columns, as stored: decimals scaled, dates in days).
// A wrong range makes the compiled pipelines wrap silently where they
// would have reported an overflow: give only ranges the data guarantees.
func (b *Batch) Bound(name string, lo, hi int64) error {
	if lo > hi {
		return fmt.Errorf("gpu: range [%d, %d] of column %s is empty", lo, hi, name)
	}
	for i, n := range b.Names {
		if n != name {
			continue
		}
		c := &b.Cols[i]
		if c.Type == cpu.TString {
			return fmt.Errorf("gpu: column %s is a string column: no value range", name)
		}
		c.Lo, c.Hi, c.Bounded = lo, hi, true
		return nil
	}
	return fmt.Errorf("gpu: no column %s to bound", name)
}

// interval is the range of a register's values over the batch's rows
// (known: the range holds; otherwise nothing is known).
type interval struct {
	lo, hi int64
	known  bool
}

// abs is the largest |value| of the interval.
func (v interval) abs() uint64 {
	a, b := v.lo, v.hi
	ua, ub := uint64(a), uint64(b)
	if a < 0 {
		ua = -uint64(a)
	}
	if b < 0 {
		ub = -uint64(b)
	}
	return max(ua, ub)
}

// insRange is what the ranges say of one instruction: its operands' and
// result's intervals where it runs, and whether it cannot overflow.
type insRange struct {
	x, y, out interval
	safe      bool
}

// ranges computes each register's interval from the columns' ranges
// (regs: after the program) and, per instruction (by index pc/4), its
// operands' and result's intervals and whether an addition, subtraction
// or product among them cannot overflow.
func (p *program) ranges() (regs [plRegs]interval, ins []insRange) {
	ins = make([]insRange, len(p.ins)/4)
	fits := func(x *big.Int) bool { return x.IsInt64() }
	for pc := 0; pc < len(p.ins); pc += 4 {
		op, dst, a, b := p.ins[pc], p.ins[pc+1]&0xff, p.ins[pc+2], p.ins[pc+3]
		var out interval
		switch op {
		case plCol64:
			if c := p.cols[a]; c.Bounded {
				out = interval{c.Lo, c.Hi, true}
			}
		case plCol32:
			out = interval{math.MinInt32, math.MaxInt32, true}
			if c := p.cols[a]; c.Bounded {
				out = interval{max(c.Lo, math.MinInt32), min(c.Hi, math.MaxInt32), true}
			}
		case plLit:
			v := p.lits[a]
			out = interval{v, v, true}
		case plCmp, plAnd, plOr, plNot, plIn:
			out = interval{0, 1, true}
		case plAdd, plSub, plMul:
			x, y := regs[a], regs[b]
			ins[pc/4].x, ins[pc/4].y = x, y
			if !x.known || !y.known {
				break
			}
			var cands [][2]int64
			switch op {
			case plAdd:
				cands = [][2]int64{{x.lo, y.lo}, {x.hi, y.hi}}
			case plSub:
				cands = [][2]int64{{x.lo, y.hi}, {x.hi, y.lo}}
			default:
				cands = [][2]int64{{x.lo, y.lo}, {x.lo, y.hi}, {x.hi, y.lo}, {x.hi, y.hi}}
			}
			lo, hi := new(big.Int), new(big.Int)
			ok := true
			for i, c := range cands {
				r := new(big.Int)
				u, v := big.NewInt(c[0]), big.NewInt(c[1])
				switch op {
				case plAdd:
					r.Add(u, v)
				case plSub:
					r.Sub(u, v)
				default:
					r.Mul(u, v)
				}
				if !fits(r) {
					ok = false
					break
				}
				if i == 0 || r.Cmp(lo) < 0 {
					lo.Set(r)
				}
				if i == 0 || r.Cmp(hi) > 0 {
					hi.Set(r)
				}
			}
			if ok {
				out = interval{lo.Int64(), hi.Int64(), true}
				ins[pc/4].safe = true
			}
		}
		if op == plCmp {
			ins[pc/4].x, ins[pc/4].y = regs[a], regs[b]
		}
		ins[pc/4].out = out
		regs[dst] = out
	}
	return regs, ins
}

// in32 reports whether every value of v fits in 32 bits.
func (v interval) in32() bool { return v.known && v.lo >= math.MinInt32 && v.hi <= math.MaxInt32 }

// tracked reports, per aggregate slot, whether its sum's largest |value|
// must be tracked per row (its value's range is unknown), and bound the
// range's largest |value| where it is known.
func (fp *fusedPlan) tracked() (track []bool, bound []uint64) {
	regs, _ := fp.p.ranges()
	track, bound = make([]bool, len(fp.slots)), make([]uint64, len(fp.slots))
	for a, s := range fp.slots {
		switch {
		case s.kind != plSum:
		case s.reg < 0:
			bound[a] = 1 // a count: 1 per row
		case regs[s.reg].known:
			bound[a] = regs[s.reg].abs()
		default:
			track[a] = true
		}
	}
	return track, bound
}
