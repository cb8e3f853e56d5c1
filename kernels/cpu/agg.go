package cpu

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"gostachio/internal/dirtmake"
	"gostachio/plan"
)

// Aggregator is a hash group-by over key columns named in NewAggregator.
//
// Update folds raw rows (partial aggregation); Merge folds partial-state
// batches as Result(false) emits them (final aggregation, or merging the
// partial states of several units into one); both work in either mode.
// Result emits, per group, the key columns (same names, types and scales as
// the input), then per aggregate:
//
//	partial (Result(false)):
//	  sum    As: int64 for int32/int64 arguments, decimal of the argument's
//	         scale, float64
//	  count  As: int64
//	  avg    As$sum (as sum) and As$count (int64)
//	  min/max As: the argument's type (int64, int32, date, decimal, float64,
//	         string)
//	final (Result(true)): one column As per aggregate: sum, count, min and
//	  max as above; avg float64 = sum / count (a decimal sum divided by
//	  10^scale).
//
// Groups come out in first-seen order: deterministic for a given sequence
// of calls (a key whose 64-bit hash collides with an earlier group's of the
// same call is placed after that call's other new groups). With no keys
// there is exactly one group: Result(true) of an aggregator that saw no
// rows still emits one row, holding zero values (sum 0, count 0, avg 0,
// min/max the type's zero value) where SQL would give NULL; Result(false)
// of such an aggregator emits no row, so merging it changes nothing.
//
// Types are fixed by the first Update or Merge (a call with zero rows
// counts); later calls must bring the same key and value types (an int32
// or int64 argument may alternate for sum and avg). An aggregator that
// never saw a call emits int64 columns for its keys and for sum, min and
// max. Integer and decimal sums are exact int64: an overflow is an error,
// after which the aggregator's state is undefined. Group keys are stored
// columnarly; per-row work allocates nothing. Not safe for concurrent use.
type Aggregator struct {
	keys  []string
	aggs  plan.Aggs
	final bool
	err   error // a malformed aggregate list, returned by every call
	slots []aggSlot

	kt     []Vec    // group key values, one vector per key
	ktyped bool     // kt types fixed
	ghash  []uint64 // per group: its key hash
	table  []int32  // open addressing on hash high bits: group+1, 0 empty
	tsize  int      // slots of table (or of tab1, which replaces it)
	shift  uint     // home slot = hash >> shift
	groups int
	seen   bool // some row was folded (matters for the no-keys group)

	// Packed keys: while every key is an integer, a bool or a string of at
	// most 15 bytes, each key column is coded as pw[k] 64-bit words that
	// determine its value (see aggPackCol), so a row's key is a short word
	// tuple: hashing and equality are integer ops, and a probe's key check
	// is exact (no verify pass). packed is decided when the key types are
	// fixed; a longer string turns it off for good (aggUnpack).
	packed bool
	pw     []int      // words per key column (strings: 1 or 2)
	pwoff  []int      // first word of key column k in a row's tuple
	pwn    int        // words per tuple
	gw     []uint64   // per group: its tuple (pwn words)
	tab1   []aggSlot1 // pwn == 1: table's slots with their words

	// scratch reused across calls
	hs      []uint64
	rw      []uint64 // per row: its tuple (packed mode)
	gids    []int32
	newRows []int32
	bad     []bool
	bcnt    []int64 // per group: rows of the current batch
}

// aggSlot is the state of one aggregate for all groups.
type aggSlot struct {
	agg   plan.Agg
	typed bool
	vt    Type // sum, avg: the sum's type; min, max: the value type; count: int64
	scale int8
	i64   []int64   // integer/decimal sums; min/max of integer-coded values, widened
	f64   []float64 // float sums; min/max of floats
	cnt   []int64   // count; avg's count
	str   aggStrs   // min/max of strings
}

// aggStrs holds one string per group in an append-only arena; replaced
// values become garbage, compacted when it outweighs the live bytes.
type aggStrs struct {
	off   []int
	n     []int32 // -1: no value yet
	arena []byte
	live  int
}

// NewAggregator returns an aggregator grouping on keys, computing aggs. The
// final flag records the aggregator's role for messages only: Update,
// Merge and both Result forms work in either role. A malformed aggregate
// list (unknown function, empty or repeated output name) is reported by
// every later call.
func NewAggregator(keys []string, aggs plan.Aggs, final bool) *Aggregator {
	a := &Aggregator{keys: append([]string(nil), keys...), aggs: append(plan.Aggs(nil), aggs...), final: final}
	a.kt = make([]Vec, len(keys))
	a.slots = make([]aggSlot, len(aggs))
	for i, g := range aggs {
		a.slots[i].agg = g
		switch {
		case g.Fn < plan.AggSum || g.Fn > plan.AggMax:
			a.err = fmt.Errorf("cpu: aggregate %s: unknown function", g)
		case g.As == "":
			a.err = fmt.Errorf("cpu: aggregate %s has no output name", g)
		}
	}
	// Both outputs (partial state and final values) need unique names.
	partial := append([]string(nil), keys...)
	fin := append([]string(nil), keys...)
	for _, g := range aggs {
		partial = append(partial, g.PartialColumns()...)
		fin = append(fin, g.As)
	}
	for _, names := range [][]string{fin, partial} {
		seen := map[string]bool{}
		for _, name := range names {
			if seen[name] && a.err == nil {
				a.err = fmt.Errorf("cpu: aggregate output column %s appears twice (keys %v, aggregates %s)", name, keys, aggs)
			}
			seen[name] = true
		}
	}
	if len(keys) == 0 {
		a.groups = 1
	}
	return a
}

// Groups is the number of groups so far (1 with no keys).
func (a *Aggregator) Groups() int { return a.groups }

// LongestRun is the longest run of occupied slots in the group table: the
// most slots one lookup can probe. Keys that arrive sorted by their home
// slot (the high bits of their hash) pile into one run; other orders
// leave runs of a few dozen slots at most. For diagnostics and tests.
func (a *Aggregator) LongestRun() int {
	run, longest := 0, 0
	for s := 0; s < a.tsize; s++ {
		if (a.tab1 != nil && a.tab1[s].g != 0) || (a.tab1 == nil && a.table[s] != 0) {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return longest
}

func (a *Aggregator) role() string {
	if a.final {
		return "final aggregate"
	}
	return "partial aggregate"
}

// aggKeyCols resolves and checks the key columns of b.
func (a *Aggregator) aggKeyCols(b *Batch) ([]int, error) {
	kc := make([]int, len(a.keys))
	for k, name := range a.keys {
		c := b.Col(name)
		if c < 0 {
			_, err := b.Column(name)
			return nil, fmt.Errorf("cpu: %s group key: %w", a.role(), err)
		}
		if err := htCheckKey(b, c, a.role()+" group key"); err != nil {
			return nil, err
		}
		v := &b.Cols[c]
		if a.ktyped && (v.Type != a.kt[k].Type || v.Type == TDecimal && v.Scale != a.kt[k].Scale) {
			return nil, fmt.Errorf("cpu: %s group key %s is %s, earlier input had %s", a.role(), name, gthTypeName(v), gthTypeName(&a.kt[k]))
		}
		kc[k] = c
	}
	return kc, nil
}

// AggArgs evaluates the arguments of aggs over b, as Update takes them:
// args[i] is aggregate i's argument, nil where it has none (count(*)).
func AggArgs(b *Batch, aggs plan.Aggs) ([]*Vec, error) {
	args := make([]*Vec, len(aggs))
	for i, a := range aggs {
		if a.Arg == nil {
			continue
		}
		v, err := Eval(b, a.Arg)
		if err != nil {
			return nil, fmt.Errorf("argument of %s: %w", a, err)
		}
		args[i] = &v
	}
	return args, nil
}

// Update folds the rows of b: b holds the key columns (by name), args[i]
// is the evaluated argument of aggs[i] (b.Rows values; nil for count(*),
// ignored for count). Errors: missing or mistyped keys or arguments, a sum
// overflow. It does not keep b or args.
func (a *Aggregator) Update(b *Batch, args []*Vec) error {
	if a.err != nil {
		return a.err
	}
	if b == nil {
		return fmt.Errorf("cpu: %s: Update of a nil batch", a.role())
	}
	if len(args) != len(a.slots) {
		return fmt.Errorf("cpu: %s: %d argument vectors for %d aggregates (%s)", a.role(), len(args), len(a.slots), a.aggs)
	}
	kc, err := a.aggKeyCols(b)
	if err != nil {
		return err
	}
	for i := range a.slots {
		s := &a.slots[i]
		arg := args[i]
		if arg == nil {
			if s.agg.Fn == plan.AggCount {
				if err := s.setType(TInt64, 0); err != nil {
					return err
				}
				continue
			}
			return fmt.Errorf("cpu: aggregate %s: no argument vector", s.agg)
		}
		if n := arg.Len(); n != b.Rows {
			return fmt.Errorf("cpu: aggregate %s: argument has %d values for %d rows", s.agg, n, b.Rows)
		}
		if err := s.typeArg(arg); err != nil {
			return err
		}
	}
	gids := a.aggAssign(b, kc)
	a.aggExtend()
	n := b.Rows
	if n == 0 {
		return nil
	}
	a.seen = true
	bcnt := a.aggBatchCounts(gids, n)
	count := func(cnt []int64) {
		if bcnt == nil {
			aggCount(cnt, gids, n)
			return
		}
		for g, c := range bcnt {
			cnt[g] += c
		}
	}
	for i := range a.slots {
		s := &a.slots[i]
		if s.agg.Fn == plan.AggCount {
			count(s.cnt)
			continue
		}
		if err := s.fold(gids, args[i], n); err != nil {
			return err
		}
		if s.agg.Fn == plan.AggAvg {
			count(s.cnt)
		}
	}
	return nil
}

// aggBatchCounts returns the rows per group of gids (n rows) when several
// counts (count, avg) need them and groups are few next to the rows: one
// pass then serves them all. Otherwise nil: each counts its own way.
func (a *Aggregator) aggBatchCounts(gids []int32, n int) []int64 {
	uses := 0
	for i := range a.slots {
		if f := a.slots[i].agg.Fn; f == plan.AggCount || f == plan.AggAvg {
			uses++
		}
	}
	if gids == nil || uses < 2 || 4*a.groups > n {
		return nil
	}
	if cap(a.bcnt) < a.groups {
		a.bcnt = make([]int64, a.groups)
	}
	bcnt := a.bcnt[:a.groups]
	clear(bcnt)
	for _, g := range gids[:n] {
		bcnt[g]++
	}
	return bcnt
}

// Merge folds a partial-state batch (key columns, then per aggregate the
// columns named by plan.Agg.PartialColumns, found by name), as emitted by
// Result(false) of aggregators over the same keys and aggregates. It does
// not keep the batch.
func (a *Aggregator) Merge(partial *Batch) error {
	if a.err != nil {
		return a.err
	}
	if partial == nil {
		return fmt.Errorf("cpu: %s: Merge of a nil batch", a.role())
	}
	kc, err := a.aggKeyCols(partial)
	if err != nil {
		return err
	}
	cols := make([][2]*Vec, len(a.slots))
	for i := range a.slots {
		s := &a.slots[i]
		for j, name := range s.agg.PartialColumns() {
			v, err := partial.Column(name)
			if err != nil {
				return fmt.Errorf("cpu: %s: partial state of %s: %w", a.role(), s.agg, err)
			}
			if n := v.Len(); n != partial.Rows {
				return fmt.Errorf("cpu: %s: partial column %s has %d values for %d rows", a.role(), name, n, partial.Rows)
			}
			cols[i][j] = v
		}
		if err := s.typePartial(cols[i][0], cols[i][1]); err != nil {
			return err
		}
	}
	gids := a.aggAssign(partial, kc)
	a.aggExtend()
	n := partial.Rows
	if n == 0 {
		return nil
	}
	a.seen = true
	for i := range a.slots {
		s := &a.slots[i]
		switch s.agg.Fn {
		case plan.AggCount:
			if aggSumInts(s.cnt, gids, cols[i][0].I64[:n]) < 0 {
				return fmt.Errorf("cpu: %s overflows int64", s.agg)
			}
		case plan.AggAvg:
			if err := s.fold(gids, cols[i][0], n); err != nil {
				return err
			}
			if aggSumInts(s.cnt, gids, cols[i][1].I64[:n]) < 0 {
				return fmt.Errorf("cpu: count of %s overflows int64", s.agg)
			}
		default:
			if err := s.fold(gids, cols[i][0], n); err != nil {
				return err
			}
		}
	}
	return nil
}

// setType fixes the slot's value type, or checks it against the fixed one.
func (s *aggSlot) setType(vt Type, scale int8) error {
	if vt != TDecimal {
		scale = 0
	}
	if !s.typed {
		s.typed, s.vt, s.scale = true, vt, scale
		return nil
	}
	if s.vt != vt || s.scale != scale {
		was, now := Vec{Type: s.vt, Scale: s.scale}, Vec{Type: vt, Scale: scale}
		return fmt.Errorf("cpu: aggregate %s: values were %s, now %s", s.agg, gthTypeName(&was), gthTypeName(&now))
	}
	return nil
}

// typeArg types the slot from an Update argument.
func (s *aggSlot) typeArg(arg *Vec) error {
	switch s.agg.Fn {
	case plan.AggCount:
		return s.setType(TInt64, 0)
	case plan.AggSum, plan.AggAvg:
		switch arg.Type {
		case TInt64, TInt32:
			return s.setType(TInt64, 0)
		case TDecimal, TFloat64:
			return s.setType(arg.Type, arg.Scale)
		}
	case plan.AggMin, plan.AggMax:
		switch arg.Type {
		case TInt64, TInt32, TDate, TDecimal, TFloat64, TString:
			return s.setType(arg.Type, arg.Scale)
		}
	}
	return fmt.Errorf("cpu: aggregate %s: cannot take a %s argument", s.agg, arg.Type)
}

// typePartial types the slot from its partial-state columns.
func (s *aggSlot) typePartial(v, cnt *Vec) error {
	switch s.agg.Fn {
	case plan.AggCount:
		if v.Type == TInt64 {
			return s.setType(TInt64, 0)
		}
	case plan.AggSum, plan.AggAvg:
		if s.agg.Fn == plan.AggAvg && cnt.Type != TInt64 {
			return fmt.Errorf("cpu: aggregate %s: partial count is %s, not int64", s.agg, cnt.Type)
		}
		switch v.Type {
		case TInt64, TDecimal, TFloat64:
			return s.setType(v.Type, v.Scale)
		}
	case plan.AggMin, plan.AggMax:
		switch v.Type {
		case TInt64, TInt32, TDate, TDecimal, TFloat64, TString:
			return s.setType(v.Type, v.Scale)
		}
	}
	return fmt.Errorf("cpu: aggregate %s: partial state of type %s", s.agg, gthTypeName(v))
}

// aggExtend sizes every typed slot's state to the number of groups, new
// groups holding the neutral value (0; min: the largest value; max: the
// smallest; strings: none).
func (a *Aggregator) aggExtend() {
	n := a.groups
	for i := range a.slots {
		s := &a.slots[i]
		if !s.typed {
			continue
		}
		switch s.agg.Fn {
		case plan.AggCount:
			s.cnt = aggGrowTo(s.cnt, n, 0)
		case plan.AggSum, plan.AggAvg:
			if s.vt == TFloat64 {
				s.f64 = aggGrowTo(s.f64, n, 0)
			} else {
				s.i64 = aggGrowTo(s.i64, n, 0)
			}
			if s.agg.Fn == plan.AggAvg {
				s.cnt = aggGrowTo(s.cnt, n, 0)
			}
		case plan.AggMin, plan.AggMax:
			isMin := s.agg.Fn == plan.AggMin
			switch s.vt {
			case TFloat64:
				init := math.Inf(-1)
				if isMin {
					init = math.Inf(1)
				}
				s.f64 = aggGrowTo(s.f64, n, init)
			case TString:
				s.str.off = aggGrowTo(s.str.off, n, 0)
				s.str.n = aggGrowTo(s.str.n, n, -1)
			default:
				init := int64(math.MinInt64)
				if isMin {
					init = math.MaxInt64
				}
				s.i64 = aggGrowTo(s.i64, n, init)
			}
		}
	}
}

// aggGrowTo extends s to n values, the new ones v; capacity at least
// doubles, so growing group by group stays linear.
func aggGrowTo[T dirtmake.Fixed](s []T, n int, v T) []T {
	m := len(s)
	if n <= m {
		return s
	}
	if n > cap(s) {
		// Unzeroed: every element up to n is set below, and the room past
		// it is set by the call that extends the length over it.
		s = aggRoom(s, max(n, 2*cap(s))-m)
	}
	s = s[:n]
	for i := m; i < n; i++ {
		s[i] = v
	}
	return s
}

// fold adds value vector v (an argument or a partial sum / min / max
// column) into the slot's sum, min or max.
func (s *aggSlot) fold(gids []int32, v *Vec, n int) error {
	switch s.agg.Fn {
	case plan.AggSum, plan.AggAvg:
		var ovf int64
		switch v.Type {
		case TInt64, TDecimal:
			ovf = aggSumInts(s.i64, gids, v.I64[:n])
		case TInt32:
			ovf = aggSumInts(s.i64, gids, v.I32[:n])
		case TFloat64:
			aggSumFloats(s.f64, gids, v.F64[:n])
		}
		if ovf < 0 {
			x := s.agg.As
			if s.agg.Arg != nil {
				x = s.agg.Arg.String()
			}
			return fmt.Errorf("cpu: aggregate %s: sum of %s overflows int64", s.agg.As, x)
		}
	case plan.AggMin:
		switch v.Type {
		case TInt64, TDecimal:
			aggMin(s.i64, gids, v.I64[:n])
		case TInt32, TDate:
			aggMin(s.i64, gids, v.I32[:n])
		case TFloat64:
			aggMin(s.f64, gids, v.F64[:n])
		case TString:
			s.str.fold(gids, v, n, true)
		}
	case plan.AggMax:
		switch v.Type {
		case TInt64, TDecimal:
			aggMax(s.i64, gids, v.I64[:n])
		case TInt32, TDate:
			aggMax(s.i64, gids, v.I32[:n])
		case TFloat64:
			aggMax(s.f64, gids, v.F64[:n])
		case TString:
			s.str.fold(gids, v, n, false)
		}
	}
	return nil
}

// The fold loops: gids[i] is row i's group; nil gids means one group (no
// keys), summed in a register.

func aggCount(acc []int64, gids []int32, n int) {
	if gids == nil {
		acc[0] += int64(n)
		return
	}
	for _, g := range gids[:n] {
		acc[g]++
	}
}

// aggSumInts adds xs into acc and returns a negative value if a sum
// overflowed: s = a + x overflows iff a and x share a sign that s lacks.
func aggSumInts[T int32 | int64](acc []int64, gids []int32, xs []T) (ovf int64) {
	if gids == nil {
		s := acc[0]
		for _, x := range xs {
			v := int64(x)
			t := s + v
			ovf |= (s ^ t) & (v ^ t)
			s = t
		}
		acc[0] = s
		return ovf
	}
	gids = gids[:len(xs)]
	for i, x := range xs {
		v, g := int64(x), gids[i]
		s := acc[g]
		t := s + v
		ovf |= (s ^ t) & (v ^ t)
		acc[g] = t
	}
	return ovf
}

func aggSumFloats(acc []float64, gids []int32, xs []float64) {
	if gids == nil {
		s := acc[0]
		for _, x := range xs {
			s += x
		}
		acc[0] = s
		return
	}
	gids = gids[:len(xs)]
	for i, x := range xs {
		acc[gids[i]] += x
	}
}

func aggMin[A int64 | float64, T int32 | int64 | float64](acc []A, gids []int32, xs []T) {
	if gids == nil {
		m := acc[0]
		for _, x := range xs {
			if v := A(x); v < m {
				m = v
			}
		}
		acc[0] = m
		return
	}
	gids = gids[:len(xs)]
	for i, x := range xs {
		if v, g := A(x), gids[i]; v < acc[g] {
			acc[g] = v
		}
	}
}

func aggMax[A int64 | float64, T int32 | int64 | float64](acc []A, gids []int32, xs []T) {
	if gids == nil {
		m := acc[0]
		for _, x := range xs {
			if v := A(x); v > m {
				m = v
			}
		}
		acc[0] = m
		return
	}
	gids = gids[:len(xs)]
	for i, x := range xs {
		if v, g := A(x), gids[i]; v > acc[g] {
			acc[g] = v
		}
	}
}

// fold keeps, per group, the least (isMin) or greatest string.
func (s *aggStrs) fold(gids []int32, v *Vec, n int, isMin bool) {
	for i := range n {
		g := 0
		if gids != nil {
			g = int(gids[i])
		}
		x := v.Str[v.Off[i]:v.Off[i+1]]
		if cur := s.n[g]; cur >= 0 {
			c := bytes.Compare(x, s.arena[s.off[g]:s.off[g]+int(cur)])
			if isMin && c >= 0 || !isMin && c <= 0 {
				continue
			}
		}
		s.set(g, x)
	}
}

func (s *aggStrs) set(g int, x []byte) {
	if old := int(s.n[g]); old >= len(x) {
		copy(s.arena[s.off[g]:], x)
		s.live -= old - len(x)
		s.n[g] = int32(len(x))
		return
	} else if old > 0 {
		s.live -= old
	}
	s.off[g] = len(s.arena)
	s.arena = append(s.arena, x...)
	s.n[g] = int32(len(x))
	s.live += len(x)
	if len(s.arena) > 2*s.live+1<<16 {
		arena := make([]byte, 0, s.live+s.live/2)
		for g, l := range s.n {
			if l >= 0 {
				o := s.off[g]
				s.off[g] = len(arena)
				arena = append(arena, s.arena[o:o+int(l)]...)
			}
		}
		s.arena = arena
	}
}

// aggAssign maps each row of b to its group (creating groups for new
// keys) and returns the group ids; nil with no keys. Packed keys (see
// Aggregator.packed) go through aggAssignPacked. Otherwise rows find the
// first group of equal hash on their probe sequence; the new groups' keys
// are appended, then every row's key is compared with its group's in typed
// loops, and only rows hit by a hash collision search again key by key.
func (a *Aggregator) aggAssign(b *Batch, kc []int) []int32 {
	if len(kc) == 0 {
		return nil
	}
	if !a.ktyped {
		a.packed = true
		for k, c := range kc {
			v := &b.Cols[c]
			a.kt[k] = Vec{Type: v.Type}
			if v.Type == TDecimal {
				a.kt[k].Scale = v.Scale
			}
			if v.Type == TString {
				a.kt[k].Off = []int32{0}
			}
			if v.Type == TFloat64 {
				// -0 == +0 and NaN != NaN: bits are no key.
				a.packed = false
			}
		}
		a.ktyped = true
		if a.packed {
			a.pw = make([]int, len(kc))
			for k := range a.pw {
				a.pw[k] = 1
			}
			a.aggLayout()
		}
	}
	n := b.Rows
	if a.tsize == 0 {
		a.aggRehash(64)
	}
	if cap(a.gids) < n {
		a.gids = make([]int32, n)
	}
	gids := a.gids[:n]
	if a.packed && a.groups > aggPackedGroups {
		a.aggUnpack()
	}
	if a.packed && a.aggFitPacked(b, kc) {
		a.aggAssignPacked(b, kc, gids)
		return gids
	}
	a.aggAssignHashed(b, kc, gids)
	return gids
}

// aggAssignHashed is aggAssign's general path: it writes the group of
// each row of b to gids (b.Rows long).
func (a *Aggregator) aggAssignHashed(b *Batch, kc []int, gids []int32) {
	n := b.Rows
	a.hs = HashColumns(b, kc, a.hs)
	hs := a.hs
	newRows := a.newRows[:0]
	table, shift := a.table, a.shift
	mask := uint64(len(table) - 1)
	ghash := a.ghash
	for i, h := range hs {
		s := h >> shift
		for {
			g := table[s]
			if g == 0 {
				ng := int32(len(ghash))
				ghash = append(aggRoom(ghash, 1), h)
				table[s] = ng + 1
				gids[i] = ng
				newRows = append(newRows, int32(i))
				if 2*len(ghash) > len(table) {
					a.ghash = ghash
					a.aggRehash(2 * len(table))
					table, shift = a.table, a.shift
					mask = uint64(len(table) - 1)
				}
				break
			}
			if ghash[g-1] == h {
				gids[i] = g - 1
				break
			}
			s = (s + 1) & mask
		}
	}
	a.ghash, a.newRows = ghash, newRows
	a.groups = len(ghash)
	for k, c := range kc {
		aggAppendRows(&a.kt[k], &b.Cols[c], newRows)
	}

	if cap(a.bad) < n {
		a.bad = make([]bool, n)
	}
	bad := a.bad[:n]
	clear(bad)
	anyBad := false
	for k, c := range kc {
		if aggMarkUnequal(&b.Cols[c], &a.kt[k], gids, bad) {
			anyBad = true
		}
	}
	if !anyBad {
		return
	}
	one := []int32{0}
	for i, isBad := range bad {
		if !isBad {
			continue
		}
		h := hs[i]
		mask := uint64(len(a.table) - 1)
		for s := h >> a.shift; ; s = (s + 1) & mask {
			g := a.table[s]
			if g == 0 {
				ng := int32(len(a.ghash))
				a.ghash = append(a.ghash, h)
				a.table[s] = ng + 1
				gids[i] = ng
				one[0] = int32(i)
				for k, c := range kc {
					aggAppendRows(&a.kt[k], &b.Cols[c], one)
				}
				a.groups = len(a.ghash)
				if 2*len(a.ghash) > len(a.table) {
					a.aggRehash(2 * len(a.table))
				}
				break
			}
			if a.ghash[g-1] == h && aggRowEqual(b, kc, i, a.kt, int(g-1)) {
				gids[i] = g - 1
				break
			}
		}
	}
}

// aggPackedGroups bounds packed mode to tables that stay in cache: with
// more groups a lookup is a cache miss either way, and the general path's
// smaller slots (and its group-ordered hashes and keys, which sorted input
// keeps hot) measured faster (TPC-H Q18's 1.5M groups per SF).
const aggPackedGroups = 1 << 15

// aggLayout places the key columns' words in a tuple after a.pw changed.
func (a *Aggregator) aggLayout() {
	a.pwoff = make([]int, len(a.pw))
	a.pwn = 0
	for k, w := range a.pw {
		a.pwoff[k] = a.pwn
		a.pwn += w
	}
}

// aggFitPacked makes the packed layout hold the keys of b: a string key
// whose longest value in b needs more words than its column has widens
// the column (the stored tuples are recoded from kt); one over 15 bytes
// turns packed mode off (aggUnpack). It reports whether b's keys pack.
func (a *Aggregator) aggFitPacked(b *Batch, kc []int) bool {
	wider := false
	for k, c := range kc {
		v := &b.Cols[c]
		if v.Type != TString {
			continue
		}
		off := v.Off[:b.Rows+1]
		var long int32
		for i := range b.Rows {
			long = max(long, off[i+1]-off[i])
		}
		w := 1
		switch {
		case long > 15:
			a.aggUnpack()
			return false
		case long > 7:
			w = 2
		}
		if w > a.pw[k] {
			a.pw[k] = w
			wider = true
		}
	}
	if wider {
		a.aggLayout()
		kb := &Batch{Cols: a.kt, Rows: a.groups}
		a.gw = make([]uint64, a.groups*a.pwn, max(64, 2*a.groups)*a.pwn)
		for k := range a.kt {
			aggPackCol(&kb.Cols[k], a.groups, a.pw[k], a.pwoff[k], a.pwn, a.gw)
		}
		for g := range a.groups {
			a.ghash[g] = aggTupleHash(a.gw[g*a.pwn:(g+1)*a.pwn], aggCollideMask())
		}
		a.aggRehash(a.tsize)
	}
	return true
}

// aggUnpack leaves packed mode: the groups are rehashed with HashColumns
// for the general path.
func (a *Aggregator) aggUnpack() {
	a.packed, a.gw, a.rw, a.tab1 = false, nil, nil, nil
	keys := make([]int, len(a.kt))
	for k := range keys {
		keys[k] = k
	}
	a.ghash = HashColumns(&Batch{Names: a.keys, Cols: a.kt, Rows: a.groups}, keys, nil)
	a.aggRehash(a.tsize)
}

// aggPackCol writes the packed words of values 0..n-1 of key column v,
// w words each (w = 1 unless a string column of w = 2), to dst[i*stride +
// off ...]. Integers are their int64 value, bools 0 or 1. A string of
// length l (at most 8w - 1 bytes) is its bytes in little-endian order,
// zero-padded, with l in the top byte of its last word: equal words, equal
// strings.
func aggPackCol(v *Vec, n, w, off, stride int, dst []uint64) {
	if n == 0 {
		// dst may be empty: dst[off:] below would be out of range.
		return
	}
	switch v.Type {
	case TInt64, TDecimal:
		for i, x := range v.I64[:n] {
			dst[i*stride+off] = uint64(x)
		}
	case TInt32, TDate:
		for i, x := range v.I32[:n] {
			dst[i*stride+off] = uint64(int64(x))
		}
	case TBool:
		for i, x := range v.B[:n] {
			var u uint64
			if x {
				u = 1
			}
			dst[i*stride+off] = u
		}
	case TString:
		vo, str := v.Off[:n+1], v.Str
		if w == 1 {
			// Values that end 8 bytes before the end of str load as one
			// word; the rest take aggLoad's byte loop.
			d := dst[off:]
			lim := int32(len(str) - 8)
			o := vo[0]
			for i, e := range vo[1:] {
				l := uint(e - o)
				var x uint64
				if o <= lim {
					x = binary.LittleEndian.Uint64(str[o:]) & (uint64(1)<<(8*l) - 1)
				} else {
					x = aggLoad(str, int(o), int(l))
				}
				d[i*stride] = x | uint64(l)<<56
				o = e
			}
			return
		}
		for i := range n {
			o, l := int(vo[i]), int(vo[i+1]-vo[i])
			lo := min(l, 8)
			dst[i*stride+off] = aggLoad(str, o, lo)
			dst[i*stride+off+1] = aggLoad(str, o+lo, l-lo) | uint64(l)<<56
		}
	}
}

// aggLoad reads the l <= 8 bytes str[o:o+l] as a little-endian word,
// zero-padded: one load where 8 bytes are there to read.
func aggLoad(str []byte, o, l int) uint64 {
	if o+8 <= len(str) {
		return binary.LittleEndian.Uint64(str[o:]) & (uint64(1)<<(8*uint(l)) - 1)
	}
	var x uint64
	for j := l - 1; j >= 0; j-- {
		x = x<<8 | uint64(str[o+j])
	}
	return x
}

// aggTupleHash hashes a packed key tuple (its own function: packed groups
// are never compared with HashColumns hashes). cm is ^0, or 3 under
// htTestCollide.
func aggTupleHash(t []uint64, cm uint64) uint64 {
	h := uint64(htK0)
	for _, w := range t {
		h = htMum(h^w, htK1)
	}
	return h & cm
}

// aggCollideMask is the mask aggTupleHash applies.
func aggCollideMask() uint64 {
	if htTestCollide {
		return 3
	}
	return ^uint64(0)
}

// aggAssignPacked is aggAssign for packed keys: a row's tuple is hashed
// and looked up with an exact key check, so group ids are final at once
// and groups are numbered in first-seen order. The lookup loops stop at a
// row of a new key, which aggInsert adds; they are kept apart so that the
// hot loop holds its state in registers.
func (a *Aggregator) aggAssignPacked(b *Batch, kc []int, gids []int32) {
	n, nw := b.Rows, a.pwn
	if cap(a.rw) < n*nw {
		a.rw = make([]uint64, n*nw)
	}
	rw := a.rw[:n*nw]
	for k, c := range kc {
		aggPackCol(&b.Cols[c], n, a.pw[k], a.pwoff[k], nw, rw)
	}
	a.newRows = a.newRows[:0]
	cm := aggCollideMask()
	// Runs pay when most rows repeat the key before them (a sample
	// decides): a guess either way costs a mispredicted branch per row.
	same, m := 0, min(n, 257)
	for i := 1; i < m; i++ {
		if rw[i] == rw[i-1] {
			same++
		}
	}
	runs := nw == 1 && 2*same > m
	for i := 0; i < n; i++ {
		if nw == 1 {
			i = aggLookup1(rw, i, gids, a.tab1, a.shift, cm, runs)
		} else {
			i = aggLookupN(rw, nw, i, gids, a.table, a.ghash, a.gw, a.shift, cm)
		}
		if i == n {
			break
		}
		t := rw[i*nw : (i+1)*nw]
		gids[i] = a.aggInsert(t, aggTupleHash(t, cm), i)
		if len(a.ghash) > aggPackedGroups && i+1 < n {
			// Too many groups for packed mode: the rest of the batch
			// takes the general path.
			a.groups = len(a.ghash)
			for k, c := range kc {
				aggAppendRows(&a.kt[k], &b.Cols[c], a.newRows)
			}
			a.aggUnpack()
			a.aggAssignHashed(Slice(b, i+1, n), kc, gids[i+1:])
			return
		}
	}
	a.groups = len(a.ghash)
	for k, c := range kc {
		aggAppendRows(&a.kt[k], &b.Cols[c], a.newRows)
	}
}

// aggLookup1 sets gids[i] for rows from on of one-word tuples rw, up to
// the first row whose key has no group, whose index it returns (len(rw)
// if none).
func aggLookup1(rw []uint64, from int, gids []int32, tab []aggSlot1, shift uint, cm uint64, runs bool) int {
	mask := uint64(len(tab) - 1)
	gids = gids[:len(rw)]
	var last uint64 // the key of row from-1, or one row from's is not
	var lastG int32
	switch {
	case from > 0:
		last, lastG = rw[from-1], gids[from-1]
	case len(rw) > 0:
		last = ^rw[0]
	}
	for i := from; i < len(rw); i++ {
		x := rw[i]
		if runs {
			// Keys come in runs (input sorted on them): a row equal to
			// the one before shares its group.
			if x == last {
				gids[i] = lastG
				continue
			}
			last = x
		}
		s := htMum(htK0^x, htK1) & cm >> shift
		for {
			sl := &tab[s]
			if sl.x == x && sl.g != 0 {
				gids[i] = sl.g - 1
				lastG = sl.g - 1
				break
			}
			if sl.g == 0 {
				return i
			}
			s = (s + 1) & mask
		}
	}
	return len(rw)
}

// aggLookupN is aggLookup1 for tuples of nw words (rw holds them back to
// back); it returns the row index.
func aggLookupN(rw []uint64, nw, from int, gids []int32, table []int32, ghash, gw []uint64, shift uint, cm uint64) int {
	mask := uint64(len(table) - 1)
	n := len(rw) / nw
	gids = gids[:n]
	for i := from; i < n; i++ {
		t := rw[i*nw : (i+1)*nw]
		h := aggTupleHash(t, cm)
		s := h >> shift
		for {
			g := table[s]
			if g == 0 {
				return i
			}
			if ghash[g-1] == h && aggTupleEq(t, gw[int(g-1)*nw:int(g)*nw]) {
				gids[i] = g - 1
				break
			}
			s = (s + 1) & mask
		}
	}
	return n
}

// aggInsert adds a group for tuple t (hash h, no group yet), first seen
// at row i, and returns its id.
func (a *Aggregator) aggInsert(t []uint64, h uint64, i int) int32 {
	mask := uint64(a.tsize - 1)
	s := h >> a.shift
	ng := int32(len(a.ghash))
	if a.tab1 != nil {
		for a.tab1[s].g != 0 {
			s = (s + 1) & mask
		}
		a.tab1[s] = aggSlot1{x: t[0], g: ng + 1}
	} else {
		for a.table[s] != 0 {
			s = (s + 1) & mask
		}
		a.table[s] = ng + 1
	}
	a.ghash = append(a.ghash, h)
	a.gw = append(a.gw, t...)
	a.newRows = append(a.newRows, int32(i))
	if 2*len(a.ghash) > a.tsize {
		a.aggRehash(2 * a.tsize)
	}
	return ng
}

func aggTupleEq(x, y []uint64) bool {
	y = y[:len(x)]
	for j, w := range x {
		if y[j] != w {
			return false
		}
	}
	return true
}

// aggRehash rebuilds the slot table with size (a power of two) slots.
func (a *Aggregator) aggRehash(size int) {
	lg := 0
	for 1<<lg < size {
		lg++
	}
	a.tsize = size
	a.shift = uint(64 - lg)
	mask := uint64(size - 1)
	if a.packed && a.pwn == 1 {
		a.table, a.tab1 = nil, make([]aggSlot1, size)
		for g, h := range a.ghash {
			s := h >> a.shift
			for a.tab1[s].g != 0 {
				s = (s + 1) & mask
			}
			a.tab1[s] = aggSlot1{x: a.gw[g], g: int32(g + 1)}
		}
		return
	}
	a.table, a.tab1 = make([]int32, size), nil
	for g, h := range a.ghash {
		s := h >> a.shift
		for a.table[s] != 0 {
			s = (s + 1) & mask
		}
		a.table[s] = int32(g + 1)
	}
}

// aggSlot1 mirrors a slot of Aggregator.table for one-word tuples: the
// group's word next to its number, so a lookup reads one place.
type aggSlot1 struct {
	x uint64
	g int32 // group + 1; 0: empty
}

// aggAppendRows appends rows of src to dst (same type). The key columns
// grow by doubling (aggRoom): append alone grows a large slice by about
// 1.25x, so a partial aggregate of many groups copied its keys some five
// times over as they grew (q16: growslice under this function was 13% of
// the query's CPU).
func aggAppendRows(dst, src *Vec, rows []int32) {
	switch src.Type {
	case TInt64, TDecimal:
		dst.I64 = aggRoom(dst.I64, len(rows))
		for _, r := range rows {
			dst.I64 = append(dst.I64, src.I64[r])
		}
	case TInt32, TDate:
		dst.I32 = aggRoom(dst.I32, len(rows))
		for _, r := range rows {
			dst.I32 = append(dst.I32, src.I32[r])
		}
	case TFloat64:
		dst.F64 = aggRoom(dst.F64, len(rows))
		for _, r := range rows {
			dst.F64 = append(dst.F64, src.F64[r])
		}
	case TBool:
		dst.B = aggRoom(dst.B, len(rows))
		for _, r := range rows {
			dst.B = append(dst.B, src.B[r])
		}
	case TString:
		n := 0
		for _, r := range rows {
			n += int(src.Off[r+1] - src.Off[r])
		}
		dst.Str = aggRoom(dst.Str, n)
		dst.Off = aggRoom(dst.Off, len(rows))
		for _, r := range rows {
			dst.Str = append(dst.Str, src.Str[src.Off[r]:src.Off[r+1]]...)
			dst.Off = append(dst.Off, int32(len(dst.Str)))
		}
	}
}

// aggRoom returns s with room for extra more elements, its capacity at
// least doubled when it has to grow. The new memory is not zeroed
// (dirtmake): only s's elements are copied, and the room is appended to
// before it is read.
func aggRoom[T dirtmake.Fixed](s []T, extra int) []T {
	need := len(s) + extra
	if need <= cap(s) {
		return s
	}
	grown := dirtmake.Slice[T](max(need, 2*cap(s)))
	return grown[:copy(grown, s)]
}

// aggMarkUnequal sets bad[i] where row i of v differs from group gids[i]
// of the stored keys g (same type) and reports whether it set any.
func aggMarkUnequal(v, g *Vec, gids []int32, bad []bool) bool {
	switch v.Type {
	case TInt64, TDecimal:
		return aggNe(v.I64, g.I64, gids, bad)
	case TInt32, TDate:
		return aggNe(v.I32, g.I32, gids, bad)
	case TFloat64:
		return aggNe(v.F64, g.F64, gids, bad)
	case TBool:
		return aggNe(v.B, g.B, gids, bad)
	case TString:
		diff := false
		for i, gi := range gids {
			if !bytes.Equal(v.Str[v.Off[i]:v.Off[i+1]], g.Str[g.Off[gi]:g.Off[gi+1]]) {
				bad[i], diff = true, true
			}
		}
		return diff
	}
	return false
}

func aggNe[T comparable](xs, gs []T, gids []int32, bad []bool) bool {
	diff := false
	xs = xs[:len(gids)]
	for i, g := range gids {
		if xs[i] != gs[g] {
			bad[i], diff = true, true
		}
	}
	return diff
}

// aggRowEqual compares the keys of row i of b with those of group g.
func aggRowEqual(b *Batch, kc []int, i int, kt []Vec, g int) bool {
	for k, c := range kc {
		v, s := &b.Cols[c], &kt[k]
		switch v.Type {
		case TInt64, TDecimal:
			if v.I64[i] != s.I64[g] {
				return false
			}
		case TInt32, TDate:
			if v.I32[i] != s.I32[g] {
				return false
			}
		case TFloat64:
			if v.F64[i] != s.F64[g] {
				return false
			}
		case TBool:
			if v.B[i] != s.B[g] {
				return false
			}
		case TString:
			if !bytes.Equal(v.StrAt(i), s.StrAt(g)) {
				return false
			}
		}
	}
	return true
}

// Result emits the groups: the key columns, then the partial-state
// columns (final false) or the final values (final true) of each
// aggregate; see Aggregator. The output is newly allocated and the
// aggregator may keep folding afterwards.
func (a *Aggregator) Result(final bool) (*Batch, error) {
	return a.result(final, false)
}

// errAggEmitted is what an aggregator returns after Emit.
var errAggEmitted = errors.New("cpu: aggregator used after Emit")

// Emit is Result for an aggregator that is done: the batch's key columns
// and integer and float64 states are the state's own memory (views of its
// first Groups values), not copies. The emission of a partial state for an
// exchange spent most of its time copying into fresh memory (q21: a
// third of the kernel, page faults included). Every later call on a
// returns an error; the batch owns the memory.
func (a *Aggregator) Emit(final bool) (*Batch, error) {
	b, err := a.result(final, true)
	if a.err == nil {
		a.err = errAggEmitted
	}
	a.kt, a.slots, a.ghash, a.table = nil, nil, nil, nil
	return b, err
}

func (a *Aggregator) result(final, give bool) (*Batch, error) {
	if a.err != nil {
		return nil, a.err
	}
	a.aggExtend()
	rows, zero := a.groups, false
	if len(a.keys) == 0 && !a.seen {
		rows, zero = 0, final
		if final {
			rows = 1
		}
	}
	out := &Batch{Rows: rows}
	add := func(name string, v Vec) {
		out.Names = append(out.Names, name)
		out.Cols = append(out.Cols, v)
	}
	for k, name := range a.keys {
		if !a.ktyped {
			add(name, Vec{Type: TInt64, I64: []int64{}})
			continue
		}
		if give {
			add(name, sliceVec(&a.kt[k], 0, rows))
			continue
		}
		add(name, GatherVec(&a.kt[k], aggIota(rows)))
	}
	for i := range a.slots {
		s := &a.slots[i]
		g := s.agg
		switch {
		case g.Fn == plan.AggCount:
			add(g.As, s.aggInts(TInt64, 0, s.cnt, rows, zero, give))
		case g.Fn == plan.AggAvg && final:
			f := make([]float64, rows)
			if s.typed && !zero {
				div := 1.0
				if s.vt == TDecimal {
					div = math.Pow10(int(s.scale))
				}
				for j := range f {
					c := s.cnt[j]
					switch {
					case c == 0:
					case s.vt == TFloat64:
						f[j] = s.f64[j] / float64(c)
					default:
						f[j] = float64(s.i64[j]) / (float64(c) * div)
					}
				}
			}
			add(g.As, Vec{Type: TFloat64, F64: f})
		case g.Fn == plan.AggAvg:
			pc := g.PartialColumns()
			add(pc[0], s.aggValues(rows, zero, give))
			add(pc[1], s.aggInts(TInt64, 0, s.cnt, rows, zero, give))
		default:
			add(g.As, s.aggValues(rows, zero, give))
		}
	}
	return out, nil
}

func aggIota(n int) []int32 {
	sel := make([]int32, n)
	for i := range sel {
		sel[i] = int32(i)
	}
	return sel
}

// aggInts copies rows values of an int64 state as a vector of type t
// (with give, the vector is the state's memory).
func (s *aggSlot) aggInts(t Type, scale int8, xs []int64, rows int, zero, give bool) Vec {
	if give && s.typed && !zero {
		return Vec{Type: t, Scale: scale, I64: xs[:rows:rows]}
	}
	out := make([]int64, rows)
	if s.typed && !zero {
		copy(out, xs[:rows])
	}
	return Vec{Type: t, Scale: scale, I64: out}
}

// aggValues emits the sum, min or max state (zero values if zero, or if
// the slot never saw a value type: int64 zeros); with give, an int64 or
// float64 state is emitted as its own memory.
func (s *aggSlot) aggValues(rows int, zero, give bool) Vec {
	if !s.typed {
		return Vec{Type: TInt64, I64: make([]int64, rows)}
	}
	switch s.vt {
	case TFloat64:
		if give && !zero {
			return Vec{Type: TFloat64, F64: s.f64[:rows:rows]}
		}
		out := make([]float64, rows)
		if !zero {
			copy(out, s.f64[:rows])
		}
		return Vec{Type: TFloat64, F64: out}
	case TInt32, TDate:
		out := make([]int32, rows)
		if !zero {
			for j := range out {
				out[j] = int32(s.i64[j])
			}
		}
		return Vec{Type: s.vt, I32: out}
	case TString:
		off := make([]int32, rows+1)
		var str []byte
		if !zero {
			for j := range rows {
				if l := s.str.n[j]; l > 0 {
					str = append(str, s.str.arena[s.str.off[j]:s.str.off[j]+int(l)]...)
				}
				off[j+1] = int32(len(str))
			}
		}
		return Vec{Type: TString, Off: off, Str: str}
	}
	return s.aggInts(s.vt, s.scale, s.i64, rows, zero, give)
}
