package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
)

// The row hash is a fixed, seedless function (wyhash-style multiply-fold),
// so every process of a multi-node run partitions a key to the same worker.
// Its high bits index hash tables and its value mod n picks partitions:
// both ends of the word are well mixed, and using opposite ends keeps a
// partition's rows (which share h mod n) spread over a table's buckets.
const (
	htK0 = 0xa0761d6478bd642f
	htK1 = 0xe7037ed1a0b428db
	htK2 = 0x8ebc6af09c88c6e3
	htK3 = 0x589965cc75374cc3
)

// htMum folds the 128-bit product of a and b into 64 bits.
func htMum(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// htInt hashes an integer-coded value (by its int64 value, so int32, date,
// decimal and int64 columns holding the same number hash alike).
func htInt(v int64) uint64 { return htMum(uint64(v)^htK0, htK1) }

// htFloat hashes a float64 by its bits, with -0 folded onto +0 (they
// compare equal).
func htFloat(f float64) uint64 {
	if f == 0 {
		f = 0
	}
	return htInt(int64(math.Float64bits(f)))
}

// htBytes hashes a byte string. Every byte reaches the result: 16-byte
// blocks are folded in turn, and the last 0..15 bytes are read as two
// (possibly overlapping) words; the length is part of the seed.
func htBytes(p []byte) uint64 {
	seed := htK0 ^ uint64(len(p))*htK3
	for len(p) > 16 {
		seed = htMum(binary.LittleEndian.Uint64(p)^htK1, binary.LittleEndian.Uint64(p[8:])^seed)
		p = p[16:]
	}
	var a, b uint64
	switch n := len(p); {
	case n >= 8:
		a = binary.LittleEndian.Uint64(p)
		b = binary.LittleEndian.Uint64(p[n-8:])
	case n >= 4:
		a = uint64(binary.LittleEndian.Uint32(p))
		b = uint64(binary.LittleEndian.Uint32(p[n-4:]))
	case n > 0:
		a = uint64(p[0])<<16 | uint64(p[n>>1])<<8 | uint64(p[n-1])
	}
	return htMum(htMum(a^htK1, b^seed)^htK2, htK3)
}

// htCombine mixes the hash v of the next key column into the row hash h;
// it is not symmetric, so keys (a, b) and (b, a) hash apart.
func htCombine(h, v uint64) uint64 { return htMum(h^htK2, v^htK3) }

// htHashable reports whether HashColumns (and so joins, aggregation and
// partitioning) accepts keys of type t.
func htHashable(t Type) bool {
	switch t {
	case TInt64, TInt32, TDate, TDecimal, TFloat64, TString, TBool:
		return true
	}
	return false
}

// htIntCoded reports whether t stores integers (compared by int64 value).
func htIntCoded(t Type) bool {
	switch t {
	case TInt64, TInt32, TDate, TDecimal:
		return true
	}
	return false
}

// htCheckKey checks that column c of b can be a key: a hashable type with
// b.Rows values (what callers of HashColumns must ensure).
func htCheckKey(b *Batch, c int, what string) error {
	v := &b.Cols[c]
	if !htHashable(v.Type) {
		return fmt.Errorf("cpu: %s column %s has type %s, which cannot be a key", what, b.Names[c], v.Type)
	}
	if v.Len() != b.Rows {
		return fmt.Errorf("cpu: %s column %s has %d values, batch %d rows", what, b.Names[c], v.Len(), b.Rows)
	}
	if v.Type == TString && b.Rows > 0 && int(v.Off[b.Rows]) > len(v.Str) {
		return fmt.Errorf("cpu: %s column %s: string offsets run past its %d bytes", what, b.Names[c], len(v.Str))
	}
	return nil
}

// HashColumns writes a 64-bit hash of the given key columns (indices into
// b.Cols) of each row into dst and returns it; dst is reused when its
// capacity holds b.Rows values, else a new slice is allocated. Integer-coded
// types (int64, int32, date, decimal) hash by their int64 value, so an int32
// key hashes like the same int64 value (decimals hash their scaled units:
// compare keys of one scale); strings hash their bytes, float64 by bits
// (-0 as +0), bool as 0/1. No keys: every hash is 0. The function is
// deterministic across processes.
//
// It panics if a key index is out of range, a key column has fewer than
// b.Rows values or a type that is not hashable: callers validate keys
// (BuildHashTable, Probe, the Aggregator and Partition return errors).
func HashColumns(b *Batch, keys []int, dst []uint64) []uint64 {
	n := b.Rows
	if cap(dst) < n {
		dst = make([]uint64, n)
	}
	dst = dst[:n]
	if len(keys) == 0 {
		clear(dst)
		return dst
	}
	for k, c := range keys {
		v := &b.Cols[c]
		first := k == 0
		switch v.Type {
		case TInt64, TDecimal:
			xs := v.I64[:n]
			if first {
				for i, x := range xs {
					dst[i] = htInt(x)
				}
			} else {
				for i, x := range xs {
					dst[i] = htCombine(dst[i], htInt(x))
				}
			}
		case TInt32, TDate:
			xs := v.I32[:n]
			if first {
				for i, x := range xs {
					dst[i] = htInt(int64(x))
				}
			} else {
				for i, x := range xs {
					dst[i] = htCombine(dst[i], htInt(int64(x)))
				}
			}
		case TFloat64:
			xs := v.F64[:n]
			if first {
				for i, x := range xs {
					dst[i] = htFloat(x)
				}
			} else {
				for i, x := range xs {
					dst[i] = htCombine(dst[i], htFloat(x))
				}
			}
		case TBool:
			xs := v.B[:n]
			for i, x := range xs {
				var u int64
				if x {
					u = 1
				}
				if first {
					dst[i] = htInt(u)
				} else {
					dst[i] = htCombine(dst[i], htInt(u))
				}
			}
		case TString:
			off, str := v.Off[:n+1], v.Str
			if first {
				for i := range n {
					dst[i] = htBytes(str[off[i]:off[i+1]])
				}
			} else {
				for i := range n {
					dst[i] = htCombine(dst[i], htBytes(str[off[i]:off[i+1]]))
				}
			}
		default:
			panic(fmt.Sprintf("cpu: HashColumns: key column %s has type %s", b.Names[c], v.Type))
		}
	}
	if htTestCollide {
		for i := range dst {
			dst[i] &= 3
		}
	}
	return dst
}

// htTestCollide is a test hook: when set, HashColumns keeps only two bits
// of each hash, so that tests exercise the paths that resolve hash
// collisions (which real 64-bit hashes almost never take).
var htTestCollide bool
