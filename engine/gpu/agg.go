package gpu

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"gostachio/kernels/cpu"
	"gostachio/kernels/cuda"
	"gostachio/plan"
)

// Stats describe one Partial call.
type Stats struct {
	Rows     int // input rows
	Selected int // rows that passed the filters
	Groups   int // groups of the state
	Launches int // kernels launched
	// Fused: the pipeline ran as one row program (fused.go); Compiled:
	// compiled by NVRTC (jit.go), not interpreted.
	Fused, Compiled bool
	// KernelNs is the GPU time of the compiled kernels (events around
	// each launch; 0 on the other paths).
	KernelNs int64
	// Accumulators is where the compiled aggregate kernel accumulated.
	Accumulators Accumulators
}

// Partial runs ops (a scan pipeline's streaming ops and partial aggregate,
// as Supported accepts) over in on stream s and returns the aggregate's
// partial state as cpu.Aggregator.Result(false) lays it out: the key
// columns, then per aggregate its PartialColumns. Groups no selected row
// reached are left out, so a state with no rows is empty (nil with no
// error). in stays valid and owned by the caller; the state is host
// memory. The stream is synchronized before Partial returns.
//
// Filters do not compact: predicates set per-row flags, arithmetic runs
// over every row, and the flags drop rows from the groups. So an
// arithmetic overflow in a row a filter drops also fails the run (an
// error, never a wrong value). Integer sums use wrapping atomics; each sum
// kernel reports the largest |value| it added, and a state whose
// largest |value| x rows could exceed int64 is an error.
func (d *Device) Partial(s *cuda.Stream, in *Batch, ops []plan.Op) (*cpu.Batch, Stats, error) {
	st := Stats{Rows: in.Rows}
	r, err := d.newRun(s, in)
	defer r.close()
	if err != nil {
		return nil, st, err
	}
	if !d.operatorAtATime.Load() {
		out, err := r.tryFused(ops, &st)
		if !errors.Is(err, errNotFused) {
			if err != nil {
				return nil, st, fmt.Errorf("fused pipeline: %w", err)
			}
			return out, st, nil
		}
	}
	var flags cuda.DevicePtr
	for i := range ops {
		op := &ops[i]
		switch op.Kind {
		case plan.OpScan:
		case plan.OpFilter:
			if err := r.filter(op, &flags); err != nil {
				return nil, st, err
			}
		case plan.OpProject:
			if _, err := r.project(op); err != nil {
				return nil, st, err
			}
		case plan.OpAggPartial:
			out, err := r.aggregate(op, flags, &st)
			st.Launches = r.launches
			if err != nil {
				return nil, st, fmt.Errorf("%s %q: %w", op.Kind, op.Label, err)
			}
			return out, st, nil
		case plan.OpGather, plan.OpShuffle, plan.OpBroadcast:
		default:
			return nil, st, fmt.Errorf("%s %q: not on the GPU path yet", op.Kind, op.Label)
		}
	}
	return nil, st, fmt.Errorf("no partial aggregate in the pipeline")
}

// keyCode is one group key column coded as int64 on the device.
type keyCode struct {
	name   string
	src    Col
	code   cuda.DevicePtr
	lo, hi int64
	bits   int
	shift  int
}

// aggregate folds the selected rows into groups and brings the state back.
func (r *run) aggregate(op *plan.Op, flags cuda.DevicePtr, st *Stats) (*cpu.Batch, error) {
	aggs := op.Expr.(plan.Aggs)
	n := int32(r.n)
	// Evaluate the arguments first: their types fix the state's types.
	args := make([]value, len(aggs))
	for i, a := range aggs {
		if a.Arg == nil || a.Fn == plan.AggCount {
			continue
		}
		v, err := r.eval(a.Arg)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", a.As, err)
		}
		if v.lit || !(v.integer() || v.typ == cpu.TDate) || (v.typ == cpu.TDate && (a.Fn == plan.AggSum || a.Fn == plan.AggAvg)) {
			return nil, fmt.Errorf("%s: %s of a %s value is not on the GPU path yet", a.As, a.Fn, v.typ)
		}
		if v.col.Type == cpu.TInt32 || v.col.Type == cpu.TDate {
			w, err := r.widen(value{col: Col{Type: cpu.TInt32, Data: v.col.Data}, typ: cpu.TInt32})
			if err != nil {
				return nil, err
			}
			v.col.Data = w.col.Data
		}
		args[i] = v
	}
	// Group ids.
	var gids cuda.DevicePtr
	var keys []keyCode
	ngroups := 1
	var groupKeys []int64
	if len(op.Keys) > 0 && r.n > 0 {
		var err error
		keys, err = r.keyCodes(op.Keys)
		if err != nil {
			return nil, err
		}
		if gids, groupKeys, err = r.groupIDs(keys, flags); err != nil {
			return nil, err
		}
		ngroups = len(groupKeys)
	} else if len(op.Keys) > 0 {
		ngroups = 0
	}
	if ngroups == 0 {
		return nil, nil
	}
	// Per-group row counts (always: empty groups are dropped, and sums
	// are proven exact by rows x max |value|).
	counts, err := r.scratch(ngroups, 8)
	if err != nil {
		return nil, err
	}
	few, smem := ngroups <= 8, ngroups*8 <= 48<<10
	switch {
	case gids == 0:
		err = r.launch("pipeline", "count_flags", 0, flags, n, counts)
	case few:
		err = r.launch("pipeline", "agg_count_few", 0, gids, n, int32(ngroups), counts)
	case smem:
		err = r.launch("groupby", "agg_count_smem", 8*ngroups, gids, n, int32(ngroups), counts)
	default:
		err = r.launch("groupby", "agg_count", 0, gids, n, counts)
	}
	if err != nil {
		return nil, err
	}
	// One-group minima and maxima need ids to skip dropped rows.
	if gids == 0 && flags != 0 {
		for _, a := range aggs {
			if a.Fn == plan.AggMin || a.Fn == plan.AggMax {
				if gids, err = r.scratch(r.n, 4); err != nil {
					return nil, err
				}
				if err := r.launch("pipeline", "gids_from_flags", 0, flags, n, gids); err != nil {
					return nil, err
				}
				break
			}
		}
	}
	type slot struct {
		vals   cuda.DevicePtr
		absmax cuda.DevicePtr
	}
	slots := make([]slot, len(aggs))
	for i, a := range aggs {
		if a.Fn == plan.AggCount {
			continue
		}
		v := args[i].col.Data
		out, err := r.scratch(ngroups, 8)
		if err != nil {
			return nil, err
		}
		slots[i].vals = out
		switch a.Fn {
		case plan.AggSum, plan.AggAvg:
			am, err := r.scratch(1, 8)
			if err != nil {
				return nil, err
			}
			slots[i].absmax = am
			switch {
			case gids == 0:
				err = r.launch("pipeline", "sum_i64_flags_chk", 0, v, flags, n, out, am)
			case few:
				err = r.launch("pipeline", "agg_sum_i64_few_chk", 0, v, gids, n, int32(ngroups), out, am)
			case smem:
				err = r.launch("pipeline", "agg_sum_i64_smem_chk", 8*ngroups, v, gids, n, int32(ngroups), out, am)
			default:
				err = r.launch("pipeline", "agg_sum_i64_chk", 0, v, gids, n, out, am)
			}
		case plan.AggMin, plan.AggMax:
			fill, kernel := int64(math.MaxInt64), "agg_min_i64"
			if a.Fn == plan.AggMax {
				fill, kernel = math.MinInt64, "agg_max_i64"
			}
			if err = r.launchN("groupby", "agg_fill", ngroups, out, int32(ngroups), fill); err == nil {
				err = r.launch("groupby", kernel, 0, v, gids, n, out)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	// Bring the state back (one synchronization).
	hCounts := make([]int64, ngroups)
	if err := r.s.CopyDtoH(bytesOf(hCounts), counts); err != nil {
		return nil, err
	}
	hVals := make([][]int64, len(aggs))
	hAbs := make([]uint64, len(aggs))
	for i := range aggs {
		if slots[i].vals == 0 {
			continue
		}
		hVals[i] = make([]int64, ngroups)
		if err := r.s.CopyDtoH(bytesOf(hVals[i]), slots[i].vals); err != nil {
			return nil, err
		}
		if slots[i].absmax != 0 {
			if err := r.s.CopyDtoH(bytesOf(hAbs[i:i+1]), slots[i].absmax); err != nil {
				return nil, err
			}
		}
	}
	var ovf [1]int32
	if err := r.s.CopyDtoH(bytesOf(ovf[:]), r.ovf); err != nil {
		return nil, err
	}
	if err := r.s.Synchronize(); err != nil {
		return nil, err
	}
	if ovf[0] != 0 {
		return nil, fmt.Errorf("decimal arithmetic overflowed int64 (in a row of the batch, selected or not)")
	}
	// Keep the groups that selected rows reached.
	var keep []int
	total := uint64(0)
	for g, c := range hCounts {
		if c > 0 {
			keep = append(keep, g)
			total += uint64(c)
		}
	}
	st.Selected, st.Groups = int(total), len(keep)
	orderGroups(keep, groupKeys)
	for i, a := range aggs {
		if hAbs[i] != 0 {
			if hi, lo := bits.Mul64(hAbs[i], total); hi != 0 || lo > math.MaxInt64 {
				return nil, fmt.Errorf("%s: sum of %d values of magnitude up to %d may overflow int64", a.As, total, hAbs[i])
			}
		}
	}
	if len(keep) == 0 {
		return nil, nil
	}
	out := &cpu.Batch{Rows: len(keep)}
	for _, k := range keys {
		v, err := k.decode(groupKeys, keep)
		if err != nil {
			return nil, err
		}
		out.Names = append(out.Names, k.name)
		out.Cols = append(out.Cols, v)
	}
	pick := func(src []int64) []int64 {
		o := make([]int64, len(keep))
		for j, g := range keep {
			o[j] = src[g]
		}
		return o
	}
	rows := pick(hCounts)
	for i, a := range aggs {
		var vals []int64
		if hVals[i] != nil {
			vals = pick(hVals[i])
		}
		appendAggState(out, a, args[i].typ, args[i].scale, vals, rows)
	}
	return out, nil
}

// orderGroups orders the kept groups by their packed key (the key values'
// order). The table numbers groups in slot order, i.e. by the high bits of
// the key's hash, and the CPU aggregator that takes the state (Merge)
// uses the same hash and picks its slots by the same bits: groups in that
// order pile into one cluster of its linear probing while it merges
// them: in a hybrid run of q18 on one device's streams (an H100 host),
// merging the lineitem states (1.5 M groups over 5 units) took 2.2 s a
// unit, where the CPU engine folds a unit in 0.13 s (TestGroupOrder).
// Key order is unrelated to the hash and, for TPC-H's ascending keys,
// the order the CPU engine's own rows come in.
func orderGroups(keep []int, packed []int64) {
	if len(keep) > 1 {
		slices.SortFunc(keep, func(a, b int) int { return cmp.Compare(packed[a], packed[b]) })
	}
}

// launchN launches over n items other than the run's rows.
func (r *run) launchN(mod, name string, n int, args ...any) error {
	r.launches++
	return r.d.launch(r.s, mod, name, n, 0, args...)
}

// keyCodes codes every key column as int64 (strings by str_code, int32
// and dates widened) and measures each code's range on the device.
func (r *run) keyCodes(names []string) ([]keyCode, error) {
	n := int32(r.n)
	keys := make([]keyCode, len(names))
	width := 0
	for i, name := range names {
		c, ok := r.cols[name]
		if !ok {
			return nil, fmt.Errorf("no key column %s", name)
		}
		k := &keys[i]
		k.name, k.src = name, c
		switch c.Type {
		case cpu.TInt64, cpu.TDecimal:
			k.code = c.Data
		case cpu.TInt32, cpu.TDate:
			w, err := r.widen(value{col: Col{Type: cpu.TInt32, Data: c.Data}, typ: cpu.TInt32})
			if err != nil {
				return nil, err
			}
			k.code = w.col.Data
		case cpu.TString:
			if c.MaxLen > 7 {
				return nil, fmt.Errorf("key %s: strings of up to %d bytes (the GPU group-by packs keys of at most 7)", name, c.MaxLen)
			}
			out, err := r.scratch(r.n, 8)
			if err != nil {
				return nil, err
			}
			if err := r.launch("pipeline", "str_code", 0, c.Off, c.Data, n, int32(c.MaxLen), out, r.ovf); err != nil {
				return nil, err
			}
			k.code = out
		default:
			return nil, fmt.Errorf("key %s: %s keys are not on the GPU path yet", name, c.Type)
		}
	}
	// Ranges: scalar min and max of every code (one synchronization).
	ext, err := r.scratch(2*len(keys), 8)
	if err != nil {
		return nil, err
	}
	for i := range keys {
		lo, hi := ext.Add(16*i), ext.Add(16*i+8)
		if err := r.launchN("groupby", "agg_fill", 1, lo, int32(1), int64(math.MaxInt64)); err != nil {
			return nil, err
		}
		if err := r.launchN("groupby", "agg_fill", 1, hi, int32(1), int64(math.MinInt64)); err != nil {
			return nil, err
		}
		if err := r.launch("groupby", "agg_min_i64", 0, keys[i].code, cuda.DevicePtr(0), n, lo); err != nil {
			return nil, err
		}
		if err := r.launch("groupby", "agg_max_i64", 0, keys[i].code, cuda.DevicePtr(0), n, hi); err != nil {
			return nil, err
		}
	}
	h := make([]int64, 2*len(keys))
	if err := r.s.CopyDtoH(bytesOf(h), ext); err != nil {
		return nil, err
	}
	if err := r.s.Synchronize(); err != nil {
		return nil, err
	}
	for i := range keys {
		k := &keys[i]
		k.lo, k.hi = h[2*i], h[2*i+1]
		span := uint64(k.hi - k.lo)
		if k.hi < k.lo || (k.hi > 0 && k.lo < 0 && span > math.MaxInt64) {
			return nil, fmt.Errorf("key %s: range %d..%d too wide to pack", k.name, k.lo, k.hi)
		}
		k.bits = max(bits.Len64(span), 1)
		width += k.bits
	}
	if width > 62 {
		return nil, fmt.Errorf("keys %v need %d bits packed (the GPU group-by packs at most 62)", names, width)
	}
	shift := width
	for i := range keys {
		shift -= keys[i].bits
		keys[i].shift = shift
	}
	return keys, nil
}

// groupIDs packs the codes into one key per row, numbers the distinct keys
// in a hash table and returns every row's group id (-1 for rows the flags
// drop) and the packed key of each group.
func (r *run) groupIDs(keys []keyCode, flags cuda.DevicePtr) (cuda.DevicePtr, []int64, error) {
	n := int32(r.n)
	packed := keys[0].code
	if len(keys) > 1 || keys[0].lo != 0 {
		var err error
		if packed, err = r.scratch(r.n, 8); err != nil {
			return 0, nil, err
		}
		for i, k := range keys {
			first := int32(0)
			if i == 0 {
				first = 1
			}
			if err := r.launch("join", "key_pack", 0, k.code, cuda.DevicePtr(0), int32(0), n, k.lo, int32(k.bits), first, packed); err != nil {
				return 0, nil, err
			}
		}
	}
	// Table of at least twice the possible groups (capped by the rows).
	width := 0
	for _, k := range keys {
		width += k.bits
	}
	bound := r.n
	if width < 31 {
		bound = min(bound, 1<<width)
	}
	tbits := max(bits.Len(uint(2*bound-1)), 4)
	capSlots := 1 << tbits
	tkeys, err := r.scratch(capSlots, 8)
	if err != nil {
		return 0, nil, err
	}
	tgid, err := r.scratch(capSlots, 4)
	if err != nil {
		return 0, nil, err
	}
	counter, err := r.scratch(2, 4) // [0] groups, [1] table full
	if err != nil {
		return 0, nil, err
	}
	gkeys, err := r.scratch(capSlots, 8)
	if err != nil {
		return 0, nil, err
	}
	gids, err := r.scratch(r.n, 4)
	if err != nil {
		return 0, nil, err
	}
	steps := []func() error{
		func() error { return r.launchN("join", "key_fill_empty", capSlots, tkeys, int32(capSlots)) },
		func() error {
			return r.launch("groupby", "gb_insert", 0, packed, n, tkeys, int32(tbits), counter.Add(4))
		},
		func() error {
			return r.launchN("groupby", "gb_number", capSlots, tkeys, int32(capSlots), tgid, counter, gkeys)
		},
		func() error { return r.launch("groupby", "gb_lookup", 0, packed, n, tkeys, tgid, int32(tbits), gids) },
	}
	if flags != 0 {
		steps = append(steps, func() error { return r.launch("pipeline", "gids_mask", 0, flags, n, gids) })
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return 0, nil, err
		}
	}
	var hc [2]int32
	if err := r.s.CopyDtoH(bytesOf(hc[:]), counter); err != nil {
		return 0, nil, err
	}
	if err := r.s.Synchronize(); err != nil {
		return 0, nil, err
	}
	if hc[1] != 0 {
		return 0, nil, fmt.Errorf("group table of %d slots filled up", capSlots)
	}
	groups := make([]int64, hc[0])
	if err := r.s.CopyDtoH(bytesOf(groups), gkeys); err != nil {
		return 0, nil, err
	}
	if err := r.s.Synchronize(); err != nil {
		return 0, nil, err
	}
	return gids, groups, nil
}

// decode turns the key's part of the packed group keys back into a column
// of the source column's type, for the groups in keep.
func (k *keyCode) decode(packed []int64, keep []int) (cpu.Vec, error) {
	mask := uint64(1)<<k.bits - 1
	code := func(g int) int64 { return int64((uint64(packed[g])>>k.shift)&mask) + k.lo }
	v := cpu.Vec{Type: k.src.Type, Scale: k.src.Scale}
	switch k.src.Type {
	case cpu.TInt64, cpu.TDecimal:
		v.I64 = make([]int64, len(keep))
		for j, g := range keep {
			v.I64[j] = code(g)
		}
	case cpu.TInt32, cpu.TDate:
		v.I32 = make([]int32, len(keep))
		for j, g := range keep {
			v.I32[j] = int32(code(g))
		}
	case cpu.TString:
		v.Off = make([]int32, 1, len(keep)+1)
		for _, g := range keep {
			c := uint64(code(g))
			for j := k.src.MaxLen - 1; j >= 0; j-- {
				b := byte(c >> (8 * j))
				if b == 0 {
					break
				}
				v.Str = append(v.Str, b-1)
			}
			v.Off = append(v.Off, int32(len(v.Str)))
		}
	default:
		return v, fmt.Errorf("key %s: cannot decode %s", k.name, k.src.Type)
	}
	return v, nil
}

// appendAggState appends aggregate a's partial-state columns to b
// (cpu.Aggregator's layout, a.PartialColumns): vals are its values per
// group (sums, minima or maxima of an argument of type typ and scale),
// counts the rows per group (count, and avg's count).
func appendAggState(b *cpu.Batch, a plan.Agg, typ cpu.Type, scale int8, vals, counts []int64) {
	names := a.PartialColumns()
	switch a.Fn {
	case plan.AggCount:
		b.Names = append(b.Names, names[0])
		b.Cols = append(b.Cols, cpu.Vec{Type: cpu.TInt64, I64: counts})
	case plan.AggSum, plan.AggAvg:
		v := cpu.Vec{Type: cpu.TInt64, I64: vals}
		if typ == cpu.TDecimal {
			v.Type, v.Scale = cpu.TDecimal, scale
		}
		b.Names = append(b.Names, names[0])
		b.Cols = append(b.Cols, v)
		if a.Fn == plan.AggAvg {
			b.Names = append(b.Names, names[1])
			b.Cols = append(b.Cols, cpu.Vec{Type: cpu.TInt64, I64: counts})
		}
	case plan.AggMin, plan.AggMax:
		b.Names = append(b.Names, names[0])
		b.Cols = append(b.Cols, minMaxVec(typ, scale, vals))
	}
}

// minMaxVec is a minimum or maximum state column: the argument's type, from
// the int64 values the kernels fold.
func minMaxVec(typ cpu.Type, scale int8, vals []int64) cpu.Vec {
	v := cpu.Vec{Type: typ, Scale: scale}
	switch typ {
	case cpu.TInt32, cpu.TDate:
		v.I32 = make([]int32, len(vals))
		for j, x := range vals {
			v.I32[j] = int32(x)
		}
	default:
		v.I64 = vals
	}
	return v
}

// identities is ngroups x len(slots) accumulators at their kinds' identity
// (0 for sums, the int64 extremes for minima and maxima), room for extra
// values after them.
func identities(slots []fusedAgg, ngroups, extra int) []int64 {
	nagg := len(slots)
	out := make([]int64, ngroups*nagg+extra)
	for a, s := range slots {
		for g := 0; g < ngroups; g++ {
			switch s.kind {
			case plMin:
				out[g*nagg+a] = math.MaxInt64
			case plMax:
				out[g*nagg+a] = math.MinInt64
			}
		}
	}
	return out
}
