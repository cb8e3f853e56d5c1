package gpu

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"testing"

	"gostachio/kernels/cpu"
	"gostachio/plan"
	"gostachio/tpch/queries"
)

// interpret runs a compiled row program over b on the host, as
// pipeline.cu's rowprog kernels do (an independent reading of the
// instruction set), and returns what the kernels would bring back.
func interpret(fp *fusedPlan, b *cpu.Batch) (packed, out []int64, abs []uint64, ngroups int, err error) {
	p := fp.p
	names := make([]string, len(p.cols))
	for n, k := range p.colIx {
		names[k] = n
	}
	vecs := make([]*cpu.Vec, len(names))
	for k, n := range names {
		if vecs[k], err = b.Column(n); err != nil {
			return nil, nil, nil, 0, err
		}
	}
	vals := make([]int64, len(fp.slots))
	return accumulate(fp, b.Rows, func(i int) (bool, int64, []int64, error) {
		var r [plRegs]int64
		for pc := 0; pc < len(p.ins); pc += 4 {
			op, dst, a, bb := p.ins[pc], p.ins[pc+1], p.ins[pc+2], p.ins[pc+3]
			d := dst & 0xff
			switch op {
			case plCol64:
				r[d] = vecs[a].I64[i]
			case plCol32:
				r[d] = int64(vecs[a].I32[i])
			case plStr:
				s := vecs[a].StrAt(i)
				if len(s) > int(bb) {
					return false, 0, nil, fmt.Errorf("string longer than %d", bb)
				}
				var c uint64
				for j := 0; j < int(bb); j++ {
					c <<= 8
					if j < len(s) {
						c |= uint64(s[j]) + 1
					}
				}
				r[d] = int64(c)
			case plLit:
				r[d] = p.lits[a]
			case plAdd, plSub:
				x, y := r[a], r[bb]
				if op == plSub {
					y = -y
				}
				v := x + y
				if (x >= 0) == (y >= 0) && (v >= 0) != (x >= 0) {
					return false, 0, nil, errors.New("overflow")
				}
				r[d] = v
			case plMul:
				hi, lo := bits.Mul64(uint64(abs64(r[a])), uint64(abs64(r[bb])))
				if hi != 0 || lo > math.MaxInt64 {
					return false, 0, nil, errors.New("overflow")
				}
				r[d] = r[a] * r[bb]
			case plCmp:
				x, y := r[a], r[bb]
				res := map[int32]bool{0: x == y, 1: x != y, 2: x < y, 3: x <= y, 4: x > y, 5: x >= y}[dst>>8]
				r[d] = b2i(res)
			case plAnd:
				r[d] = b2i(r[a] != 0 && r[bb] != 0)
			case plOr:
				r[d] = b2i(r[a] != 0 || r[bb] != 0)
			case plNot:
				r[d] = b2i(r[a] == 0)
			case plIn:
				hit := false
				for k := 0; k < int(p.lits[bb]); k++ {
					hit = hit || p.lits[int(bb)+1+k] == r[a]
				}
				r[d] = b2i(hit)
			case plPack:
				r[d] = int64(uint64(r[d])<<uint(bb) | uint64(r[a]))
			default:
				return false, 0, nil, fmt.Errorf("opcode %d", op)
			}
		}
		sel := fp.filter < 0 || r[fp.filter] != 0
		var k int64
		if fp.key >= 0 {
			k = r[fp.key]
		}
		for a, s := range fp.slots {
			vals[a] = 1
			if s.reg >= 0 {
				vals[a] = r[s.reg]
			}
		}
		return sel, k, vals, nil
	})
}

// accumulate folds rows (selected, group key, slot values) as the fused
// kernels do: groups numbered in first-seen order, at most fusedGroups.
func accumulate(fp *fusedPlan, n int, row func(i int) (bool, int64, []int64, error)) (packed, out []int64, abs []uint64, ngroups int, err error) {
	nagg := len(fp.slots)
	gid := map[int64]int{}
	abs = make([]uint64, nagg)
	for i := 0; i < n; i++ {
		sel, k, vals, err := row(i)
		if err != nil {
			return nil, nil, nil, 0, err
		}
		if !sel {
			continue
		}
		g, ok := gid[k]
		if !ok {
			if len(gid) == fusedGroups {
				return nil, nil, nil, 0, notFused("more than %d groups", fusedGroups)
			}
			g = len(gid)
			gid[k] = g
			packed = append(packed, k)
			for _, s := range fp.slots {
				out = append(out, map[int]int64{plSum: 0, plMin: math.MaxInt64, plMax: math.MinInt64}[s.kind])
			}
		}
		for a, s := range fp.slots {
			v := vals[a]
			at := g*nagg + a
			switch s.kind {
			case plSum:
				out[at] += v
				abs[a] = max(abs[a], uint64(abs64(v)))
			case plMin:
				out[at] = min(out[at], v)
			case plMax:
				out[at] = max(out[at], v)
			}
		}
	}
	return packed, out, abs, len(gid), nil
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// TestFusedProgramsMatchCPU compiles the pipelines of the GPU tests for
// the fused path and runs them through a host reading of the row-program
// instruction set: the states equal the CPU engine's, so the compiler
// (scales, projections, keys, state layout) is checked without a GPU.
func TestFusedProgramsMatchCPU(t *testing.T) {
	for _, c := range pipelineCases() {
		t.Run(c.name, func(t *testing.T) {
			b := randomBatch(20_011, c.distinct, uint64(c.distinct))
			fp, err := compileFused(hostTypes(b), c.ops)
			if c.compiles != (err == nil) {
				t.Fatalf("compile: %v (want it to compile: %v)", err, c.compiles)
			}
			if err != nil {
				if !errors.Is(err, errNotFused) {
					t.Fatalf("refusal is not errNotFused: %v", err)
				}
				return
			}
			packed, out, abs, ngroups, err := interpret(fp, b)
			if errors.Is(err, errNotFused) && !c.fused {
				return // more groups than the fused path takes: the other path's
			}
			if err != nil {
				t.Fatal(err)
			}
			if !c.fused {
				t.Fatalf("%d groups ran fused; the case says it does not", ngroups)
			}
			got, _, _, err := fp.state(packed, out, abs, ngroups)
			if err != nil {
				t.Fatal(err)
			}
			want := rowsOf(cpuPartial(t, b, c.ops))
			gotRows := rowsOf(got)
			if fmt.Sprint(gotRows) != fmt.Sprint(want) {
				t.Fatalf("state:\n got %v\nwant %v", gotRows, want)
			}
			if len(fp.p.ins)/4 == 0 || fp.p.regs > plRegs {
				t.Fatalf("%d instructions, %d registers", len(fp.p.ins)/4, fp.p.regs)
			}
		})
	}
}

// TestFusedTPCHCompile: Q1's and Q6's scan pipelines compile for the fused
// path, in few registers.
func TestFusedTPCHCompile(t *testing.T) {
	tables, err := queries.Stats(1, 131072)
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]Col{"l_quantity": {Type: cpu.TDecimal, Scale: 2}, "l_extendedprice": {Type: cpu.TDecimal, Scale: 2},
		"l_discount": {Type: cpu.TDecimal, Scale: 2}, "l_tax": {Type: cpu.TDecimal, Scale: 2},
		"l_returnflag": {Type: cpu.TString, MaxLen: 1}, "l_linestatus": {Type: cpu.TString, MaxLen: 1},
		"l_shipdate": {Type: cpu.TDate}}
	for _, q := range []string{"q1", "q6"} {
		p, err := queriesBuild(q, tables)
		if err != nil {
			t.Fatal(err)
		}
		pl := p.Pipelines[0]
		in := &Batch{}
		for _, n := range pl.Ops[0].Out {
			in.Names = append(in.Names, n)
			in.Cols = append(in.Cols, types[n])
		}
		fp, err := compileFused(in, pl.Ops)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		t.Logf("%s: %d instructions, %d registers, %d aggregate slots", q, len(fp.p.ins)/4, fp.p.regs, len(fp.slots))
	}
}

func queriesBuild(q string, tables []plan.TableStats) (*plan.Plan, error) {
	return queries.Build(q, 1, tables)
}

// TestNumberKeys: filled slots numbered in slot order, empty ones -1.
func TestNumberKeys(t *testing.T) {
	table := []int64{math.MinInt64, 5, math.MinInt64, -9, 0}
	tgid := make([]int32, len(table))
	if n := numberKeys(table, tgid); n != 3 || fmt.Sprint(tgid) != "[-1 0 -1 1 2]" {
		t.Fatalf("%d groups, ids %v", n, tgid)
	}
}
