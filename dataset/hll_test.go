package dataset

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"gostachio/tpch/schema"
)

// TestSketchEstimate checks the estimate against the exact count of
// distinct values from ten to a million, across the small range where
// registers are still empty and the range beyond it: each estimate must lie
// within four standard errors (3.3%) of the truth, which a wrong estimator
// (a raw estimate without small-range correction, a wrong constant) misses.
func TestSketchEstimate(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{10, 1000, 10_000, 30_000, 50_000, 100_000, 1_000_000} {
		var s Sketch
		seen := map[int64]bool{}
		for len(seen) < n {
			x := rng.Int64N(1 << 40)
			seen[x] = true
			s.AddHash(hashInt(uint64(x)))
			s.AddHash(hashInt(uint64(x))) // duplicates do not count
		}
		est := s.Estimate()
		if rel := math.Abs(float64(est)-float64(n)) / float64(n); rel > 4*SketchRelativeError {
			t.Errorf("%d distinct: estimate %d (%.2f%% off)", n, est, 100*rel)
		}
	}
	var empty Sketch
	if e := empty.Estimate(); e != 0 {
		t.Errorf("empty sketch estimates %d", e)
	}
}

// TestSketchMergeOrder checks that sketches of the parts merge, in any
// order, to exactly the sketch of the whole, and that text hashes count
// distinct strings.
func TestSketchMergeOrder(t *testing.T) {
	var whole, a, b Sketch
	for i := range 20_000 {
		h := hashBytes([]byte("value " + strconv.Itoa(i%5000)))
		whole.AddHash(h)
		if i%3 == 0 {
			a.AddHash(h)
		} else {
			b.AddHash(h)
		}
	}
	ab, ba := a, b
	ab.Merge(&b)
	ba.Merge(&a)
	if ab != whole || ba != whole {
		t.Fatal("merged sketches differ from the sketch of the whole")
	}
	if e := whole.Estimate(); math.Abs(float64(e)-5000) > 5000*4*SketchRelativeError {
		t.Errorf("5000 distinct strings: estimate %d", e)
	}
}

// TestSketchColumnText checks that the packed fast path for short text
// hashes a value exactly as hashBytes does wherever it lies in the data
// buffer (so a value's hash does not depend on its neighbours), and that
// values differing only in length or in a trailing zero byte stay apart.
func TestSketchColumnText(t *testing.T) {
	vals := []string{"", "A", "AB", "A\x00", "MAIL", "12345678", "123456789", "a longer comment value", "", "A"}
	v := schema.Vector{Offsets: []int32{0}}
	var want Sketch
	for _, s := range vals {
		v.Bytes = append(v.Bytes, s...)
		v.Offsets = append(v.Offsets, int32(len(v.Bytes)))
		want.AddHash(hashBytes([]byte(s)))
	}
	var got Sketch
	sketchColumn(&got, schema.String, &v, len(vals))
	if got != want {
		t.Fatal("the packed path hashes short values unlike hashBytes")
	}
	if e := got.Estimate(); e != 8 {
		t.Errorf("8 distinct values estimate %d", e)
	}
}
