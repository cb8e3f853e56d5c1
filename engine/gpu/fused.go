package gpu

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strings"
	"unsafe"

	"gostachio/kernels/cpu"
	"gostachio/kernels/cuda"
	"gostachio/plan"
)

// The fused path: a pipeline whose filters, projections, group key and
// aggregate arguments compile into one row program (pipeline.cu's
// rowprog_*) runs in one kernel that reads each column once and writes
// nothing per row (plus a first kernel that finds the group keys, when
// there are keys). It takes at most fusedGroups groups and the program's
// limits below; any other pipeline takes the operator-at-a-time path.

// Row program opcodes and limits (pipeline.cu's PL_*).
const (
	plCol64 = iota
	plCol32
	plStr
	plLit
	plAdd
	plSub
	plMul
	plCmp
	plAnd
	plOr
	plNot
	plIn
	plPack

	plRegs      = 32
	plAggs      = 12
	fusedGroups = 8 // PL_FEW
	plSlots     = 64
)

// Aggregate kinds of rowprog_agg.
const (
	plSum = 0
	plMin = 1
	plMax = 2
)

// errNotFused: the pipeline does not fit the fused path (not an error of
// the run: the caller takes the other path).
var errNotFused = errors.New("not fusable")

func notFused(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errNotFused, fmt.Sprintf(format, args...))
}

// preg is a compiled value: a register, or a literal not yet loaded.
type preg struct {
	reg   int
	lit   bool
	i     int64
	typ   cpu.Type
	scale int8
}

type program struct {
	in    *Batch
	ins   []int32
	lits  []int64
	cols  []Col
	colIx map[string]int
	regs  int
	memo  map[string]preg
	env   map[string]plan.Expr // projected name -> expression over in's columns
}

func (p *program) emit(op, dst, a, b int) {
	p.ins = append(p.ins, int32(op), int32(dst), int32(a), int32(b))
}

func (p *program) newReg() (int, error) {
	if p.regs == plRegs {
		return 0, notFused("more than %d registers", plRegs)
	}
	p.regs++
	return p.regs - 1, nil
}

func (p *program) lit(v int64) int {
	p.lits = append(p.lits, v)
	return len(p.lits) - 1
}

// load puts a value in a register (literals are loaded once per program
// and value).
func (p *program) load(v preg) (int, error) {
	if !v.lit {
		return v.reg, nil
	}
	key := fmt.Sprintf("lit:%d", v.i)
	if m, ok := p.memo[key]; ok {
		return m.reg, nil
	}
	r, err := p.newReg()
	if err != nil {
		return 0, err
	}
	p.emit(plLit, r, p.lit(v.i), 0)
	p.memo[key] = preg{reg: r}
	return r, nil
}

func (p *program) column(name string) (int, Col, error) {
	c, ok := p.in.col(name)
	if !ok {
		return 0, c, fmt.Errorf("no column %s", name)
	}
	k, ok := p.colIx[name]
	if !ok {
		k = len(p.cols)
		p.cols = append(p.cols, c)
		p.colIx[name] = k
	}
	return k, c, nil
}

// value compiles an integer, decimal or date expression.
func (p *program) value(e plan.Expr) (preg, error) {
	switch e := e.(type) {
	case plan.Lit:
		v, err := litValue(e)
		if err != nil {
			return preg{}, notFused("%v", err)
		}
		return preg{lit: true, i: v.i, typ: v.typ, scale: v.scale}, nil
	case plan.Col:
		// A projected name: its expression is over the scan's columns
		// (substitute composed the projections), compiled without the
		// names of the projections.
		if alias, ok := p.env[string(e)]; ok {
			key := "env:" + string(e)
			if m, ok := p.memo[key]; ok {
				return m, nil
			}
			env := p.env
			p.env = nil
			v, err := p.value(alias)
			p.env = env
			if err == nil {
				p.memo[key] = v
			}
			return v, err
		}
		key := "col:" + string(e)
		if m, ok := p.memo[key]; ok {
			return m, nil
		}
		k, c, err := p.column(string(e))
		if err != nil {
			return preg{}, err
		}
		op := plCol64
		switch c.Type {
		case cpu.TInt64, cpu.TDecimal:
		case cpu.TInt32, cpu.TDate:
			op = plCol32
		default:
			return preg{}, notFused("%s column %s in arithmetic", c.Type, e)
		}
		r, err := p.newReg()
		if err != nil {
			return preg{}, err
		}
		p.emit(op, r, k, 0)
		v := preg{reg: r, typ: c.Type, scale: c.Scale}
		p.memo[key] = v
		return v, nil
	case plan.Call:
		if len(e.Args) != 2 || (e.Fn != plan.FnAdd && e.Fn != plan.FnSub && e.Fn != plan.FnMul) {
			return preg{}, notFused("%s", e)
		}
		// Keyed by text and by what names mean: the scan's columns (raw)
		// or the current projections (env, forgotten at the next one).
		key := "env:" + e.String()
		if p.env == nil {
			key = "raw:" + e.String()
		}
		if m, ok := p.memo[key]; ok {
			return m, nil
		}
		x, err := p.value(e.Args[0])
		if err != nil {
			return preg{}, err
		}
		y, err := p.value(e.Args[1])
		if err != nil {
			return preg{}, err
		}
		v, err := p.arith(e, x, y)
		if err == nil {
			p.memo[key] = v
		}
		return v, err
	}
	return preg{}, notFused("%v", e)
}

func integerType(t cpu.Type) bool { return t == cpu.TInt64 || t == cpu.TInt32 || t == cpu.TDecimal }

// scaled is v times 10^k: a literal is rescaled here, a register by a
// multiplication.
func (p *program) scaled(v preg, k int8) (preg, error) {
	if k == 0 {
		return v, nil
	}
	if v.lit {
		x, err := rescale(v.i, k)
		if err != nil {
			return preg{}, notFused("%v", err)
		}
		v.i = x
		v.scale += k
		return v, nil
	}
	m, err := p.load(preg{lit: true, i: pow10[k]})
	if err != nil {
		return preg{}, err
	}
	r, err := p.newReg()
	if err != nil {
		return preg{}, err
	}
	p.emit(plMul, r, v.reg, m)
	return preg{reg: r, typ: v.typ, scale: v.scale + k}, nil
}

func (p *program) arith(c plan.Call, x, y preg) (preg, error) {
	if !integerType(x.typ) || !integerType(y.typ) || (x.lit && y.lit) {
		return preg{}, notFused("%s", c)
	}
	typ := cpu.TInt64
	if x.typ == cpu.TDecimal || y.typ == cpu.TDecimal {
		typ = cpu.TDecimal
	}
	scale := x.scale + y.scale
	op := plMul
	if c.Fn != plan.FnMul {
		scale = max(x.scale, y.scale)
		var err error
		if x, err = p.scaled(x, scale-x.scale); err != nil {
			return preg{}, err
		}
		if y, err = p.scaled(y, scale-y.scale); err != nil {
			return preg{}, err
		}
		op = plAdd
		if c.Fn == plan.FnSub {
			op = plSub
		}
	} else if scale > 18 {
		return preg{}, notFused("product scale %d", scale)
	}
	a, err := p.load(x)
	if err != nil {
		return preg{}, err
	}
	b, err := p.load(y)
	if err != nil {
		return preg{}, err
	}
	r, err := p.newReg()
	if err != nil {
		return preg{}, err
	}
	p.emit(op, r, a, b)
	if typ != cpu.TDecimal {
		scale = 0
	}
	return preg{reg: r, typ: typ, scale: scale}, nil
}

// pred compiles a predicate into a 0/1 register.
func (p *program) pred(e plan.Expr) (int, error) {
	c, ok := e.(plan.Call)
	if !ok {
		return 0, notFused("predicate %s", e)
	}
	binary := func(op int, a, b int) (int, error) {
		r, err := p.newReg()
		if err != nil {
			return 0, err
		}
		p.emit(op, r, a, b)
		return r, nil
	}
	switch c.Fn {
	case plan.FnAnd, plan.FnOr:
		op := plAnd
		if c.Fn == plan.FnOr {
			op = plOr
		}
		acc, err := p.pred(c.Args[0])
		if err != nil {
			return 0, err
		}
		for _, a := range c.Args[1:] {
			x, err := p.pred(a)
			if err != nil {
				return 0, err
			}
			if acc, err = binary(op, acc, x); err != nil {
				return 0, err
			}
		}
		return acc, nil
	case plan.FnNot:
		x, err := p.pred(c.Args[0])
		if err != nil {
			return 0, err
		}
		return binary(plNot, x, 0)
	case plan.FnBetween:
		lo, err := p.compare(plan.Ge(c.Args[0], c.Args[1]), 5)
		if err != nil {
			return 0, err
		}
		hi, err := p.compare(plan.Le(c.Args[0], c.Args[2]), 3)
		if err != nil {
			return 0, err
		}
		return binary(plAnd, lo, hi)
	case plan.FnIn, plan.FnNotIn:
		x, err := p.value(c.Args[0])
		if err != nil {
			return 0, err
		}
		if x.lit || x.typ == cpu.TDecimal {
			return 0, notFused("%s", c)
		}
		at := p.lit(int64(len(c.Args) - 1))
		for _, a := range c.Args[1:] {
			l, ok := a.(plan.Lit)
			if !ok || (l.Kind != plan.LitInt && l.Kind != plan.LitDate) || (l.Kind == plan.LitDate) != (x.typ == cpu.TDate) {
				return 0, notFused("%s", c)
			}
			p.lit(l.I)
		}
		r, err := binary(plIn, x.reg, at)
		if err != nil || c.Fn == plan.FnIn {
			return r, err
		}
		return binary(plNot, r, 0)
	}
	op, ok := cmpOp(c.Fn)
	if !ok {
		return 0, notFused("predicate %s", c)
	}
	return p.compare(c, int(op))
}

// compare compiles a comparison of two values (operator op, common.cuh's
// numbering), aligning decimal scales.
func (p *program) compare(c plan.Call, op int) (int, error) {
	x, err := p.value(c.Args[0])
	if err != nil {
		return 0, err
	}
	y, err := p.value(c.Args[1])
	if err != nil {
		return 0, err
	}
	if (x.typ == cpu.TDate) != (y.typ == cpu.TDate) || (x.lit && y.lit) {
		return 0, notFused("%s", c)
	}
	if x.typ != cpu.TDate {
		s := max(x.scale, y.scale)
		if x, err = p.scaled(x, s-x.scale); err != nil {
			return 0, err
		}
		if y, err = p.scaled(y, s-y.scale); err != nil {
			return 0, err
		}
	}
	a, err := p.load(x)
	if err != nil {
		return 0, err
	}
	b, err := p.load(y)
	if err != nil {
		return 0, err
	}
	r, err := p.newReg()
	if err != nil {
		return 0, err
	}
	p.emit(plCmp, r|op<<8, a, b)
	return r, nil
}

// fusedAgg is one aggregate slot of rowprog_agg.
type fusedAgg struct {
	kind, reg int
	arg       preg
}

// fusedPlan is a pipeline compiled for the fused path.
type fusedPlan struct {
	p      *program
	filter int // register of the filter (-1: none)
	key    int // register of the packed group key (-1: no keys)
	keys   []keyCode
	aggs   plan.Aggs
	slots  []fusedAgg // the distinct values the aggregates fold
	// aggSlot[a] is aggregate a's slot, countSlot the rows per group's.
	aggSlot   []int
	countSlot int
	// narrow: the compiled form computes in 32 bits where the ranges
	// allow (Device.SetNarrow).
	narrow bool
}

// tryFused runs ops on the fused path, or returns errNotFused (having
// launched nothing, or only the key pass when it found too many groups).
func (r *run) tryFused(ops []plan.Op, st *Stats) (*cpu.Batch, error) {
	fp, err := compileFused(r.batch, ops)
	if err != nil {
		return nil, err
	}
	if r.d.noRanges.Load() {
		for i := range fp.p.cols {
			fp.p.cols[i].Bounded = false
		}
	}
	fp.narrow = r.d.narrow.Load()
	return r.runFused(fp, st)
}

// compileFused compiles ops over the columns of in (their types; no data
// is read) for the fused path, or returns errNotFused.
// Fuses reports why ops over batches shaped like b would not run as one
// fused row program (nil: they would), without a GPU; the group count,
// known only when rows are aggregated, is not checked.
func Fuses(b *cpu.Batch, ops []plan.Op) error {
	_, err := compileFused(hostTypes(b), ops)
	return err
}

// hostTypes is a device batch that only describes b's columns (types,
// scales, string lengths): what compileFused reads.
func hostTypes(b *cpu.Batch) *Batch {
	out := &Batch{Names: b.Names, Rows: b.Rows, Cols: make([]Col, len(b.Cols))}
	for k, v := range b.Cols {
		out.Cols[k] = Col{Type: v.Type, Scale: v.Scale}
		if v.Type == cpu.TString {
			c := &out.Cols[k]
			c.MinLen = math.MaxInt
			for i := 0; i < b.Rows; i++ {
				l := int(v.Off[i+1] - v.Off[i])
				c.MaxLen, c.MinLen = max(c.MaxLen, l), min(c.MinLen, l)
			}
		}
	}
	return out
}

func compileFused(in *Batch, ops []plan.Op) (*fusedPlan, error) {
	p := &program{in: in, colIx: map[string]int{}, memo: map[string]preg{}, env: map[string]plan.Expr{}}
	filter := -1
	var agg *plan.Op
	for i := range ops {
		op := &ops[i]
		switch op.Kind {
		case plan.OpScan, plan.OpGather, plan.OpShuffle, plan.OpBroadcast:
		case plan.OpFilter:
			f, err := p.pred(op.Expr)
			if err != nil {
				return nil, err
			}
			if filter >= 0 {
				r2, err := p.newReg()
				if err != nil {
					return nil, err
				}
				p.emit(plAnd, r2, filter, f)
				f = r2
			}
			filter = f
		case plan.OpProject:
			next := map[string]plan.Expr{}
			for _, ne := range op.Expr.(plan.Projection) {
				next[ne.Name] = substitute(ne.E, p.env)
			}
			// Registers stay valid (the scan's columns do not change);
			// names now mean the new projections.
			p.env = next
			for k := range p.memo {
				if strings.HasPrefix(k, "env:") {
					delete(p.memo, k)
				}
			}
		case plan.OpAggPartial:
			agg = op
		default:
			return nil, notFused("%s", op.Kind)
		}
	}
	if agg == nil {
		return nil, notFused("no aggregate")
	}
	aggs := agg.Expr.(plan.Aggs)
	// Group key: strings of at most 7 bytes packed, or one integer column.
	key := -1
	var keys []keyCode
	if len(agg.Keys) > 0 {
		var err error
		if key, keys, err = p.groupKey(agg.Keys); err != nil {
			return nil, err
		}
	}
	// One slot per distinct (kind, value): Q1's avg_qty sums what sum_qty
	// does, and count(*) counts what the rows per group count.
	var slots []fusedAgg
	slotOf := map[[2]int]int{}
	slot := func(f fusedAgg) int {
		k := [2]int{f.kind, f.reg}
		if i, ok := slotOf[k]; ok {
			return i
		}
		slotOf[k] = len(slots)
		slots = append(slots, f)
		return len(slots) - 1
	}
	aggSlot := make([]int, len(aggs))
	for i, a := range aggs {
		if a.Fn == plan.AggCount {
			aggSlot[i] = slot(fusedAgg{kind: plSum, reg: -1})
			continue
		}
		v, err := p.value(a.Arg)
		if err != nil {
			return nil, err
		}
		if v.typ == cpu.TDate && (a.Fn == plan.AggSum || a.Fn == plan.AggAvg) {
			return nil, notFused("sum of dates")
		}
		if v.lit && (a.Fn == plan.AggMin || a.Fn == plan.AggMax) {
			return nil, notFused("min/max of a literal")
		}
		reg, err := p.load(v)
		if err != nil {
			return nil, err
		}
		kind := plSum
		switch a.Fn {
		case plan.AggMin:
			kind = plMin
		case plan.AggMax:
			kind = plMax
		}
		aggSlot[i] = slot(fusedAgg{kind: kind, reg: reg, arg: v})
	}
	countSlot := slot(fusedAgg{kind: plSum, reg: -1}) // rows per group
	if len(slots) > plAggs {
		return nil, notFused("%d aggregates", len(slots))
	}
	return &fusedPlan{p: p, filter: filter, key: key, keys: keys, aggs: aggs, slots: slots, aggSlot: aggSlot, countSlot: countSlot}, nil
}

// substitute replaces column references by the projections they name.
func substitute(e plan.Expr, env map[string]plan.Expr) plan.Expr {
	switch x := e.(type) {
	case plan.Col:
		if a, ok := env[string(x)]; ok {
			return a
		}
		return x
	case plan.Call:
		args := make([]plan.Expr, len(x.Args))
		for i, a := range x.Args {
			args[i] = substitute(a, env)
		}
		return plan.Call{Fn: x.Fn, Args: args}
	}
	return e
}

// groupKey compiles the group key into one register: string codes packed
// at 8*maxlen+1 bits each (no range pass needed), or a single integer
// column as it is.
func (p *program) groupKey(names []string) (int, []keyCode, error) {
	exprs := make([]plan.Expr, len(names))
	for i, n := range names {
		exprs[i] = plan.Col(n)
		if a, ok := p.env[n]; ok {
			exprs[i] = a
		}
	}
	if len(names) == 1 {
		if c, ok := exprs[0].(plan.Col); ok {
			if col, ok := p.in.col(string(c)); ok && col.Type != cpu.TString {
				env := p.env
				p.env = nil
				v, err := p.value(c)
				p.env = env
				if err != nil {
					return 0, nil, err
				}
				return v.reg, []keyCode{{name: names[0], src: col, bits: 64}}, nil
			}
		}
	}
	acc, err := p.load(preg{lit: true, i: 0})
	if err != nil {
		return 0, nil, err
	}
	// A register of its own: PACK writes it in place.
	key, err := p.newReg()
	if err != nil {
		return 0, nil, err
	}
	p.emit(plAdd, key, acc, acc)
	keys := make([]keyCode, len(names))
	width := 0
	for i, e := range exprs {
		c, ok := e.(plan.Col)
		if !ok {
			return 0, nil, notFused("computed key %s", e)
		}
		k, col, err := p.column(string(c))
		if err != nil {
			return 0, nil, err
		}
		if col.Type != cpu.TString || col.MaxLen > 7 {
			return 0, nil, notFused("key %s", c)
		}
		b := 8*col.MaxLen + 1
		code, err := p.newReg()
		if err != nil {
			return 0, nil, err
		}
		p.emit(plStr, code, k, col.MaxLen)
		p.emit(plPack, key, code, b)
		keys[i] = keyCode{name: names[i], src: col, bits: b}
		width += b
	}
	if width > 62 {
		return 0, nil, notFused("keys of %d bits", width)
	}
	shift := width
	for i := range keys {
		shift -= keys[i].bits
		keys[i].shift = shift
	}
	return key, keys, nil
}

// upload copies host values to new scratch device memory.
// numberKeys numbers the filled slots of a key table (GS_EMPTY_KEY marks
// an empty one) in slot order into tgid (-1: empty) and returns how many.
func numberKeys(table []int64, tgid []int32) int {
	n := 0
	for s, k := range table {
		tgid[s] = -1
		if k != math.MinInt64 {
			tgid[s] = int32(n)
			n++
		}
	}
	return n
}

func uploadScratch[T any](r *run, vals []T) (cuda.DevicePtr, error) {
	var zero T
	p, err := r.arena.alloc(max(len(vals), 1) * int(unsafe.Sizeof(zero)))
	if err != nil {
		return 0, err
	}
	return p, r.s.CopyHtoD(p, bytesOf(vals))
}

func (r *run) runFused(fp *fusedPlan, st *Stats) (*cpu.Batch, error) {
	if r.d.jitOn() {
		return r.runCompiled(fp, st)
	}
	p, filter, key, slots := fp.p, fp.filter, fp.key, fp.slots
	n := int32(r.n)
	colPtrs := make([]uint64, len(p.cols))
	offPtrs := make([]uint64, len(p.cols))
	for i, c := range p.cols {
		colPtrs[i], offPtrs[i] = uint64(c.Data), uint64(c.Off)
	}
	dProg, err := uploadScratch(r, p.ins)
	if err != nil {
		return nil, err
	}
	dLits, err := uploadScratch(r, p.lits)
	if err != nil {
		return nil, err
	}
	dCols, err := uploadScratch(r, colPtrs)
	if err != nil {
		return nil, err
	}
	dOffs, err := uploadScratch(r, offPtrs)
	if err != nil {
		return nil, err
	}
	nins := int32(len(p.ins) / 4)
	common := []any{dProg, nins, dLits, dCols, dOffs, n, int32(filter), int32(key)}
	// Group keys: one pass into a small table, then ids on the host.
	tkeys := make([]int64, plSlots)
	tgid := make([]int32, plSlots)
	ngroups := 1
	if key >= 0 {
		dT, err := r.scratch(plSlots, 8)
		if err != nil {
			return nil, err
		}
		dFailed, err := r.scratch(1, 4)
		if err != nil {
			return nil, err
		}
		if err := r.launchN("join", "key_fill_empty", plSlots, dT, int32(plSlots)); err != nil {
			return nil, err
		}
		if err := r.launch("pipeline", "rowprog_mark", 0, append(common, dT, dFailed, r.ovf)...); err != nil {
			return nil, err
		}
		var failed [1]int32
		if err := r.s.CopyDtoH(bytesOf(tkeys), dT); err != nil {
			return nil, err
		}
		if err := r.s.CopyDtoH(bytesOf(failed[:]), dFailed); err != nil {
			return nil, err
		}
		if err := r.s.Synchronize(); err != nil {
			return nil, err
		}
		ngroups = numberKeys(tkeys, tgid)
		if failed[0] != 0 || ngroups > fusedGroups {
			return nil, notFused("more than %d groups", fusedGroups)
		}
		if ngroups == 0 {
			st.Fused = true
			return nil, r.checkOverflow()
		}
	}
	dTkeys, err := uploadScratch(r, tkeys)
	if err != nil {
		return nil, err
	}
	dTgid, err := uploadScratch(r, tgid)
	if err != nil {
		return nil, err
	}
	nagg := len(slots)
	kinds, regs := make([]int32, nagg), make([]int32, nagg)
	for a, s := range slots {
		kinds[a], regs[a] = int32(s.kind), int32(s.reg)
	}
	init := identities(slots, ngroups, 0)
	dKinds, err := uploadScratch(r, kinds)
	if err != nil {
		return nil, err
	}
	dRegs, err := uploadScratch(r, regs)
	if err != nil {
		return nil, err
	}
	dOut, err := uploadScratch(r, init)
	if err != nil {
		return nil, err
	}
	dAbs, err := r.scratch(nagg, 8)
	if err != nil {
		return nil, err
	}
	args := append(common, dTkeys, dTgid, int32(ngroups), int32(nagg), dKinds, dRegs, dOut, dAbs, r.ovf)
	if err := r.launch("pipeline", "rowprog_agg", 8*ngroups*nagg, args...); err != nil {
		return nil, err
	}
	out := make([]int64, ngroups*nagg)
	abs := make([]uint64, nagg)
	if err := r.s.CopyDtoH(bytesOf(out), dOut); err != nil {
		return nil, err
	}
	if err := r.s.CopyDtoH(bytesOf(abs), dAbs); err != nil {
		return nil, err
	}
	if err := r.checkOverflow(); err != nil {
		return nil, err
	}
	packed := make([]int64, ngroups)
	for s, k := range tkeys {
		if tgid[s] >= 0 {
			packed[tgid[s]] = k
		}
	}
	res, selected, groups, err := fp.state(packed, out, abs, ngroups)
	st.Selected, st.Groups, st.Launches, st.Fused = selected, groups, r.launches, true
	return res, err
}

// state assembles the partial state (cpu.Aggregator's layout) from the
// fused kernels' results: packed[g] is group g's key, out[g*nagg+a] its
// aggregate a (the last: its rows), abs[a] the largest |value| sum a saw.
// Groups without rows are left out; a state with no rows is nil.
func (fp *fusedPlan) state(packed, out []int64, abs []uint64, ngroups int) (*cpu.Batch, int, int, error) {
	slots, aggs := fp.slots, fp.aggs
	nagg := len(slots)
	countAt := fp.countSlot
	var keep []int
	var total uint64
	for g := 0; g < ngroups; g++ {
		if c := out[g*nagg+countAt]; c > 0 {
			keep = append(keep, g)
			total += uint64(c)
		}
	}
	for a, s := range slots {
		if s.kind == plSum && s.reg >= 0 {
			if hi, lo := bits.Mul64(abs[a], total); hi != 0 || lo > math.MaxInt64 {
				return nil, int(total), len(keep), fmt.Errorf("sum of %d values of magnitude up to %d may overflow int64", total, abs[a])
			}
		}
	}
	if len(keep) == 0 {
		return nil, 0, 0, nil
	}
	res := &cpu.Batch{Rows: len(keep)}
	if fp.key >= 0 {
		for _, k := range fp.keys {
			v, err := k.decode(packed, keep)
			if err != nil {
				return nil, 0, 0, err
			}
			res.Names = append(res.Names, k.name)
			res.Cols = append(res.Cols, v)
		}
	}
	col := func(a int) []int64 {
		o := make([]int64, len(keep))
		for j, g := range keep {
			o[j] = out[g*nagg+a]
		}
		return o
	}
	counts := col(countAt)
	for i, ag := range aggs {
		a := fp.aggSlot[i]
		appendAggState(res, ag, slots[a].arg.typ, slots[a].arg.scale, col(a), counts)
	}
	return res, int(total), len(keep), nil
}

// checkOverflow synchronizes the stream and reports an arithmetic overflow
// the kernels flagged.
func (r *run) checkOverflow() error {
	var ovf [1]int32
	if err := r.s.CopyDtoH(bytesOf(ovf[:]), r.ovf); err != nil {
		return err
	}
	if err := r.s.Synchronize(); err != nil {
		return err
	}
	if ovf[0] != 0 {
		return fmt.Errorf("decimal arithmetic overflowed int64 (in a row of the batch, selected or not)")
	}
	return nil
}
