package gpu

import (
	"fmt"
	"math"
	"math/bits"
	"runtime"

	"gostachio/kernels/cpu"
	"gostachio/kernels/cuda"
	"gostachio/plan"
)

// Hash joins on the row path (join.cu): a scan pipeline's probe of a build
// side runs on the GPU, so the rows that come back to the host are already
// joined. The build side is the host's (the engine's build pipeline ran on
// the CPU kernels); BuildJoin copies its keys and the columns the join
// carries to the device once per build and device, and the row path probes
// it unit after unit:
//
//   - a semi or anti join sets the row flags, like a filter
//     (hj_probe_flags);
//   - an inner join first keeps only the rows that passed so far (the
//     columns gathered on the device), then counts each row's matches
//     (hj_probe_count), turns the counts into offsets (an exclusive scan),
//     writes the (probe row, build row) pairs (hj_probe_emit) and gathers
//     the probe columns by the first and the carried build columns by the
//     second. Rows keep the probe order; one probe row's matches follow the
//     device table, not the build order (the CPU engine's order where the
//     build's keys are unique, TPC-H's every inner join but Q9's).
//
// One integer key (int32, int64, date) per join; composite keys, string
// keys, cross and outer joins stay on the host (RowPrefix ends there).

// JoinTable is a hash join's build side in device memory: an open-addressing
// table of the build keys (2^bits slots, at least twice the rows) with each
// slot's build row, and the carried columns. Free returns its memory.
type JoinTable struct {
	tkeys, trows cuda.DevicePtr
	bits         int
	rows         int
	carry        *Batch // the carried columns (nil: none carried, or no rows)
	carryNames   []string
	carryCols    []Col // types and scales, also without rows
	arena        arena
}

// Rows is the build rows in the table.
func (t *JoinTable) Rows() int { return t.rows }

// Free returns the table's device memory to the pool; the caller must know
// that no queued work still reads it. A second call does nothing.
func (t *JoinTable) Free() {
	if t == nil {
		return
	}
	t.carry.Free()
	t.carry = nil
	t.arena.release()
}

// joinKeyEmpty is join.cu's GS_EMPTY_KEY, the free slot's key: no build or
// probe key may hold it.
const joinKeyEmpty = math.MinInt64

// BuildJoin puts build rows b (nil or empty: a build side with no rows,
// which a semi or inner join matches nothing against) into a device table
// keyed on column key, with the columns carry on stream s, and waits for it.
// The key must be an integer or date column holding no math.MinInt64; the
// carried columns must be of a type the row path uploads (integer, decimal,
// date, string).
func (d *Device) BuildJoin(s *cuda.Stream, b *cpu.Batch, key string, carry []string) (*JoinTable, error) {
	rows := 0
	if b != nil {
		rows = b.Rows
	}
	t := &JoinTable{rows: rows, carryNames: append([]string(nil), carry...), arena: arena{d: d}}
	fail := func(err error) (*JoinTable, error) {
		s.Synchronize()
		t.Free()
		return nil, fmt.Errorf("gpu: join build on %s: %w", key, err)
	}
	var keys []int64
	if rows > 0 {
		k := b.Col(key)
		if k < 0 {
			return fail(fmt.Errorf("the build side has no column %s", key))
		}
		var err error
		if keys, err = int64Keys(&b.Cols[k], rows); err != nil {
			return fail(fmt.Errorf("column %s: %w", key, err))
		}
	}
	// At least twice the rows: a probe's run of full slots stays short.
	t.bits = 1
	if rows > 0 {
		t.bits = max(bits.Len(uint(2*rows-1)), 1)
	}
	if rows > math.MaxInt32/4 {
		return fail(fmt.Errorf("%d build rows: more than the row path's int32 row numbers hold", rows))
	}
	slots := 1 << t.bits
	var err error
	if t.tkeys, err = t.arena.alloc(8 * slots); err != nil {
		return fail(err)
	}
	if t.trows, err = t.arena.alloc(4 * slots); err != nil {
		return fail(err)
	}
	if err := d.launch(s, "join", "key_fill_empty", slots, 0, t.tkeys, int32(slots)); err != nil {
		return fail(err)
	}
	if rows > 0 {
		dk, err := t.arena.alloc(8 * rows)
		if err != nil {
			return fail(err)
		}
		failed, err := t.arena.alloc(4)
		if err != nil {
			return fail(err)
		}
		if err := s.Memset8(failed, 0, 4); err != nil {
			return fail(err)
		}
		if err := s.CopyHtoD(dk, bytesOf(keys)); err != nil {
			return fail(err)
		}
		if err := d.launch(s, "join", "hj_build", rows, 0, dk, int32(rows), int32(0), t.tkeys, t.trows, int32(t.bits), failed); err != nil {
			return fail(err)
		}
		var f [1]int32
		if err := s.CopyDtoH(bytesOf(f[:]), failed); err != nil {
			return fail(err)
		}
		if err := s.Synchronize(); err != nil {
			return fail(err)
		}
		runtime.KeepAlive(keys)
		if f[0] != 0 {
			return fail(fmt.Errorf("the device table of %d slots filled up with %d rows", slots, rows))
		}
	}
	for _, name := range carry {
		var c Col
		if b != nil {
			k := b.Col(name)
			if k < 0 {
				return fail(fmt.Errorf("the build side has no column %s to carry", name))
			}
			c.Type, c.Scale = b.Cols[k].Type, b.Cols[k].Scale
		}
		t.carryCols = append(t.carryCols, c)
	}
	if rows > 0 && len(carry) > 0 {
		sub := &cpu.Batch{Names: t.carryNames, Cols: make([]cpu.Vec, len(carry)), Rows: rows}
		for i, name := range carry {
			sub.Cols[i] = b.Cols[b.Col(name)]
		}
		var err error
		if t.carry, err = d.Upload(s, []*cpu.Batch{sub}); err != nil {
			return fail(err)
		}
		for i, name := range carry {
			t.carryCols[i], _ = t.carry.col(name)
		}
	}
	if err := s.Synchronize(); err != nil {
		return fail(err)
	}
	return t, nil
}

// int64Keys is an integer or date key column's first n values as int64.
func int64Keys(v *cpu.Vec, n int) ([]int64, error) {
	out := make([]int64, n)
	switch v.Type {
	case cpu.TInt64:
		copy(out, v.I64[:n])
	case cpu.TInt32, cpu.TDate:
		for i, x := range v.I32[:n] {
			out[i] = int64(x)
		}
	default:
		return nil, fmt.Errorf("a %s key: the GPU joins integer keys only", v.Type)
	}
	for _, x := range out {
		if x == joinKeyEmpty {
			return nil, fmt.Errorf("key %d is the device table's free-slot marker", x)
		}
	}
	return out, nil
}

// JoinSource returns the device build side of probe op (its Build
// pipeline's table on the caller's device), built on the stream the row
// path runs on.
type JoinSource func(op *plan.Op) (*JoinTable, error)

// joinSupported: a join the row path probes on the device (one key; inner,
// semi or anti).
func joinSupported(op *plan.Op) error {
	j, ok := op.Expr.(plan.Join)
	if !ok {
		return unsupported(op, "without a join")
	}
	switch j.Kind {
	case plan.JoinInner, plan.JoinSemi, plan.JoinAnti:
	default:
		return fmt.Errorf("%s %q: a %s join is not on the GPU row path yet", op.Kind, op.Label, j.Kind)
	}
	if len(op.Keys) != 1 {
		return fmt.Errorf("%s %q: %d keys: the GPU row path joins on one key", op.Kind, op.Label, len(op.Keys))
	}
	return nil
}

// probe joins the run's rows with t (op's build side): a semi or anti join
// ands the match into *flags; an inner join keeps the passing rows, pairs
// them with their matches and appends the carried columns to names.
func (r *run) probe(op *plan.Op, t *JoinTable, flags *cuda.DevicePtr, names []string) ([]string, error) {
	if err := joinSupported(op); err != nil {
		return nil, err
	}
	j := op.Expr.(plan.Join)
	if j.Kind == plan.JoinInner {
		if err := r.keepSelected(flags); err != nil {
			return nil, err
		}
	}
	keys, err := r.joinKeys(op.Keys[0])
	if err != nil {
		return nil, err
	}
	n := int32(r.n)
	switch j.Kind {
	case plan.JoinSemi, plan.JoinAnti:
		if r.n == 0 {
			return names, nil
		}
		mode := modeAnd
		if *flags == 0 {
			if *flags, err = r.scratch(r.n, 1); err != nil {
				return nil, err
			}
			mode = modeSet
		}
		anti := int32(0)
		if j.Kind == plan.JoinAnti {
			anti = 1
		}
		return names, r.launch("join", "hj_probe_flags", 0, keys, n, t.tkeys, int32(t.bits), anti, *flags, mode)
	}
	// Inner: count, offsets, pairs, gathers.
	m := 0
	var pairsProbe, pairsBuild cuda.DevicePtr
	if r.n > 0 {
		counts, err := r.scratch(r.n, 4)
		if err != nil {
			return nil, err
		}
		if err := r.launch("join", "hj_probe_count", 0, keys, n, t.tkeys, int32(t.bits), int32(0), counts); err != nil {
			return nil, err
		}
		offsets, total, err := r.exclusiveScan(counts, r.n)
		if err != nil {
			return nil, err
		}
		if total > maxRowsBatch {
			return nil, fmt.Errorf("%s %q: %d joined rows in one unit: the row path selects at most %d (a smaller --chunk)", op.Kind, op.Label, total, maxRowsBatch)
		}
		m = total
		if pairsProbe, err = r.arena.alloc(4 * max(m, 1)); err != nil {
			return nil, err
		}
		if pairsBuild, err = r.arena.alloc(4 * max(m, 1)); err != nil {
			return nil, err
		}
		if m > 0 {
			if err := r.launch("join", "hj_probe_emit", 0, keys, n, t.tkeys, t.trows, int32(t.bits), offsets, int32(0), pairsProbe, pairsBuild); err != nil {
				return nil, err
			}
		}
	}
	next := make(map[string]Col, len(r.cols)+len(t.carryNames))
	for name, c := range r.cols {
		if next[name], err = r.gatherOnDevice(c, pairsProbe, m); err != nil {
			return nil, fmt.Errorf("%s %q: column %s: %w", op.Kind, op.Label, name, err)
		}
	}
	for i, name := range t.carryNames {
		if _, dup := next[name]; dup {
			return nil, fmt.Errorf("%s %q: carried column %s is a probe column too", op.Kind, op.Label, name)
		}
		if next[name], err = r.gatherOnDevice(t.carryCols[i], pairsBuild, m); err != nil {
			return nil, fmt.Errorf("%s %q: carried column %s: %w", op.Kind, op.Label, name, err)
		}
		names = append(names, name)
	}
	r.cols, r.memo, r.n = next, nil, m
	return names, nil
}

// keepSelected replaces the run's columns by their rows *flags sets (in
// order) and clears *flags; without flags it does nothing.
func (r *run) keepSelected(flags *cuda.DevicePtr) error {
	if *flags == 0 {
		return nil
	}
	sel, m := cuda.DevicePtr(0), 0
	if r.n > 0 {
		var err error
		if sel, m, err = r.selection(*flags); err != nil {
			return err
		}
	}
	next := make(map[string]Col, len(r.cols))
	for name, c := range r.cols {
		g, err := r.gatherOnDevice(c, sel, m)
		if err != nil {
			return fmt.Errorf("column %s: %w", name, err)
		}
		next[name] = g
	}
	r.cols, r.memo, r.n, *flags = next, nil, m, 0
	return nil
}

// joinKeys is key column name as int64 values on the device (int32 and
// date columns widened by key_pack).
func (r *run) joinKeys(name string) (cuda.DevicePtr, error) {
	c, ok := r.cols[name]
	if !ok {
		return 0, fmt.Errorf("no key column %s", name)
	}
	switch c.Type {
	case cpu.TInt64:
		return c.Data, nil
	case cpu.TInt32, cpu.TDate:
		out, err := r.arena.alloc(8 * max(r.n, 1))
		if err != nil {
			return 0, err
		}
		if r.n > 0 {
			if err := r.launch("join", "key_pack", 0, cuda.DevicePtr(0), c.Data, int32(1), int32(r.n), int64(0), int32(0), int32(1), out); err != nil {
				return 0, err
			}
		}
		return out, nil
	}
	return 0, fmt.Errorf("key column %s is %s: the GPU joins integer keys only", name, c.Type)
}

// exclusiveScan returns the exclusive prefix sums of in[0..n) as n+1
// offsets on the device (the last is the total) and the total
// (select.cu's scan_reduce, scan_small, scan_apply). n > 0.
func (r *run) exclusiveScan(in cuda.DevicePtr, n int) (cuda.DevicePtr, int, error) {
	tiles := (n + selTile - 1) / selTile
	if tiles > maxSelTiles {
		return 0, 0, fmt.Errorf("%d values: more than one scan handles", n)
	}
	sums, err := r.scratch(tiles, 4)
	if err != nil {
		return 0, 0, err
	}
	out, err := r.scratch(n+1, 4)
	if err != nil {
		return 0, 0, err
	}
	if err := r.launchGrid("select", "scan_reduce", tiles, selBlock, in, int32(n), sums); err != nil {
		return 0, 0, err
	}
	if err := r.launchGrid("select", "scan_small", 1, scanBlock, sums, int32(tiles), sums, out.Add(4*n)); err != nil {
		return 0, 0, err
	}
	if err := r.launchGrid("select", "scan_apply", tiles, selBlock, in, int32(n), sums, out); err != nil {
		return 0, 0, err
	}
	var total [1]int32
	if err := r.s.CopyDtoH(bytesOf(total[:]), out.Add(4*n)); err != nil {
		return 0, 0, err
	}
	if err := r.s.Synchronize(); err != nil {
		return 0, 0, err
	}
	if total[0] < 0 {
		return 0, 0, fmt.Errorf("the scan's total overflowed int32")
	}
	return out, int(total[0]), nil
}

// gatherOnDevice is column c's values at idx[0..m) as a new device column
// (a negative index gives the zero value). Ranges and string lengths stay
// c's: they bound any subset of its values.
func (r *run) gatherOnDevice(c Col, idx cuda.DevicePtr, m int) (Col, error) {
	out := c
	out.Data, out.Off = 0, 0
	switch c.Type {
	case cpu.TInt64, cpu.TDecimal, cpu.TInt32, cpu.TDate:
		size, kernel := 8, "gather_i64"
		if c.Type == cpu.TInt32 || c.Type == cpu.TDate {
			size, kernel = 4, "gather_i32"
		}
		p, err := r.arena.alloc(size * max(m, 1))
		if err != nil {
			return out, err
		}
		out.Data = p
		if m > 0 {
			r.launches++
			return out, r.d.launch(r.s, "select", kernel, m, 0, c.Data, idx, int32(m), p)
		}
		return out, nil
	case cpu.TString:
		if m == 0 {
			var err error
			if out.Off, err = r.scratch(1, 4); err != nil {
				return out, err
			}
			out.Data, err = r.arena.alloc(1)
			return out, err
		}
		lens, err := r.arena.alloc(4 * m)
		if err != nil {
			return out, err
		}
		r.launches++
		if err := r.d.launch(r.s, "select", "gather_str_len", m, 0, c.Off, idx, int32(m), lens); err != nil {
			return out, err
		}
		offs, total, err := r.exclusiveScan(lens, m)
		if err != nil {
			return out, err
		}
		out.Off = offs
		if out.Data, err = r.arena.alloc(max(total, 1)); err != nil {
			return out, err
		}
		r.launches++
		return out, r.d.launch(r.s, "select", "gather_str_bytes", m, 0, c.Off, c.Data, idx, int32(m), offs, out.Data)
	}
	return out, fmt.Errorf("a %s column is not on the GPU row path", c.Type)
}
