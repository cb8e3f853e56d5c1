package gpu

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"gostachio/kernels/cpu"
	"gostachio/kernels/cuda"
	"gostachio/plan"
)

// buildBatch: n build rows keyed on bk (int64; with dup, every key twice),
// carrying name (strings of 0-9 bytes), nat (int32) and bal (decimal 2).
// Keys are randomBatch's k values (multiples of 13 from -40) and some that
// no probe row holds.
func buildBatch(n int, dup bool, seed uint64) *cpu.Batch {
	rng := rand.New(rand.NewPCG(seed, 2))
	b := &cpu.Batch{Names: []string{"bk", "name", "nat", "bal"}}
	var keys []int64
	var nat []int32
	var bal []int64
	off := []int32{0}
	var str []byte
	perm := rng.Perm(3 * n)
	for i := 0; i < n; i++ {
		k := int64(perm[i])*13 - 40
		if perm[i]%7 == 3 {
			k++ // held by no probe row
		}
		copies := 1
		if dup {
			copies = 2
		}
		for c := 0; c < copies; c++ {
			keys = append(keys, k)
			nat = append(nat, int32(rng.IntN(25)))
			bal = append(bal, int64(rng.IntN(2_000_000)-100_000))
			str = append(str, fmt.Sprintf("n%d", rng.IntN(1<<uint(rng.IntN(28))))...)
			off = append(off, int32(len(str)))
		}
	}
	b.Rows = len(keys)
	b.Cols = []cpu.Vec{{Type: cpu.TInt64, I64: keys}, {Type: cpu.TString, Off: off, Str: str},
		{Type: cpu.TInt32, I32: nat}, {Type: cpu.TDecimal, Scale: 2, I64: bal}}
	return b
}

// TestGPURowsJoin runs the row path's probes (join.go) on the GPU over a
// random probe batch of two chunks, against build sides with unique and
// with repeated keys, empty and absent ones, and compares the rows with
// the CPU kernels' (kernels/cpu HashTable.Probe) as sorted rows: semi and
// anti joins on an int64 and an int32 (widened) key, inner joins carrying
// strings, int32 and decimals, before and after filters and projections.
// Skipped without a GPU.
func TestGPURowsJoin(t *testing.T) {
	d := testDevice(t)
	s, err := d.Context().NewStream(cuda.StreamNonBlocking)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	const rows = 300_007
	in := randomBatch(rows, 40_000, 7)
	// small's values as a second key column: an int32 join key.
	in.Names = append(in.Names, "k32")
	k32 := make([]int32, rows)
	for i, k := range in.Cols[0].I64 {
		k32[i] = int32(k)
	}
	in.Cols = append(in.Cols, cpu.Vec{Type: cpu.TInt32, I32: k32})
	g, err := d.Upload(s, []*cpu.Batch{slice(in, 0, 100_000), slice(in, 100_000, rows)})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Free()
	col := func(n string) plan.Col { return plan.Col(n) }
	filter := plan.Op{Kind: plan.OpFilter, Label: "f", Expr: plan.Le(col("day"), plan.Date("1996-06-30"))}
	probe := func(kind plan.JoinKind, key string, carry ...string) plan.Op {
		return plan.Op{Kind: plan.OpHashProbe, Label: kind.String(), Keys: []string{key}, Expr: plan.Join{Kind: kind, Carry: carry}}
	}
	after := plan.Op{Kind: plan.OpFilter, Label: "after", Expr: plan.Lt(col("nat"), plan.Int(12))}
	proj := plan.Op{Kind: plan.OpProject, Label: "p", Expr: plan.Projection{
		plan.As("k", col("k")), plan.As("name", col("name")), plan.As("v", plan.Add(col("price"), col("bal")))}}
	builds := map[string]*cpu.Batch{
		"unique": buildBatch(20_000, false, 1), "repeated": buildBatch(9_000, true, 2),
		"empty": slice(buildBatch(1, false, 3), 0, 0), "absent": nil,
	}
	cases := []struct {
		name string
		ops  []plan.Op
	}{
		{"semi", []plan.Op{{Kind: plan.OpScan}, probe(plan.JoinSemi, "k")}},
		{"filter, semi on int32", []plan.Op{{Kind: plan.OpScan}, filter, probe(plan.JoinSemi, "k32")}},
		{"anti after filter", []plan.Op{{Kind: plan.OpScan}, filter, probe(plan.JoinAnti, "k")}},
		{"inner carrying", []plan.Op{{Kind: plan.OpScan}, probe(plan.JoinInner, "k", "name", "nat", "bal")}},
		{"filter, inner, filter, project", []plan.Op{{Kind: plan.OpScan}, filter, probe(plan.JoinInner, "k32", "name", "nat", "bal"), after, proj}},
		{"inner, semi", []plan.Op{{Kind: plan.OpScan}, probe(plan.JoinInner, "k", "nat", "name", "bal"), after, probe(plan.JoinSemi, "k")}},
	}
	for bname, bb := range builds {
		var ht *cpu.HashTable
		if bb != nil {
			if ht, err = cpu.BuildHashTable(bb, []string{"bk"}); err != nil {
				t.Fatal(err)
			}
		}
		tables := map[string]*JoinTable{}
		joins := func(op *plan.Op) (*JoinTable, error) {
			carry := op.Expr.(plan.Join).Carry
			key := fmt.Sprint(carry)
			if jt := tables[key]; jt != nil {
				return jt, nil
			}
			jt, err := d.BuildJoin(s, bb, "bk", carry)
			if err == nil {
				tables[key] = jt
			}
			return jt, err
		}
		for _, c := range cases {
			name := bname + "/" + c.name
			want, err := cpuRows(in, c.ops, ht)
			if err != nil {
				t.Fatalf("%s: CPU: %v", name, err)
			}
			got, st, err := d.Rows(s, g, c.ops, joins)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			// nil is no rows (an inner join with nothing to join, as the
			// engine's probe gives); a batch's columns must be the CPU's.
			if got != nil && want != nil && !slices.Equal(got.Names, want.Names) {
				t.Errorf("%s: columns %v, want %v", name, got.Names, want.Names)
				continue
			}
			gr, wr := StateRows(got), StateRows(want)
			if !slices.Equal(gr, wr) {
				t.Errorf("%s: %d rows, want %d (first differing of sorted rows: %s)", name, len(gr), len(wr), firstDiff(gr, wr))
				continue
			}
			t.Logf("%s: %d of %d rows, %d launches", name, len(gr), rows, st.Launches)
		}
		for _, jt := range tables {
			jt.Free()
		}
	}
	if _, err := d.BuildJoin(s, builds["unique"], "name", nil); err == nil {
		t.Error("a string build key was accepted")
	}
}

// cpuRows runs ops (scan, filters, projections, probes of ht) over b on
// the CPU kernels; nil where an inner probe had no table (the engine's
// probe with nothing built).
func cpuRows(b *cpu.Batch, ops []plan.Op, ht *cpu.HashTable) (*cpu.Batch, error) {
	var err error
	for _, op := range ops {
		switch op.Kind {
		case plan.OpFilter:
			b, err = cpu.Filter(b, op.Expr)
		case plan.OpProject:
			b, err = cpu.Project(b, op.Expr.(plan.Projection))
		case plan.OpHashProbe:
			j := op.Expr.(plan.Join)
			switch {
			case ht != nil:
				b, err = ht.Probe(b, op.Keys, j.Kind, j.Carry)
			case j.Kind == plan.JoinInner:
				return nil, nil
			case j.Kind == plan.JoinSemi:
				b, err = cpu.Filter(b, plan.Lt(plan.Col("qty"), plan.Int(-1000))) // no row
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return b, nil
}

func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("%q vs %q", a[i], b[i])
		}
	}
	return "one is a prefix of the other"
}
