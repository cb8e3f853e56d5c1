package gpu

import (
	"fmt"

	"gostachio/kernels/cpu"
	"gostachio/kernels/cuda"
	"gostachio/plan"
)

// The row path: a scan pipeline's leading scan, filters and projections
// run on the GPU (operator at a time, select.cu and arith.cu), and the
// rows that pass come back as a host batch, for the host to run the rest
// of the pipeline (its probes and exchange) as the CPU engine does. This
// is what a hybrid GPU run does with a pipeline whose sink the GPU path
// does not have (engine.PlaceGPU).

// Selection tiles of select.cu's sel_count and sel_write (SEL_BLOCK x
// SEL_ITEMS rows; SEL_BLOCK threads a block) and scan_small's block.
const (
	selBlock     = 256
	selTile      = selBlock * 8
	scanBlock    = 1024
	maxSelTiles  = 1 << 20 // scan_small runs one block: keep its loop short
	maxRowsBatch = maxSelTiles * selTile
)

// RowPrefix returns how many leading ops of a scan pipeline the row path
// runs: the scan, then filters, projections and hash probes whose
// expressions and joins it evaluates (join.go: inner, semi and anti joins
// on one key), up to the first op it does not run (an exchange, an
// aggregate...). It is 0 unless that prefix holds a filter or a probe:
// without one the GPU would only copy the columns there and back. why says what ends
// the prefix (or why it is 0).
func RowPrefix(ops []plan.Op) (n int, why string) {
	filter := false
	for i := range ops {
		op := &ops[i]
		switch op.Kind {
		case plan.OpScan:
			if i == 0 {
				continue
			}
		case plan.OpFilter:
			if err := predicateSupported(op.Expr, true); err != nil {
				return prefixIf(filter, i), fmt.Sprintf("%s %q: %v", op.Kind, op.Label, err)
			}
			filter = true
			continue
		case plan.OpProject:
			if err := projectionSupported(op); err != nil {
				return prefixIf(filter, i), err.Error()
			}
			continue
		case plan.OpHashProbe:
			// A probe drops rows as a filter does (join.go).
			if err := joinSupported(op); err != nil {
				return prefixIf(filter, i), err.Error()
			}
			filter = true
			continue
		}
		return prefixIf(filter, i), fmt.Sprintf("operator %s %q: not on the GPU path yet", op.Kind, op.Label)
	}
	return prefixIf(filter, len(ops)), ""
}

func prefixIf(filter bool, n int) int {
	if !filter {
		return 0
	}
	return n
}

// projectionSupported: a projection list whose every expression the GPU
// path evaluates (values, not literals alone).
func projectionSupported(op *plan.Op) error {
	proj, ok := op.Expr.(plan.Projection)
	if !ok {
		return unsupported(op, "without a projection list")
	}
	for _, n := range proj {
		if _, lit := n.E.(plan.Lit); lit {
			return fmt.Errorf("%s %q: %s: a literal column is not on the GPU path yet", op.Kind, op.Label, n.Name)
		}
		if err := valueSupported(n.E); err != nil {
			return fmt.Errorf("%s %q: %s: %w", op.Kind, op.Label, n.Name, err)
		}
	}
	return nil
}

// Rows runs ops (a RowPrefix: the scan, filters, projections and probes)
// over in on stream s and returns the rows that pass, with the columns the last
// op leaves (the scan's, or the last projection's, in their order), as a
// host batch the caller owns. in stays the caller's (free it after Rows
// returns: Rows synchronizes s). The selected rows keep their order.
// Arithmetic overflow in any row, selected or not, is an error, as in
// Partial. An op outside the row path is an error naming it. joins gives
// each probe's build side on the device (built on s, or synchronized
// before); it may be nil when ops hold no probe.
func (d *Device) Rows(s *cuda.Stream, in *Batch, ops []plan.Op, joins JoinSource) (*cpu.Batch, Stats, error) {
	st := Stats{Rows: in.Rows}
	if in.Rows > maxRowsBatch {
		return nil, st, fmt.Errorf("gpu: %d rows in one unit: the row path selects at most %d (a smaller --chunk)", in.Rows, maxRowsBatch)
	}
	r, err := d.newRun(s, in)
	defer r.close()
	if err != nil {
		return nil, st, err
	}
	names := append([]string(nil), in.Names...)
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
			if names, err = r.project(op); err != nil {
				return nil, st, err
			}
		case plan.OpHashProbe:
			if joins == nil {
				return nil, st, fmt.Errorf("%s %q: no build side given", op.Kind, op.Label)
			}
			t, err := joins(op)
			if err != nil {
				return nil, st, fmt.Errorf("%s %q: %w", op.Kind, op.Label, err)
			}
			if t.Rows() == 0 && op.Expr.(plan.Join).Kind == plan.JoinInner {
				// Nothing to join: no rows, as the CPU engine's probe
				// of a device with nothing built gives.
				st.Launches = r.launches
				return nil, st, r.checkOverflow()
			}
			if names, err = r.probe(op, t, &flags, names); err != nil {
				return nil, st, err
			}
		default:
			return nil, st, fmt.Errorf("%s %q: not on the GPU row path", op.Kind, op.Label)
		}
	}
	out, err := r.gatherRows(names, flags)
	st.Launches = r.launches
	return out, st, err
}

// filter ands filter op's predicate into *flags (made, and set by this
// first filter, where *flags is 0); over no rows it does nothing.
func (r *run) filter(op *plan.Op, flags *cuda.DevicePtr) error {
	if r.n == 0 {
		return nil
	}
	mode := modeAnd
	if *flags == 0 {
		f, err := r.scratch(r.n, 1)
		if err != nil {
			return err
		}
		*flags, mode = f, modeSet
	}
	if err := r.pred(op.Expr, *flags, mode); err != nil {
		return fmt.Errorf("%s %q: %w", op.Kind, op.Label, err)
	}
	return nil
}

// project replaces the run's columns by projection op's and returns their
// names in the projection's order.
func (r *run) project(op *plan.Op) ([]string, error) {
	proj, ok := op.Expr.(plan.Projection)
	if !ok {
		return nil, unsupported(op, "without a projection list")
	}
	next := map[string]Col{}
	names := make([]string, 0, len(proj))
	for _, ne := range proj {
		v, err := r.eval(ne.E)
		if err != nil {
			return nil, fmt.Errorf("%s %q: %s: %w", op.Kind, op.Label, ne.Name, err)
		}
		if v.lit {
			return nil, fmt.Errorf("%s %q: %s: a literal column is not on the GPU path yet", op.Kind, op.Label, ne.Name)
		}
		next[ne.Name] = v.col
		names = append(names, ne.Name)
	}
	r.cols, r.memo = next, nil
	return names, nil
}

// launchGrid launches kernel name of module mod with grid x block threads.
func (r *run) launchGrid(mod, name string, grid, block int, args ...any) error {
	f, err := r.d.function(mod, name)
	if err != nil {
		return err
	}
	r.launches++
	return f.Launch(cuda.Dim3{X: uint32(max(grid, 1)), Y: 1, Z: 1}, cuda.Dim3{X: uint32(block), Y: 1, Z: 1}, 0, r.s, args...)
}

// selection returns the indices of the rows flags sets, in row order, and
// how many there are (select.cu: sel_count, scan_small, sel_write).
func (r *run) selection(flags cuda.DevicePtr) (cuda.DevicePtr, int, error) {
	n := int32(r.n)
	tiles := (r.n + selTile - 1) / selTile
	counts, err := r.scratch(tiles, 4)
	if err != nil {
		return 0, 0, err
	}
	total, err := r.scratch(1, 4)
	if err != nil {
		return 0, 0, err
	}
	sel, err := r.scratch(r.n, 4)
	if err != nil {
		return 0, 0, err
	}
	if err := r.launchGrid("select", "sel_count", tiles, selBlock, flags, n, counts); err != nil {
		return 0, 0, err
	}
	if err := r.launchGrid("select", "scan_small", 1, scanBlock, counts, int32(tiles), counts, total); err != nil {
		return 0, 0, err
	}
	if err := r.launchGrid("select", "sel_write", tiles, selBlock, flags, n, counts, sel); err != nil {
		return 0, 0, err
	}
	var m [1]int32
	if err := r.s.CopyDtoH(bytesOf(m[:]), total); err != nil {
		return 0, 0, err
	}
	if err := r.s.Synchronize(); err != nil {
		return 0, 0, err
	}
	return sel, int(m[0]), nil
}

// gatherRows gathers columns names at the rows flags sets (every row when
// flags is 0) on the device and copies them to a host batch.
func (r *run) gatherRows(names []string, flags cuda.DevicePtr) (*cpu.Batch, error) {
	if err := r.checkOverflow(); err != nil {
		return nil, err
	}
	m := r.n
	var sel cuda.DevicePtr
	if flags != 0 && r.n > 0 {
		var err error
		if sel, m, err = r.selection(flags); err != nil {
			return nil, err
		}
	}
	out := &cpu.Batch{Names: append([]string(nil), names...), Cols: make([]cpu.Vec, len(names)), Rows: m}
	for k, name := range names {
		c, ok := r.cols[name]
		if !ok {
			return nil, fmt.Errorf("no column %s", name)
		}
		v, err := r.gatherCol(c, sel, m)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", name, err)
		}
		out.Cols[k] = v
	}
	if err := r.s.Synchronize(); err != nil {
		return nil, err
	}
	return out, nil
}

// gatherCol copies column c's values at sel[0..m) (all r.n values when
// sel is 0) to host memory. The copies into Go memory return when done.
func (r *run) gatherCol(c Col, sel cuda.DevicePtr, m int) (cpu.Vec, error) {
	v := cpu.Vec{Type: c.Type, Scale: c.Scale}
	switch c.Type {
	case cpu.TInt64, cpu.TDecimal:
		v.I64 = make([]int64, m)
		src, err := r.gathered(c.Data, sel, m, 8, "gather_i64")
		if err != nil {
			return v, err
		}
		return v, r.s.CopyDtoH(bytesOf(v.I64), src)
	case cpu.TInt32, cpu.TDate:
		v.I32 = make([]int32, m)
		src, err := r.gathered(c.Data, sel, m, 4, "gather_i32")
		if err != nil {
			return v, err
		}
		return v, r.s.CopyDtoH(bytesOf(v.I32), src)
	case cpu.TString:
		return r.gatherStrings(c, sel, m)
	}
	return v, fmt.Errorf("a %s column is not on the GPU row path", c.Type)
}

// gathered is data gathered at sel (data itself without a selection).
func (r *run) gathered(data, sel cuda.DevicePtr, m, size int, kernel string) (cuda.DevicePtr, error) {
	if sel == 0 || m == 0 {
		return data, nil
	}
	dst, err := r.arena.alloc(m * size)
	if err != nil {
		return 0, err
	}
	r.launches++
	return dst, r.d.launch(r.s, "select", kernel, m, 0, data, sel, int32(m), dst)
}

// gatherStrings gathers a string column: the selected values' lengths on
// the device, their offsets summed on the host, their bytes gathered on
// the device to those offsets; then offsets and bytes come back.
func (r *run) gatherStrings(c Col, sel cuda.DevicePtr, m int) (cpu.Vec, error) {
	v := cpu.Vec{Type: cpu.TString, Off: make([]int32, m+1)}
	if m == 0 {
		return v, nil
	}
	if sel == 0 {
		if err := r.s.CopyDtoH(bytesOf(v.Off), c.Off); err != nil {
			return v, err
		}
		if v.Off[0] != 0 {
			return v, fmt.Errorf("device offsets start at %d, not 0", v.Off[0])
		}
		v.Str = make([]byte, v.Off[m])
		return v, r.s.CopyDtoH(v.Str, c.Data)
	}
	lens, err := r.arena.alloc(4 * m)
	if err != nil {
		return v, err
	}
	r.launches++
	if err := r.d.launch(r.s, "select", "gather_str_len", m, 0, c.Off, sel, int32(m), lens); err != nil {
		return v, err
	}
	hl := make([]int32, m)
	if err := r.s.CopyDtoH(bytesOf(hl), lens); err != nil {
		return v, err
	}
	var total int64
	for i, l := range hl {
		total += int64(l)
		if total > 1<<31-1 {
			return v, fmt.Errorf("%d selected values hold more than 2 GiB", m)
		}
		v.Off[i+1] = int32(total)
	}
	offs, err := r.arena.alloc(4 * (m + 1))
	if err != nil {
		return v, err
	}
	if err := r.s.CopyHtoD(offs, bytesOf(v.Off)); err != nil {
		return v, err
	}
	v.Str = make([]byte, total)
	if total == 0 {
		return v, nil
	}
	data, err := r.arena.alloc(int(total))
	if err != nil {
		return v, err
	}
	r.launches++
	if err := r.d.launch(r.s, "select", "gather_str_bytes", m, 0, c.Off, c.Data, sel, int32(m), offs, data); err != nil {
		return v, err
	}
	return v, r.s.CopyDtoH(v.Str, data)
}
