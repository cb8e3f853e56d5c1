package cpu

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"gostachio/plan"
)

// Sort returns b's rows ordered by keys (column, descending), ties broken
// by the next key, then by input order (stable). limit > 0 keeps only the
// first limit rows (a bounded heap when limit is small against b.Rows);
// limit <= 0 keeps all. Strings compare bytewise, decimals by their units
// (a column has one scale), dates and integers by value, floats by value
// (-0 = +0; NaN's place is unspecified), false before true. The output is
// newly allocated. Errors: an unknown column, a column of invalid type or
// of the wrong length.
//
// Method: the leading keys are encoded, row by row, into one
// order-preserving uint64 (each key's range shifted to 0 and packed while
// the bits last; strings by the 7 bytes after the prefix all values share,
// which ends the packing unless they hold the whole rest). If that covers every key, a stable LSD
// radix sort finishes the job; otherwise a comparison sort compares the
// packed words first and the remaining keys only on ties.
func Sort(b *Batch, keys []plan.SortKey, limit int) (*Batch, error) {
	if b == nil {
		return nil, fmt.Errorf("cpu: Sort of a nil batch")
	}
	n := b.Rows
	if n >= math.MaxInt32 {
		return nil, fmt.Errorf("cpu: Sort: %d rows is over the int32 row index", n)
	}
	cols := make([]*Vec, len(keys))
	for i, k := range keys {
		c := b.Col(k.Col)
		if c < 0 {
			_, err := b.Column(k.Col)
			return nil, fmt.Errorf("cpu: sort key: %w", err)
		}
		if err := htCheckKey(b, c, "sort key"); err != nil {
			return nil, err
		}
		cols[i] = &b.Cols[c]
	}
	k := n
	if limit > 0 && limit < n {
		k = limit
	}
	if n == 0 || len(keys) == 0 {
		return Gather(b, srtIota(k)), nil
	}
	c := srtPrepare(cols, keys, n)
	var perm []int32
	switch {
	case k < n && k <= n/8:
		perm = c.topK(n, k)
	case len(c.rest) == 0:
		perm = srtRadix(c.pre, c.bits)[:k]
	default:
		perm = srtIota(n)
		slices.SortFunc(perm, c.cmp)
		perm = perm[:k]
	}
	return Gather(b, perm), nil
}

func srtIota(n int) []int32 {
	p := make([]int32, n)
	for i := range p {
		p[i] = int32(i)
	}
	return p
}

// srtCmp orders rows: the packed words pre, then the keys rest, then the
// row index (which makes any sort stable).
type srtCmp struct {
	pre  []uint64 // nil: no key packed
	bits int      // significant bits of pre
	rest []srtKey
}

type srtKey struct {
	v    *Vec
	desc bool
}

// srtPrepare packs the leading keys into pre.
func srtPrepare(cols []*Vec, keys []plan.SortKey, n int) *srtCmp {
	c := &srtCmp{}
	tmp := make([]uint64, n)
	i := 0
	for ; i < len(cols); i++ {
		exact := srtEncode(cols[i], keys[i].Desc, tmp)
		lo, hi := tmp[0], tmp[0]
		for _, x := range tmp {
			lo = min(lo, x)
			hi = max(hi, x)
		}
		w := bits.Len64(hi - lo)
		if c.bits+w > 64 {
			break
		}
		if c.pre == nil {
			c.pre = make([]uint64, n)
		}
		if w > 0 {
			for j, x := range tmp {
				c.pre[j] = c.pre[j]<<w | (x - lo)
			}
		}
		c.bits += w
		if !exact {
			break // a prefix: the column itself stays in rest
		}
	}
	for ; i < len(cols); i++ {
		c.rest = append(c.rest, srtKey{v: cols[i], desc: keys[i].Desc})
	}
	return c
}

// srtEncode writes an order-preserving uint64 image of each value of v
// into dst and reports whether it is exact (equal images: equal values).
// Strings drop the prefix all values share; if the rest is at most 7 bytes
// the image is exact: the bytes, zero-padded to the longest, then the
// length in 3 bits. Otherwise it keeps 7 bytes and min(len, 7): still
// order-preserving (the images of a < b are <=).
func srtEncode(v *Vec, desc bool, dst []uint64) bool {
	const sign = 1 << 63
	n := len(dst)
	exact := true
	switch v.Type {
	case TInt64, TDecimal:
		for i, x := range v.I64[:n] {
			dst[i] = uint64(x) ^ sign
		}
	case TInt32, TDate:
		for i, x := range v.I32[:n] {
			dst[i] = uint64(int64(x)) ^ sign
		}
	case TFloat64:
		for i, x := range v.F64[:n] {
			if x == 0 {
				x = 0
			}
			u := math.Float64bits(x)
			if u&sign != 0 {
				u = ^u
			} else {
				u |= sign
			}
			dst[i] = u
		}
	case TBool:
		for i, x := range v.B[:n] {
			dst[i] = 0
			if x {
				dst[i] = 1
			}
		}
	case TString:
		off, str := v.Off[:n+1], v.Str
		// Skip the prefix every value shares ("Customer#000..."): only
		// the bytes after it can order the column.
		first := str[off[0]:off[1]]
		cp := len(first)
		for i := 1; i < n && cp > 0; i++ {
			s := str[off[i]:off[i+1]]
			cp = min(cp, len(s))
			for j := range cp {
				if s[j] != first[j] {
					cp = j
					break
				}
			}
		}
		width := 0
		for i := range n {
			width = max(width, int(off[i+1]-off[i])-cp)
		}
		if width > 7 {
			width, exact = 7, false
		}
		for i := range n {
			s := str[int(off[i])+cp : off[i+1]]
			if len(s) > width {
				s = s[:width]
			}
			var u uint64
			for _, ch := range s {
				u = u<<8 | uint64(ch)
			}
			u <<= 8 * uint(width-len(s))
			dst[i] = u<<3 | uint64(len(s))
		}
	}
	if desc {
		for i := range dst {
			dst[i] = ^dst[i]
		}
	}
	return exact
}

func (c *srtCmp) cmp(a, b int32) int {
	if c.pre != nil {
		if x, y := c.pre[a], c.pre[b]; x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	for i := range c.rest {
		k := &c.rest[i]
		if r := srtCompare(k.v, int(a), int(b)); r != 0 {
			if k.desc {
				return -r
			}
			return r
		}
	}
	return cmp.Compare(a, b)
}

func srtCompare(v *Vec, a, b int) int {
	switch v.Type {
	case TInt64, TDecimal:
		return cmp.Compare(v.I64[a], v.I64[b])
	case TInt32, TDate:
		return cmp.Compare(v.I32[a], v.I32[b])
	case TFloat64:
		return cmp.Compare(v.F64[a], v.F64[b])
	case TString:
		return bytes.Compare(v.StrAt(a), v.StrAt(b))
	case TBool:
		x, y := 0, 0
		if v.B[a] {
			x = 1
		}
		if v.B[b] {
			y = 1
		}
		return x - y
	}
	return 0
}

// srtRadix returns the row order of a stable LSD radix sort of keys (of
// nbits significant bits), one byte per pass, skipping passes whose byte
// is the same in every key. It reorders keys.
func srtRadix(keys []uint64, nbits int) []int32 {
	n := len(keys)
	idx := srtIota(n)
	if nbits == 0 || n < 2 {
		return idx
	}
	k2 := make([]uint64, n)
	i2 := make([]int32, n)
	for shift := 0; shift < nbits; shift += 8 {
		var cnt [256]int
		for _, k := range keys {
			cnt[byte(k>>shift)]++
		}
		if cnt[byte(keys[0]>>shift)] == n {
			continue
		}
		sum := 0
		for d, x := range cnt {
			cnt[d] = sum
			sum += x
		}
		for j, k := range keys {
			d := byte(k >> shift)
			p := cnt[d]
			k2[p], i2[p] = k, idx[j]
			cnt[d] = p + 1
		}
		keys, k2 = k2, keys
		idx, i2 = i2, idx
	}
	return idx
}

// topK returns the first k rows in c's order: a max-heap of the best k so
// far (the worst at the root, so most rows are rejected by one compare),
// sorted at the end.
func (c *srtCmp) topK(n, k int) []int32 {
	h := make([]int32, 0, k)
	for i := range int32(n) {
		if len(h) < k {
			h = append(h, i)
			for j := len(h) - 1; j > 0; {
				p := (j - 1) / 2
				if c.cmp(h[p], h[j]) >= 0 {
					break
				}
				h[p], h[j] = h[j], h[p]
				j = p
			}
			continue
		}
		if c.cmp(i, h[0]) >= 0 {
			continue
		}
		h[0] = i
		for j := 0; ; {
			l, r, m := 2*j+1, 2*j+2, j
			if l < k && c.cmp(h[l], h[m]) > 0 {
				m = l
			}
			if r < k && c.cmp(h[r], h[m]) > 0 {
				m = r
			}
			if m == j {
				break
			}
			h[j], h[m] = h[m], h[j]
			j = m
		}
	}
	slices.SortFunc(h, c.cmp)
	return h
}
