package cpu

import (
	"bytes"
	"fmt"
	"math"
	"math/bits"

	"gostachio/internal/dirtmake"
	"gostachio/plan"
)

// HashTable is a hash table over the rows of one build batch on key
// columns: a power-of-two array of chain heads indexed by the hash's high
// bits, a next link per build row, and each row's full hash (compared
// before any key). Chains list rows in build order, so matches come out in
// build order. It holds only row indices: no per-row allocation. It is
// immutable after BuildHashTable and safe for concurrent Probe calls.
type HashTable struct {
	b      *Batch
	names  []string // build key names (for messages)
	keys   []int    // build key column indices; none: a cross-join table
	hashes []uint64 // per build row
	heads  []int32  // per bucket: first row, or -1
	next   []int32  // per row: next row of its bucket, or -1
	shift  uint     // bucket = hash >> shift

	// One integer-coded key (the common primary/foreign key join) takes
	// an open-addressing table of distinct keys instead of heads and
	// hashes: a slot holds the key next to its first build row, so a probe
	// usually reads one slot, and its key compare is exact; next then
	// links the rows of equal key, in build order.
	islots   []hjSlot // nil unless a single integer key
	unique   bool     // islots: no key repeats (next is all -1)
	distinct int      // islots: the distinct keys
}

// hjSlot is one distinct build key and its first row (-1: empty slot).
type hjSlot struct {
	key int64
	row int32
}

// Batch is the build rows the table indexes (the caller must not change
// them).
func (h *HashTable) Batch() *Batch { return h.b }

// BuildHashTable indexes b on the named key columns. Nil or empty keys
// make a cross-join table: every probe row matches every row of b. The
// table keeps b (no copy): b must not change while the table is in use.
// Errors: an unknown key column, a key column of invalid type or of the
// wrong length, a batch of 2^31 - 1 rows or more.
func BuildHashTable(b *Batch, keys []string) (*HashTable, error) {
	if b == nil {
		return nil, fmt.Errorf("cpu: BuildHashTable of a nil batch")
	}
	if b.Rows >= math.MaxInt32 {
		return nil, fmt.Errorf("cpu: BuildHashTable: %d rows is over the int32 row index", b.Rows)
	}
	h := &HashTable{b: b, names: append([]string(nil), keys...)}
	if len(keys) == 0 {
		return h, nil
	}
	h.keys = make([]int, len(keys))
	for i, k := range keys {
		c := b.Col(k)
		if c < 0 {
			_, err := b.Column(k)
			return nil, fmt.Errorf("cpu: hash build key: %w", err)
		}
		if err := htCheckKey(b, c, "hash build key"); err != nil {
			return nil, err
		}
		h.keys[i] = c
	}
	n := b.Rows
	if v := &b.Cols[h.keys[0]]; len(keys) == 1 && htIntCoded(v.Type) {
		if v.Type == TInt64 || v.Type == TDecimal {
			hjBuildInts(h, v.I64[:n])
		} else {
			hjBuildInts(h, v.I32[:n])
		}
		return h, nil
	}
	h.hashes = HashColumns(b, h.keys, nil)
	size, lg := 16, 4
	for size < 2*n {
		size <<= 1
		lg++
	}
	h.shift = uint(64 - lg)
	h.heads = make([]int32, size)
	for i := range h.heads {
		h.heads[i] = -1
	}
	h.next = make([]int32, n)
	// Insert back to front: pushing on the chain heads leaves each chain in
	// ascending row order.
	for r := n - 1; r >= 0; r-- {
		bkt := h.hashes[r] >> h.shift
		h.next[r] = h.heads[bkt]
		h.heads[bkt] = int32(r)
	}
	return h, nil
}

// Rows is the number of build rows.
func (h *HashTable) Rows() int { return h.b.Rows }

// Footprint is the bytes of the structures a lookup reads at random: for
// a single integer key its slots (16 bytes each) and, when keys repeat,
// the chain links (4 bytes a row); otherwise the bucket heads (4 bytes
// each) and the rows' hashes and links (12 bytes a row). The cost model
// prices probes and builds by it (costmodel.TableBytes).
func (h *HashTable) Footprint() int64 {
	if h.islots != nil {
		fp := int64(16 * len(h.islots))
		if !h.unique {
			fp += int64(4 * len(h.next))
		}
		return fp
	}
	return int64(4*len(h.heads) + 12*len(h.next))
}

// Keys is the number of distinct build keys of a single integer key
// column (the slots of the table), or Rows for other tables.
func (h *HashTable) Keys() int {
	if h.islots != nil {
		return h.distinct
	}
	return h.b.Rows
}

// Probe joins probe (on probeKeys: as many as the build keys, pairwise
// comparable) against the table:
//
//   - plan.JoinInner: for each probe row, one output row per matching
//     build row: all probe columns, then the build columns named in carry
//     (in carry order).
//   - plan.JoinSemi: each probe row with at least one match, once; probe
//     columns only (carry must be empty).
//   - plan.JoinAnti: each probe row without a match; probe columns only.
//   - plan.JoinLeftOuter: the inner rows plus, for each probe row without a
//     match, one row whose carry columns hold their type's zero value (0,
//     0.00, "", 1970-01-01, false).
//
// Rows come out in probe order, a probe row's matches in build order.
// Comparable keys: integer-coded types (int64, int32, date, decimal) with
// each other by int64 value, except that two decimals must share their
// scale and a decimal of nonzero scale does not compare with an integer;
// strings with strings (bytes); float64 with float64; bool with bool. A
// cross-join table (no build keys) takes no probe keys and matches every
// row. The output is newly allocated. Errors (no panics): an unknown
// column, a key count or type mismatch, carry columns with semi or anti,
// an output column name that would appear twice, an unknown kind.
func (h *HashTable) Probe(probe *Batch, probeKeys []string, kind plan.JoinKind, carry []string) (*Batch, error) {
	if probe == nil {
		return nil, fmt.Errorf("cpu: Probe of a nil batch")
	}
	switch kind {
	case plan.JoinInner, plan.JoinLeftOuter:
	case plan.JoinSemi, plan.JoinAnti:
		if len(carry) > 0 {
			return nil, fmt.Errorf("cpu: a %s join carries no build columns (asked for %v)", kind, carry)
		}
	default:
		return nil, fmt.Errorf("cpu: unknown join kind %s", kind)
	}
	if probe.Rows >= math.MaxInt32 {
		return nil, fmt.Errorf("cpu: Probe: %d rows is over the int32 row index", probe.Rows)
	}
	if len(probeKeys) != len(h.keys) {
		return nil, fmt.Errorf("cpu: probe keys %v do not match the %d build keys %v", probeKeys, len(h.keys), h.names)
	}
	pk := make([]int, len(probeKeys))
	for i, k := range probeKeys {
		c := probe.Col(k)
		if c < 0 {
			_, err := probe.Column(k)
			return nil, fmt.Errorf("cpu: probe key: %w", err)
		}
		if err := htCheckKey(probe, c, "probe key"); err != nil {
			return nil, err
		}
		if err := hjComparable(&probe.Cols[c], &h.b.Cols[h.keys[i]]); err != nil {
			return nil, fmt.Errorf("cpu: probe key %s vs build key %s: %w", k, h.names[i], err)
		}
		pk[i] = c
	}
	names := make([]string, 0, len(probe.Names)+len(carry))
	names = append(names, probe.Names...)
	cb := make([]int, len(carry))
	for i, name := range carry {
		c := h.b.Col(name)
		if c < 0 {
			_, err := h.b.Column(name)
			return nil, fmt.Errorf("cpu: carried build column: %w", err)
		}
		if n := h.b.Cols[c].Len(); n != h.b.Rows {
			return nil, fmt.Errorf("cpu: carried build column %s has %d values, batch %d rows", name, n, h.b.Rows)
		}
		cb[i] = c
		names = append(names, name)
	}
	seen := make(map[string]bool, len(names))
	for _, name := range names {
		if seen[name] {
			return nil, fmt.Errorf("cpu: %s join output would have column %s twice (rename one side)", kind, name)
		}
		seen[name] = true
	}
	for c := range probe.Cols {
		if n := probe.Cols[c].Len(); n != probe.Rows {
			return nil, fmt.Errorf("cpu: probe column %s has %d values, batch %d rows", probe.Names[c], n, probe.Rows)
		}
	}

	var ps, bs []int32 // output rows: probe row, build row (-1: zero values)
	switch kind {
	case plan.JoinInner, plan.JoinLeftOuter:
		switch {
		case h.keys == nil:
			ps, bs = h.hjCrossPairs(probe.Rows)
		case h.islots != nil:
			if v := &probe.Cols[pk[0]]; v.Type == TInt64 || v.Type == TDecimal {
				ps, bs = hjIntPairs(h, v.I64[:probe.Rows])
			} else {
				ps, bs = hjIntPairs(h, v.I32[:probe.Rows])
			}
		default:
			ps, bs = h.hjPairs(probe, pk)
		}
		if kind == plan.JoinLeftOuter {
			ps, bs = hjOuter(probe.Rows, ps, bs)
		}
	case plan.JoinSemi, plan.JoinAnti:
		want := kind == plan.JoinSemi
		if h.islots != nil {
			if v := &probe.Cols[pk[0]]; v.Type == TInt64 || v.Type == TDecimal {
				ps = hjIntSelect(h, v.I64[:probe.Rows], want)
			} else {
				ps = hjIntSelect(h, v.I32[:probe.Rows], want)
			}
			break
		}
		var matched []bool
		if h.keys == nil {
			matched = make([]bool, probe.Rows)
			if h.b.Rows > 0 {
				for i := range matched {
					matched[i] = true
				}
			}
		} else {
			matched = h.hjMatched(probe, pk)
		}
		ps = make([]int32, 0, probe.Rows)
		for i, m := range matched {
			if m == want {
				ps = append(ps, int32(i))
			}
		}
	}

	out := &Batch{Names: names, Cols: make([]Vec, 0, len(names)), Rows: len(ps)}
	for c := range probe.Cols {
		out.Cols = append(out.Cols, GatherVec(&probe.Cols[c], ps))
	}
	for _, c := range cb {
		if kind == plan.JoinLeftOuter {
			out.Cols = append(out.Cols, hjGatherOrZero(&h.b.Cols[c], bs))
		} else {
			out.Cols = append(out.Cols, GatherVec(&h.b.Cols[c], bs))
		}
	}
	return out, nil
}

// hjComparable checks that probe key p and build key b compare (see Probe).
func hjComparable(p, b *Vec) error {
	switch {
	case htIntCoded(p.Type) && htIntCoded(b.Type):
		pd, bd := p.Type == TDecimal, b.Type == TDecimal
		if pd && bd && p.Scale != b.Scale {
			return fmt.Errorf("decimal scales %d and %d differ", p.Scale, b.Scale)
		}
		if pd != bd && (pd && p.Scale != 0 || bd && b.Scale != 0) {
			return fmt.Errorf("%s does not compare with %s", gthTypeName(p), gthTypeName(b))
		}
		return nil
	case p.Type == b.Type && (p.Type == TString || p.Type == TFloat64 || p.Type == TBool):
		return nil
	}
	return fmt.Errorf("%s does not compare with %s", gthTypeName(p), gthTypeName(b))
}

// hjCrossPairs pairs every probe row with every build row.
func (h *HashTable) hjCrossPairs(n int) (ps, bs []int32) {
	m := h.b.Rows
	ps = make([]int32, 0, n*m)
	bs = make([]int32, 0, n*m)
	for i := range n {
		for r := range m {
			ps = append(ps, int32(i))
			bs = append(bs, int32(r))
		}
	}
	return ps, bs
}

// hjPairs returns the (probe row, build row) pairs with equal keys, in
// probe order and, per probe row, build order. Every build row of equal
// hash is a candidate; the keys of all candidates are then compared column
// by column in typed loops and the (rare) hash collisions dropped.
func (h *HashTable) hjPairs(probe *Batch, pk []int) (ps, bs []int32) {
	hs := HashColumns(probe, pk, nil)
	heads, next, hashes, shift := h.heads, h.next, h.hashes, h.shift
	ps = make([]int32, 0, len(hs))
	bs = make([]int32, 0, len(hs))
	for i, hv := range hs {
		for r := heads[hv>>shift]; r >= 0; r = next[r] {
			if hashes[r] == hv {
				ps = append(ps, int32(i))
				bs = append(bs, r)
			}
		}
	}
	if len(ps) == 0 {
		return ps, bs
	}
	bad := make([]bool, len(ps))
	anyBad := false
	for k, c := range pk {
		if hjMarkUnequal(&probe.Cols[c], &h.b.Cols[h.keys[k]], ps, bs, bad) {
			anyBad = true
		}
	}
	if !anyBad {
		return ps, bs
	}
	j := 0
	for i := range ps {
		if !bad[i] {
			ps[j], bs[j] = ps[i], bs[i]
			j++
		}
	}
	return ps[:j], bs[:j]
}

// hjMatched reports per probe row whether some build row has equal keys.
// Each row's first equal-hash candidate is verified in typed loops; only
// rows whose candidate was a hash collision walk the rest of their chain
// comparing key by key.
func (h *HashTable) hjMatched(probe *Batch, pk []int) []bool {
	hs := HashColumns(probe, pk, nil)
	heads, next, hashes, shift := h.heads, h.next, h.hashes, h.shift
	matched := make([]bool, len(hs))
	ps := make([]int32, 0, len(hs))
	bs := make([]int32, 0, len(hs))
	for i, hv := range hs {
		for r := heads[hv>>shift]; r >= 0; r = next[r] {
			if hashes[r] == hv {
				ps = append(ps, int32(i))
				bs = append(bs, r)
				break
			}
		}
	}
	bad := make([]bool, len(ps))
	for k, c := range pk {
		hjMarkUnequal(&probe.Cols[c], &h.b.Cols[h.keys[k]], ps, bs, bad)
	}
	for j, p := range ps {
		if !bad[j] {
			matched[p] = true
			continue
		}
		hv := hs[p]
		for r := next[bs[j]]; r >= 0; r = next[r] {
			if hashes[r] == hv && h.hjRowEqual(probe, pk, int(p), int(r)) {
				matched[p] = true
				break
			}
		}
	}
	return matched
}

// hjRowEqual compares the keys of probe row i and build row r.
func (h *HashTable) hjRowEqual(probe *Batch, pk []int, i, r int) bool {
	for k, c := range pk {
		p, b := &probe.Cols[c], &h.b.Cols[h.keys[k]]
		switch p.Type {
		case TString:
			if !bytes.Equal(p.StrAt(i), b.StrAt(r)) {
				return false
			}
		case TFloat64:
			if p.F64[i] != b.F64[r] {
				return false
			}
		case TBool:
			if p.B[i] != b.B[r] {
				return false
			}
		default:
			if p.Int(i) != b.Int(r) {
				return false
			}
		}
	}
	return true
}

// hjMarkUnequal sets bad[j] where probe value ps[j] of p differs from
// build value bs[j] of b (types checked by hjComparable) and reports
// whether it set any.
func hjMarkUnequal(p, b *Vec, ps, bs []int32, bad []bool) bool {
	switch p.Type {
	case TString:
		diff := false
		for j := range ps {
			if !bytes.Equal(p.StrAt(int(ps[j])), b.StrAt(int(bs[j]))) {
				bad[j], diff = true, true
			}
		}
		return diff
	case TFloat64:
		return hjNe(p.F64, b.F64, ps, bs, bad)
	case TBool:
		return hjNe(p.B, b.B, ps, bs, bad)
	}
	p64, b64 := p.Type == TInt64 || p.Type == TDecimal, b.Type == TInt64 || b.Type == TDecimal
	switch {
	case p64 && b64:
		return hjNe(p.I64, b.I64, ps, bs, bad)
	case !p64 && !b64:
		return hjNe(p.I32, b.I32, ps, bs, bad)
	case p64:
		return hjNeInts(p.I64, b.I32, ps, bs, bad)
	default:
		return hjNeInts(p.I32, b.I64, ps, bs, bad)
	}
}

func hjNe[T comparable](p, b []T, ps, bs []int32, bad []bool) bool {
	diff := false
	for j := range ps {
		if p[ps[j]] != b[bs[j]] {
			bad[j], diff = true, true
		}
	}
	return diff
}

func hjNeInts[P, B int32 | int64](p []P, b []B, ps, bs []int32, bad []bool) bool {
	diff := false
	for j := range ps {
		if int64(p[ps[j]]) != int64(b[bs[j]]) {
			bad[j], diff = true, true
		}
	}
	return diff
}

// hjOuter adds, to the inner pairs (sorted by probe row), a pair (i, -1)
// for each probe row i without a match, keeping probe order.
func hjOuter(n int, ps, bs []int32) ([]int32, []int32) {
	ops := make([]int32, 0, len(ps)+n/4)
	obs := make([]int32, 0, len(ps)+n/4)
	j := 0
	for i := range int32(n) {
		if j < len(ps) && ps[j] == i {
			for j < len(ps) && ps[j] == i {
				ops = append(ops, i)
				obs = append(obs, bs[j])
				j++
			}
			continue
		}
		ops = append(ops, i)
		obs = append(obs, -1)
	}
	return ops, obs
}

// hjGatherOrZero is GatherVec where a negative index yields the zero value.
func hjGatherOrZero(v *Vec, sel []int32) Vec {
	out := Vec{Type: v.Type, Scale: v.Scale}
	switch v.Type {
	case TInt64, TDecimal:
		out.I64 = hjFixedOrZero(v.I64, sel)
	case TInt32, TDate:
		out.I32 = hjFixedOrZero(v.I32, sel)
	case TFloat64:
		out.F64 = hjFixedOrZero(v.F64, sel)
	case TBool:
		out.B = hjFixedOrZero(v.B, sel)
	case TString:
		out.Off = make([]int32, len(sel)+1)
		var total int64
		for _, s := range sel {
			if s >= 0 {
				total += int64(v.Off[s+1] - v.Off[s])
			}
		}
		if total > math.MaxInt32 {
			panic(fmt.Sprintf("cpu: gathering %d string bytes overflows int32 offsets", total))
		}
		out.Str = make([]byte, total)
		var p int32
		for i, s := range sel {
			if s >= 0 {
				p += int32(copy(out.Str[p:], v.Str[v.Off[s]:v.Off[s+1]]))
			}
			out.Off[i+1] = p
		}
	}
	return out
}

func hjFixedOrZero[T any](src []T, sel []int32) []T {
	out := make([]T, len(sel))
	for i, s := range sel {
		if s >= 0 {
			out[i] = src[s]
		}
	}
	return out
}

// hjIntHash is the slot hash of an integer key (htInt, with the
// htTestCollide mask cm: ^0, or 3 in tests).
func hjIntHash(k int64, cm uint64) uint64 { return htInt(k) & cm }

// hjCollideMask is the mask hjIntHash applies.
func hjCollideMask() uint64 {
	if htTestCollide {
		return 3
	}
	return ^uint64(0)
}

// hjBuildInts indexes the single integer key column keys: islots holds
// each distinct key with its first row, next the later rows of that key.
// The slots are sized for the distinct keys (hjStartSlots), not the rows,
// and doubled whenever they would be more than half full: a build on a
// key that repeats (o_custkey: ~15 orders a customer, l_partkey: ~30
// lines a part) gets a table the size of its distinct keys, which the
// probes then find in cache, where one of 2x the rows was mostly empty
// slots.
func hjBuildInts[T int32 | int64](h *HashTable, keys []T) {
	n := len(keys)
	size := hjStartSlots(keys)
	slots := hjNewSlots(size)
	h.shift = uint(64 - bits.TrailingZeros(uint(size)))
	next := make([]int32, n)
	mask := uint64(size - 1)
	cm := hjCollideMask()
	dup := false
	distinct := 0
	// Back to front: pushing on a key's chain leaves it in row order.
	for r := n - 1; r >= 0; r-- {
		k := int64(keys[r])
		s := hjIntHash(k, cm) >> h.shift
		for {
			sl := &slots[s]
			if sl.row < 0 {
				sl.key, sl.row = k, int32(r)
				next[r] = -1
				if distinct++; 2*distinct > size {
					size *= 2
					slots = hjRehash(slots, size, cm)
					h.shift--
					mask = uint64(size - 1)
				}
				break
			}
			if sl.key == k {
				next[r] = sl.row
				sl.row = int32(r)
				dup = true
				break
			}
			s = (s + 1) & mask
		}
	}
	h.islots, h.next, h.unique, h.distinct = slots, next, !dup, distinct
}

// hjNewSlots is size empty slots.
func hjNewSlots(size int) []hjSlot {
	slots := make([]hjSlot, size)
	for i := range slots {
		slots[i].row = -1
	}
	return slots
}

// hjRehash moves the filled slots of old into size new ones (a power of
// two); chains (next) follow their head row unchanged.
func hjRehash(old []hjSlot, size int, cm uint64) []hjSlot {
	slots := hjNewSlots(size)
	shift := uint(64 - bits.TrailingZeros(uint(size)))
	mask := uint64(size - 1)
	for _, o := range old {
		if o.row < 0 {
			continue
		}
		s := hjIntHash(o.key, cm) >> shift
		for slots[s].row >= 0 {
			s = (s + 1) & mask
		}
		slots[s] = o
	}
	return slots
}

// hjSampleRows is how many keys hjStartSlots looks at.
const hjSampleRows = 4096

// hjStartSlots is the first slot count of a build on keys: a power of two
// of at least 16 and 2x the distinct keys, estimated from hjSampleRows
// keys taken at even strides, and no more than 2x the rows (what every
// build got before). Two estimates, the lower one taken: keys that repeat
// across the rows (o_custkey) show up as repeats in the sample, counted
// with Chao's bias-corrected estimator D = d + f1(f1 − 1) / (2(f2 + 1))
// for d distinct sampled keys, f1 of them seen once and f2 twice
// (Charikar et al.'s GEE, sqrt(n/m)·f1 + d − f1, gave 4.9 K for 2 K
// uniform keys in 200 K rows; Chao 2.0 K); keys stored in runs
// (l_orderkey, whose lines lie together), which the strides step over,
// show up as a sampled row whose next row has its key: with a share p of
// those, the runs are about n(1 − p). A table of 2x the rows for q4's
// late lines (2.5 a key) was mostly empty slots that the probes missed
// in cache. An under-estimate costs rehashes, not correctness.
func hjStartSlots[T int32 | int64](keys []T) int {
	n := len(keys)
	want := 2 * n
	if n > 4*hjSampleRows {
		m := hjSampleRows
		// An open-addressing count of the sampled keys (row: the count).
		seen := hjNewSlots(2 * m)
		shift := uint(64 - bits.TrailingZeros(uint(2*m)))
		mask := uint64(2*m - 1)
		cm := hjCollideMask()
		d, adjacent := 0, 0
		for i := 0; i < m; i++ {
			k := int64(keys[i*(n/m)])
			if int64(keys[i*(n/m)+1]) == k {
				adjacent++
			}
			s := hjIntHash(k, cm) >> shift
			for seen[s].row >= 0 && seen[s].key != k {
				s = (s + 1) & mask
			}
			if seen[s].row < 0 {
				seen[s].key, seen[s].row = k, 0
				d++
			}
			seen[s].row++
		}
		if d < m {
			var f1, f2 float64
			for _, sl := range seen {
				switch sl.row {
				case 1:
					f1++
				case 2:
					f2++
				}
			}
			est := float64(d) + f1*(f1-1)/(2*(f2+1))
			want = int(min(2*est, float64(want)))
		}
		if adjacent > 0 {
			runs := float64(n) * (1 - float64(adjacent)/float64(m))
			want = int(min(2*runs, float64(want)))
		}
	}
	size := 16
	for size < want {
		size <<= 1
	}
	return size
}

// hjIntFind returns the first build row of key k, or -1.
func hjIntFind(slots []hjSlot, k int64, shift uint, cm uint64) int32 {
	mask := uint64(len(slots) - 1)
	for s := hjIntHash(k, cm) >> shift; ; s = (s + 1) & mask {
		sl := &slots[s]
		if sl.row < 0 || sl.key == k {
			return sl.row
		}
	}
}

// hjProbeBlock is how many probe rows hjIntFirst advances together: enough
// independent lookups in flight to overlap the table's cache misses, few
// enough that the scratch of a block (12 bytes a row) stays in a core's
// cache and serves block after block. Scratch as long as the whole probe
// made the per-row cost grow with the probe: a 1.6 M-row probe (TPC-H Q3's
// lineitem at SF1, per device) allocated and zeroed 19 MB of it, on pages
// touched for the first time.
const hjProbeBlock = 4096

// hjIntFirst returns, per probe key, the first build row of that key or
// -1. Block by block (hjProbeBlock rows), it advances all rows' probe
// sequences a slot per pass, with no data-dependent branch, so that the
// cache misses of many rows overlap: the first pass reads every key's home
// slot, the next ones the next slot of the rows whose slot held another
// key (fewer each pass).
func hjIntFirst[T int32 | int64](h *HashTable, keys []T) []int32 {
	first := dirtmake.Slice[int32](len(keys)) // every row is written
	n := min(len(keys), hjProbeBlock)
	pend := make([]int32, n) // rows of the block still probing
	pos := make([]uint64, n) // their slot
	for lo := 0; lo < len(keys); lo += hjProbeBlock {
		hi := min(lo+hjProbeBlock, len(keys))
		hjIntFirstBlock(h, keys[lo:hi], first[lo:hi], pend, pos)
	}
	return first
}

// hjIntFirstBlock is hjIntFirst of keys into first, with scratch pend and
// pos at least len(keys) long.
func hjIntFirstBlock[T int32 | int64](h *HashTable, keys []T, first, pend []int32, pos []uint64) {
	slots, shift, cm := h.islots, h.shift, hjCollideMask()
	mask := uint64(len(slots) - 1)
	m := 0
	for i, x := range keys {
		k := int64(x)
		s := hjIntHash(k, cm) >> shift
		sl := slots[s&mask]
		r := int32(-2) // not decided: the slot holds another key
		if sl.key == k {
			r = sl.row
		}
		if sl.row < 0 {
			r = -1
		}
		first[i] = r
		pend[m], pos[m] = int32(i), s
		m += int((uint32(r+2) - 1) >> 31) // 1 iff r == -2
	}
	for m > 0 {
		pend, pos := pend[:m], pos[:m]
		m = 0
		for j, i := range pend {
			k := int64(keys[i])
			s := (pos[j] + 1) & mask
			sl := slots[s]
			r := int32(-2)
			if sl.key == k {
				r = sl.row
			}
			if sl.row < 0 {
				r = -1
			}
			first[i] = r
			pend[m], pos[m] = i, s
			m += int((uint32(r+2) - 1) >> 31) // 1 iff r == -2
		}
	}
}

// hjIntPairs is hjPairs for an integer key table: probe keys keys.
func hjIntPairs[T int32 | int64](h *HashTable, keys []T) (ps, bs []int32) {
	first := hjIntFirst(h, keys)
	if h.unique {
		// At most one match per row: write every row, keep the matches
		// (ps[:j] is all written, so it need not be zeroed first).
		ps, bs = dirtmake.Slice[int32](len(keys)), first
		j := 0
		for i, r := range first {
			ps[j], bs[j] = int32(i), r
			j += int(uint32(^r) >> 31)
		}
		return ps[:j:j], bs[:j:j]
	}
	next := h.next
	ps = make([]int32, 0, len(keys))
	bs = make([]int32, 0, len(keys))
	for i, r := range first {
		for ; r >= 0; r = next[r] {
			ps = append(ps, int32(i))
			bs = append(bs, r)
		}
	}
	return ps, bs
}

// hjIntSelect returns the probe rows with a match (want) or without one
// (!want), for an integer key table.
func hjIntSelect[T int32 | int64](h *HashTable, keys []T, want bool) []int32 {
	out := hjIntFirst(h, keys)
	miss := int32(0)
	if want {
		miss = 1
	}
	// Row i is kept when the sign bit of its first row differs from miss.
	k := 0
	for i, r := range out {
		out[k] = int32(i)
		k += int(uint32(r)>>31 ^ uint32(miss))
	}
	return out[:k:k]
}
