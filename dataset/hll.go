package dataset

import (
	"encoding/binary"
	"math"
	"math/bits"

	"github.com/zeebo/xxh3"

	"gostachio/tpch/schema"
)

// SketchPrecision is p, the number of hash bits that pick a register of a
// Sketch: m = 2^p = 16384 registers of one byte each.
const SketchPrecision = 14

const (
	sketchRegisters = 1 << SketchPrecision
	// sketchQ is q = 64 - p, the hash bits whose leading zeros a register
	// records; a register holds 0 (empty) .. q+1.
	sketchQ = 64 - SketchPrecision
)

// SketchRelativeError is the standard error of Sketch.Estimate relative to
// the true count, 1.04/sqrt(m) = 1.04/sqrt(2^14) ~ 0.81%: about 95% of
// estimates lie within twice this of the truth.
const SketchRelativeError = 1.04 / 128

// Sketch is a HyperLogLog sketch of a multiset of 64-bit hashes
// (Flajolet et al. 2007): register j = h >> q holds max over the hashes
// routed to it of 1 + (leading zeros of the low q bits of h). The registers
// depend only on the set of hashes added, not on their order or
// multiplicity, and Merge is a register-wise max: sketches of the parts of
// a table, built on any goroutines in any order, merge to the sketch of
// the table. The zero value is an empty sketch; a Sketch is not safe for
// concurrent use.
type Sketch struct {
	reg [sketchRegisters]uint8
}

// AddHash adds one hashed value.
func (s *Sketch) AddHash(h uint64) {
	j := h >> sketchQ
	// The sentinel bit bounds the rank at q+1 when the low q bits are 0.
	r := uint8(bits.LeadingZeros64(h<<SketchPrecision|1<<(SketchPrecision-1))) + 1
	if r > s.reg[j] {
		s.reg[j] = r
	}
}

// Merge makes s the sketch of the union of s's and o's values.
func (s *Sketch) Merge(o *Sketch) {
	for j, r := range o.reg {
		if r > s.reg[j] {
			s.reg[j] = r
		}
	}
}

// Estimate is the estimated number of distinct values added, by Ertl's
// improved raw estimator ("New cardinality estimation algorithms for
// HyperLogLog sketches", 2017, algorithm 6): with C_k the number of
// registers holding k,
//
//	z = m·τ(1 − C_{q+1}/m);  z ← (z + C_k)/2 for k = q..1;  z ← z + m·σ(C_0/m)
//	E = m² / (2·ln 2 · z)
//
// The σ term is the small-range correction: while registers are still
// empty it follows linear counting, m·ln(m/C_0), so no switch-over between
// two estimators (and no bias bump around 2.5m) is needed. The relative
// standard error is SketchRelativeError over the whole range; an empty
// sketch estimates 0.
func (s *Sketch) Estimate() int64 {
	var c [sketchQ + 2]int
	for _, r := range s.reg {
		c[r]++
	}
	if c[0] == sketchRegisters {
		return 0
	}
	const m = float64(sketchRegisters)
	z := m * hllTau(1-float64(c[sketchQ+1])/m)
	for k := sketchQ; k >= 1; k-- {
		z = 0.5 * (z + float64(c[k]))
	}
	z += m * hllSigma(float64(c[0])/m)
	return int64(math.Round(m * m / (2 * math.Ln2 * z)))
}

// hllSigma is σ(x) = x + Σ_{k≥1} x^(2^k)·2^(k−1), for x in [0, 1).
func hllSigma(x float64) float64 {
	if x == 1 {
		return math.Inf(1)
	}
	y, z := 1.0, x
	for {
		x *= x
		zp := z
		z += x * y
		y += y
		if zp == z {
			return z
		}
	}
}

// hllTau is τ(x) = (1/3)·(1 − x − Σ_{k≥1} (1 − x^(2^−k))²·2^−k), for x
// in [0, 1].
func hllTau(x float64) float64 {
	if x == 0 || x == 1 {
		return 0
	}
	y, z := 1.0, 1-x
	for {
		x = math.Sqrt(x)
		zp := z
		y *= 0.5
		z -= (1 - x) * (1 - x) * y
		if zp == z {
			return z / 3
		}
	}
}

// hashInt is the splitmix64 finalizer (Steele et al. 2014): a bijection of
// 64-bit integers whose every output bit depends on every input bit, which
// is all HyperLogLog asks of a hash of integers, at a few cycles a value.
func hashInt(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// hashBytes is a 64-bit hash of a text value: XXH3, except that a value of
// at most 8 bytes (flags, modes, short names: most of a table's text
// cells) is packed little-endian into an integer with its length in the
// spare high bits and mixed by hashInt, at a third of XXH3's cost. Equal
// values hash equal, which is all a distinct count needs; the two hash
// families colliding is as unlikely as any 64-bit collision.
func hashBytes(b []byte) uint64 {
	if len(b) > 8 {
		return xxh3.Hash(b)
	}
	var x uint64
	for i, c := range b {
		x |= uint64(c) << (8 * i)
	}
	return hashShort(x, len(b))
}

// hashShort hashes a text value of n <= 8 bytes packed little-endian into
// x (the bytes beyond n zero).
func hashShort(x uint64, n int) uint64 {
	return hashInt(x ^ uint64(n)*0x9e3779b97f4a7c15)
}

// floatKey is the bits a float64 column's value (stored as its bits) is
// hashed by: the value's own bits, with -0 taken as +0 and every NaN as one
// NaN, so that values SQL holds equal count once.
func floatKey(bits int64) uint64 {
	x := math.Float64frombits(uint64(bits))
	switch {
	case x == 0:
		return 0
	case x != x:
		return math.Float64bits(math.NaN())
	}
	return uint64(bits)
}

// sketchColumn adds the first rows values of v, a column of type t, to s.
func sketchColumn(s *Sketch, t schema.Type, v *schema.Vector, rows int) {
	switch t {
	case schema.Int64, schema.Decimal:
		for _, x := range v.I64[:rows] {
			s.AddHash(hashInt(uint64(x)))
		}
	case schema.Float64:
		for _, x := range v.I64[:rows] {
			s.AddHash(hashInt(floatKey(x)))
		}
	case schema.Int32, schema.Date:
		for _, x := range v.I32[:rows] {
			s.AddHash(hashInt(uint64(int64(x))))
		}
	default:
		data := v.Bytes
		for i := range rows {
			lo, hi := int(v.Offsets[i]), int(v.Offsets[i+1])
			n := hi - lo
			if n <= 8 && lo+8 <= len(data) {
				// One unaligned load instead of a byte loop; the mask
				// drops the next values' bytes (all of them for n = 0:
				// a shift by 64 is 0 in Go).
				x := binary.LittleEndian.Uint64(data[lo:]) & (^uint64(0) >> (64 - 8*n))
				s.AddHash(hashShort(x, n))
				continue
			}
			s.AddHash(hashBytes(data[lo:hi]))
		}
	}
}
