package cpu

import (
	"fmt"
	"testing"

	"gostachio/plan"
)

var ktJoinKinds = []plan.JoinKind{plan.JoinInner, plan.JoinSemi, plan.JoinAnti, plan.JoinLeftOuter}

// ktJoinRef is a map-based join: the expected output, built by gathering
// the probe rows and the carried build rows it pairs (an unmatched left
// outer row takes an extra all-zero build row).
func ktJoinRef(build *Batch, bk []string, probe *Batch, pk []string, kind plan.JoinKind, carry []string) *Batch {
	bkc, pkc := make([]int, len(bk)), make([]int, len(pk))
	for i, k := range bk {
		bkc[i] = build.Col(k)
	}
	for i, k := range pk {
		pkc[i] = probe.Col(k)
	}
	index := map[string][]int32{}
	for r := range build.Rows {
		k := ktKey(build, bkc, r)
		index[k] = append(index[k], int32(r))
	}
	var ps, bs []int32
	for i := range probe.Rows {
		ms := index[ktKey(probe, pkc, i)]
		switch {
		case kind == plan.JoinSemi && len(ms) > 0, kind == plan.JoinAnti && len(ms) == 0:
			ps = append(ps, int32(i))
		case kind == plan.JoinInner, kind == plan.JoinLeftOuter:
			for _, m := range ms {
				ps, bs = append(ps, int32(i)), append(bs, m)
			}
			if len(ms) == 0 && kind == plan.JoinLeftOuter {
				ps, bs = append(ps, int32(i)), append(bs, int32(build.Rows))
			}
		}
	}
	out := Gather(probe, ps)
	for _, c := range carry {
		v := build.Cols[build.Col(c)]
		switch v.Type { // append the zero row
		case TInt64, TDecimal:
			v.I64 = append(v.I64[:build.Rows:build.Rows], 0)
		case TInt32, TDate:
			v.I32 = append(v.I32[:build.Rows:build.Rows], 0)
		case TFloat64:
			v.F64 = append(v.F64[:build.Rows:build.Rows], 0)
		case TBool:
			v.B = append(v.B[:build.Rows:build.Rows], false)
		case TString:
			v.Off = append(append([]int32{}, v.Off[:build.Rows+1]...), v.Off[build.Rows])
		}
		out.Names = append(out.Names, c)
		out.Cols = append(out.Cols, GatherVec(&v, bs))
	}
	return out
}

// ktJoinSpec is a key shape: the build and probe key columns.
type ktJoinSpec struct {
	name        string
	build, prob []ktCol
}

// ktJoinSpecs: each key type, a mixed-width pair and composites. Build
// keys repeat (about 3 rows per key); about 2/3 of the probe rows match.
func ktJoinSpecs(nb int) []ktJoinSpec {
	c := nb/3 + 1
	pc := c * 3 / 2
	one := func(name string, bt, pt Type) ktJoinSpec {
		return ktJoinSpec{name: name, build: []ktCol{{name: "bk", typ: bt, card: c}}, prob: []ktCol{{name: "pk", typ: pt, card: pc}}}
	}
	c2 := max(1, c/5)
	return []ktJoinSpec{
		one("int64", TInt64, TInt64), one("int32", TInt32, TInt32), one("date", TDate, TDate),
		one("decimal", TDecimal, TDecimal), one("string", TString, TString), one("float64", TFloat64, TFloat64),
		one("int32-int64", TInt64, TInt32), one("int64-int32", TInt32, TInt64),
		{name: "string+int32", build: []ktCol{{name: "bk", typ: TString, card: 5}, {name: "bk2", typ: TInt32, card: c2}},
			prob: []ktCol{{name: "pk", typ: TString, card: 6}, {name: "pk2", typ: TInt64, card: c2 * 3 / 2}}},
		{name: "date+decimal", build: []ktCol{{name: "bk", typ: TDate, card: 5}, {name: "bk2", typ: TDecimal, card: c2}},
			prob: []ktCol{{name: "pk", typ: TDate, card: 6}, {name: "pk2", typ: TDecimal, card: c2 * 3 / 2}}},
	}
}

func ktNames(cols []ktCol) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.name
	}
	return out
}

func ktCheckJoin(t *testing.T, what string, ht *HashTable, build, probe *Batch, bk, pk []string) {
	t.Helper()
	for _, kind := range ktJoinKinds {
		var carry []string
		if kind == plan.JoinInner || kind == plan.JoinLeftOuter {
			carry = []string{"bs", "bdec", "bdate"}
			if len(bk) > 0 {
				carry = append(carry, bk[0])
			}
		}
		got, err := ht.Probe(probe, pk, kind, carry)
		if err != nil {
			t.Fatalf("%s %s: %v", what, kind, err)
		}
		if err := got.Validate(); err != nil {
			t.Fatalf("%s %s: %v", what, kind, err)
		}
		if len(got.Names) != len(probe.Names)+len(carry) {
			t.Fatalf("%s %s: columns %v", what, kind, got.Names)
		}
		for i, c := range carry {
			v := &got.Cols[len(probe.Names)+i]
			w := &build.Cols[build.Col(c)]
			if got.Names[len(probe.Names)+i] != c || v.Type != w.Type || v.Scale != w.Scale {
				t.Fatalf("%s %s: carried column %s is %s %s", what, kind, c, got.Names[len(probe.Names)+i], gthTypeName(v))
			}
		}
		want := ktJoinRef(build, bk, probe, pk, kind, carry)
		if !ktSameData(got, want) {
			ktSameRows(t, fmt.Sprintf("%s %s", what, kind), ktRows(got), ktRows(want))
			t.Fatalf("%s %s: output differs", what, kind)
		}
	}
}

func ktJoinPayload() []ktCol {
	return []ktCol{{name: "bs", typ: TString, card: 40}, {name: "bdec", typ: TDecimal, card: 0}, {name: "bdate", typ: TDate, card: 0}}
}

func TestJoin(t *testing.T) {
	r := ktRng(20)
	sizes := [][2]int{{0, 0}, {0, 7}, {7, 0}, {1, 1}, {1, 7}, {7, 7}, {7, 1000}, {1000, 7}, {1000, 1000},
		{1000, 100000}, {100000, 1000}}
	for _, sz := range sizes {
		nb, np := sz[0], sz[1]
		for _, spec := range ktJoinSpecs(nb) {
			if nb*np > 1e7 && spec.name != "int64" && spec.name != "string+int32" {
				continue // the big shapes once per key family
			}
			build := ktBatch(r, nb, append(spec.build, ktJoinPayload()...)...)
			src := ktBatch(r, np+2, append(spec.prob, ktCol{name: "ps", typ: TString, card: 0}, ktCol{name: "pv", typ: TInt64})...)
			probe := Slice(src, 2, np+2) // strings not at byte 0
			bk, pk := ktNames(spec.build), ktNames(spec.prob)
			ht, err := BuildHashTable(build, bk)
			if err != nil {
				t.Fatal(err)
			}
			if ht.Rows() != nb {
				t.Fatalf("Rows() = %d, want %d", ht.Rows(), nb)
			}
			ktCheckJoin(t, fmt.Sprintf("%s build %d probe %d", spec.name, nb, np), ht, build, probe, bk, pk)
		}
	}
}

// A table built without keys is a cross join.
func TestJoinCross(t *testing.T) {
	r := ktRng(21)
	for _, sz := range [][2]int{{0, 0}, {0, 5}, {1, 0}, {1, 1000}, {3, 7}, {7, 100}} {
		build := ktBatch(r, sz[0], ktJoinPayload()...)
		probe := ktBatch(r, sz[1], ktCol{name: "pk", typ: TInt64, card: 10}, ktCol{name: "ps", typ: TString, card: 10})
		ht, err := BuildHashTable(build, nil)
		if err != nil {
			t.Fatal(err)
		}
		ktCheckJoin(t, fmt.Sprintf("cross build %d probe %d", sz[0], sz[1]), ht, build, probe, nil, nil)
	}
}

// With all hashes forced into four values, every key compare and the
// collision paths (semi/anti chain walks) decide the result.
func TestJoinHashCollisions(t *testing.T) {
	htTestCollide = true
	defer func() { htTestCollide = false }()
	r := ktRng(22)
	for _, sz := range [][2]int{{7, 7}, {300, 500}} {
		for _, spec := range ktJoinSpecs(sz[0]) {
			build := ktBatch(r, sz[0], append(spec.build, ktJoinPayload()...)...)
			probe := ktBatch(r, sz[1], append(spec.prob, ktCol{name: "ps", typ: TString, card: 0})...)
			bk, pk := ktNames(spec.build), ktNames(spec.prob)
			ht, err := BuildHashTable(build, bk)
			if err != nil {
				t.Fatal(err)
			}
			ktCheckJoin(t, fmt.Sprintf("collide %s build %d probe %d", spec.name, sz[0], sz[1]), ht, build, probe, bk, pk)
		}
	}
}

func TestJoinErrors(t *testing.T) {
	r := ktRng(23)
	build := ktBatch(r, 10, ktCol{name: "bk", typ: TInt64, card: 5}, ktCol{name: "bdec", typ: TDecimal, card: 5},
		ktCol{name: "bs", typ: TString, card: 5}, ktCol{name: "pv", typ: TInt64, card: 5})
	probe := ktBatch(r, 10, ktCol{name: "pk", typ: TInt32, card: 5}, ktCol{name: "pdec", typ: TDecimal, card: 5, scale: 4},
		ktCol{name: "ps", typ: TString, card: 5}, ktCol{name: "pv", typ: TInt64, card: 5})
	_, err := BuildHashTable(build, []string{"nope"})
	ktWantErr(t, "build on unknown key", err, "nope")
	ht, err := BuildHashTable(build, []string{"bk"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = ht.Probe(probe, []string{"nope"}, plan.JoinInner, nil)
	ktWantErr(t, "unknown probe key", err, "nope")
	_, err = ht.Probe(probe, []string{"pk", "ps"}, plan.JoinInner, nil)
	ktWantErr(t, "key count", err, "do not match")
	_, err = ht.Probe(probe, []string{"ps"}, plan.JoinInner, nil)
	ktWantErr(t, "string vs int64", err, "does not compare")
	_, err = ht.Probe(probe, []string{"pk"}, plan.JoinInner, []string{"gone"})
	ktWantErr(t, "unknown carry", err, "gone")
	_, err = ht.Probe(probe, []string{"pk"}, plan.JoinInner, []string{"pv"})
	ktWantErr(t, "duplicate output column", err, "pv")
	_, err = ht.Probe(probe, []string{"pk"}, plan.JoinInner, []string{"bs", "bs"})
	ktWantErr(t, "carry twice", err, "bs")
	_, err = ht.Probe(probe, []string{"pk"}, plan.JoinSemi, []string{"bs"})
	ktWantErr(t, "semi with carry", err, "carries no")
	_, err = ht.Probe(probe, []string{"pk"}, plan.JoinKind(9), nil)
	ktWantErr(t, "bad kind", err, "unknown join kind")

	dt, err := BuildHashTable(build, []string{"bdec"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = dt.Probe(probe, []string{"pdec"}, plan.JoinInner, nil)
	ktWantErr(t, "decimal scales", err, "scales")
	_, err = dt.Probe(probe, []string{"pk"}, plan.JoinInner, nil)
	ktWantErr(t, "decimal vs int", err, "does not compare")

	cross, err := BuildHashTable(build, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = cross.Probe(probe, []string{"pk"}, plan.JoinInner, nil)
	ktWantErr(t, "keys against a cross table", err, "do not match")
}

func BenchmarkJoin(b *testing.B) {
	const nb, np = 1 << 17, 1 << 20
	r := ktRng(24)
	build := ktBatch(r, nb, ktCol{name: "bk", typ: TInt64, card: 0}, ktCol{name: "bv", typ: TDecimal})
	for i := range nb {
		build.Cols[0].I64[i] = int64(i) // unique keys, as a primary key
	}
	probe := ktBatch(r, np, ktCol{name: "pk", typ: TInt64, card: nb * 2}, ktCol{name: "pv", typ: TInt32})
	for i := range np {
		probe.Cols[0].I64[i] = r.Int64N(2 * nb)
	}
	b.Run("build", func(b *testing.B) {
		for b.Loop() {
			if _, err := BuildHashTable(build, []string{"bk"}); err != nil {
				b.Fatal(err)
			}
		}
		ktRowsPerSec(b, nb)
	})
	ht, err := BuildHashTable(build, []string{"bk"})
	if err != nil {
		b.Fatal(err)
	}
	for _, kind := range ktJoinKinds {
		var carry []string
		if kind == plan.JoinInner || kind == plan.JoinLeftOuter {
			carry = []string{"bv"}
		}
		b.Run("probe-"+kind.String(), func(b *testing.B) {
			for b.Loop() {
				if _, err := ht.Probe(probe, []string{"pk"}, kind, carry); err != nil {
					b.Fatal(err)
				}
			}
			ktRowsPerSec(b, np)
		})
	}
}

// TestJoinTableGrows: a build whose sampled rows all hold one key starts
// with a 16-slot table and must double it up to the 100 K distinct keys
// of the other rows; every join kind still matches the map-based join.
func TestJoinTableGrows(t *testing.T) {
	r := ktRng(24)
	const n = 100_000
	build := ktBatch(r, n, append([]ktCol{{name: "bk", typ: TInt64, card: 0}}, ktJoinPayload()...)...)
	keys := build.Cols[0].I64
	stride := n / hjSampleRows
	for i := range keys {
		keys[i] = int64(3*i + 1)
		if i%stride == 0 {
			keys[i] = 7 // what the sample sees: one key, repeated
		}
	}
	if got := hjStartSlots(keys); got != 16 {
		t.Fatalf("start slots %d, want 16 (the sample saw one key)", got)
	}
	probe := ktBatch(r, 2*n, ktCol{name: "pk", typ: TInt64, card: 0}, ktCol{name: "ps", typ: TString, card: 0})
	for i := range probe.Cols[0].I64 {
		probe.Cols[0].I64[i] = int64(r.IntN(4 * n)) // a third of 3i+1 values, and 7
	}
	ht, err := BuildHashTable(build, []string{"bk"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ht.islots) < 2*(n-n/stride) || len(ht.islots) > 4*n {
		t.Errorf("%d slots for about %d distinct keys: want between 2x and 4x", len(ht.islots), n-n/stride)
	}
	ktCheckJoin(t, "grown table", ht, build, probe, []string{"bk"}, []string{"pk"})
}

// TestJoinTableSizedByDistinctKeys: 200 K build rows over 2 K keys get a
// table sized for the keys (at most 8x them), not 2x the rows (512 K
// slots); unique keys still get 2x the rows, with no rehash.
func TestJoinTableSizedByDistinctKeys(t *testing.T) {
	r := ktRng(25)
	const n, distinct = 200_000, 2_000
	rep := ktBatch(r, n, ktCol{name: "bk", typ: TInt64, card: distinct})
	ht, err := BuildHashTable(rep, []string{"bk"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ht.islots) > 8*distinct {
		t.Errorf("%d slots for %d distinct keys of %d rows: want at most %d", len(ht.islots), distinct, n, 8*distinct)
	}
	seen := map[int64]bool{}
	for _, k := range rep.Cols[0].I64 {
		seen[k] = true
	}
	if ht.Keys() != len(seen) || ht.Rows() != n {
		t.Errorf("Keys() = %d, Rows() = %d: want the %d distinct keys of %d rows", ht.Keys(), ht.Rows(), len(seen), n)
	}
	uniq := ktBatch(r, n, ktCol{name: "bk", typ: TInt32, card: 0})
	for i := range uniq.Cols[0].I32 {
		uniq.Cols[0].I32[i] = int32(i * 5)
	}
	if got, want := hjStartSlots(uniq.Cols[0].I32), 1<<19; got != want {
		t.Errorf("unique keys: start slots %d, want %d (2x the rows, rounded up)", got, want)
	}
	// Unique keys: the slots only (no chain is ever followed).
	uht, err := BuildHashTable(uniq, []string{"bk"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := uht.Footprint(), int64(16<<19); got != want {
		t.Errorf("unique keys: Footprint() = %d, want %d", got, want)
	}
}

// TestJoinTableClusteredKeys: keys stored in runs of 4 (as l_orderkey)
// look unique to the strided sample, but a sampled row's next row has its
// key 3 times in 4: the table is sized for the 100 K runs (2x, rounded
// up), not 2x the rows, Keys counts them, and the join stays exact.
func TestJoinTableClusteredKeys(t *testing.T) {
	r := ktRng(26)
	const n = 400_000
	build := ktBatch(r, n, append([]ktCol{{name: "bk", typ: TInt64, card: 0}}, ktJoinPayload()...)...)
	keys := build.Cols[0].I64
	for i := range keys {
		keys[i] = int64(i/4) * 3
	}
	if got, want := hjStartSlots(keys), 1<<18; got != want {
		t.Errorf("start slots %d for %d rows in runs of 4: want %d (2x the runs, rounded up)", got, n, want)
	}
	probe := ktBatch(r, 50_000, ktCol{name: "pk", typ: TInt64, card: 0}, ktCol{name: "ps", typ: TString, card: 0})
	for i := range probe.Cols[0].I64 {
		probe.Cols[0].I64[i] = int64(r.IntN(2 * n))
	}
	ht, err := BuildHashTable(build, []string{"bk"})
	if err != nil {
		t.Fatal(err)
	}
	if got := ht.Keys(); got != n/4 {
		t.Errorf("Keys() = %d, want %d", got, n/4)
	}
	// 2^18 slots of 16 bytes and a 4-byte link a row (keys repeat).
	if got, want := ht.Footprint(), int64(16<<18+4*n); got != want {
		t.Errorf("Footprint() = %d, want %d", got, want)
	}
	ktCheckJoin(t, "clustered keys", ht, build, probe, []string{"bk"}, []string{"pk"})
}
