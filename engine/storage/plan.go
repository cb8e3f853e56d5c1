package storage

import "slices"

// CombineOptions is the reader-combining policy knob: how the byte ranges of one request become
// device requests.
type CombineOptions struct {
	// Combine merges ranges of the same file that are adjacent or separated by at most MaxGap
	// bytes (after alignment) into one device request, as long as it stays ≤ MaxRequest.
	Combine bool
	// MaxGap is the largest hole read through (and thrown away) to merge two ranges.
	MaxGap int64
	// MaxRequest is the largest single device request; longer ranges are split into several.
	// Rounded down to a multiple of the alignment (and at least one alignment unit).
	MaxRequest int64
}

// span is one caller range as the planner sees it: key identifies the file (ranges of different
// keys never merge), align is the file's O_DIRECT alignment (a power of two).
type span struct {
	key    int
	align  int64
	off, n int64
}

// planIO is one device request: read Len bytes at file offset Off into the buffer at BufOff.
// Need is how many of those bytes are wanted by some caller range (a request past the end of
// the file may legitimately come back shorter, but not shorter than Need). Span names one of the
// caller ranges it serves (they all share its file).
type planIO struct {
	Span   int
	Off    int64
	Len    int64
	BufOff int64
	Need   int64
}

// bufSlice is where a caller range ends up in the buffer.
type bufSlice struct{ Off, Len int64 }

// plan is the result of planning one request.
type plan struct {
	IOs    []planIO
	Slices []bufSlice // one per span, in the caller's order
	Size   int64      // buffer bytes needed
}

func alignDown(x, a int64) int64 { return x &^ (a - 1) }
func alignUp(x, a int64) int64   { return (x + a - 1) &^ (a - 1) }

// makePlan groups spans into aligned extents (merging neighbours when opt.Combine), places the
// extents back to back in one buffer (each at an aligned buffer offset), and splits extents
// longer than opt.MaxRequest. Zero-length spans get an empty slice and no I/O. Spans must have
// off ≥ 0 and n ≥ 0 (the reader checks). p's slices are reused.
func makePlan(spans []span, opt CombineOptions, p *plan) {
	p.IOs = p.IOs[:0]
	p.Slices = slices.Grow(p.Slices[:0], len(spans))[:len(spans)]
	p.Size = 0
	order := make([]int, 0, len(spans))
	for i, s := range spans {
		if s.n > 0 {
			order = append(order, i)
		} else {
			p.Slices[i] = bufSlice{}
		}
	}
	if opt.Combine && len(order) > 1 {
		slices.SortStableFunc(order, func(a, b int) int {
			sa, sb := spans[a], spans[b]
			if sa.key != sb.key {
				return sa.key - sb.key
			}
			switch {
			case sa.off < sb.off:
				return -1
			case sa.off > sb.off:
				return 1
			}
			return 0
		})
	}
	for i := 0; i < len(order); {
		first := spans[order[i]]
		a := first.align
		maxReq := max(alignDown(opt.MaxRequest, a), a)
		start := alignDown(first.off, a)
		end := alignUp(first.off+first.n, a)
		need := first.off + first.n
		j := i + 1
		for opt.Combine && j < len(order) {
			s := spans[order[j]]
			if s.key != first.key {
				break
			}
			sEnd := alignUp(s.off+s.n, a)
			if alignDown(s.off, a) > end+opt.MaxGap || max(end, sEnd)-start > maxReq {
				break
			}
			end = max(end, sEnd)
			need = max(need, s.off+s.n)
			j++
		}
		base := alignUp(p.Size, a)
		for k := i; k < j; k++ {
			s := spans[order[k]]
			p.Slices[order[k]] = bufSlice{Off: base + s.off - start, Len: s.n}
		}
		for pos := start; pos < end; pos += maxReq {
			n := min(maxReq, end-pos)
			p.IOs = append(p.IOs, planIO{Span: order[i], Off: pos, Len: n, BufOff: base + pos - start, Need: min(max(need-pos, 0), n)})
		}
		p.Size = base + end - start
		i = j
	}
}
