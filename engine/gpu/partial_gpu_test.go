package gpu

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gostachio/kernels/cpu"
	"gostachio/kernels/cuda"
	"gostachio/plan"
)

func testDevice(t *testing.T) *Device {
	t.Helper()
	if _, err := cuda.Load(); err != nil {
		t.Skip("no CUDA driver: ", err)
	}
	d, err := Open(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	return d
}

// randomBatch: n rows of k (int64 key with distinct values), flag (1-byte
// strings), tag (strings of up to 3 bytes), day (date), qty (decimal 2),
// price (decimal 2), disc (decimal 2), small (int32).
func randomBatch(n, distinct int, seed uint64) *cpu.Batch {
	rng := rand.New(rand.NewPCG(seed, 1))
	b := &cpu.Batch{Rows: n, Names: []string{"k", "flag", "tag", "day", "qty", "price", "disc", "small"}}
	k, day, small := make([]int64, n), make([]int32, n), make([]int32, n)
	qty, price, disc := make([]int64, n), make([]int64, n), make([]int64, n)
	flagOff, tagOff := []int32{0}, []int32{0}
	var flagStr, tagStr []byte
	tags := []string{"", "a", "ab", "abc", "b", "zz"}
	for i := 0; i < n; i++ {
		k[i] = int64(rng.IntN(distinct))*13 - 40
		day[i] = int32(8000 + rng.IntN(2500))
		small[i] = int32(rng.IntN(200) - 100)
		qty[i] = int64(1+rng.IntN(50)) * 100
		price[i] = int64(rng.IntN(10_000_000))
		disc[i] = int64(rng.IntN(11))
		flagStr = append(flagStr, "ANR"[rng.IntN(3)])
		flagOff = append(flagOff, int32(len(flagStr)))
		tagStr = append(tagStr, tags[rng.IntN(min(len(tags), distinct))]...)
		tagOff = append(tagOff, int32(len(tagStr)))
	}
	b.Cols = []cpu.Vec{
		{Type: cpu.TInt64, I64: k}, {Type: cpu.TString, Off: flagOff, Str: flagStr},
		{Type: cpu.TString, Off: tagOff, Str: tagStr}, {Type: cpu.TDate, I32: day},
		{Type: cpu.TDecimal, Scale: 2, I64: qty}, {Type: cpu.TDecimal, Scale: 2, I64: price},
		{Type: cpu.TDecimal, Scale: 2, I64: disc}, {Type: cpu.TInt32, I32: small},
	}
	return b
}

// cpuPartial is the CPU engine's partial state for ops over b.
func cpuPartial(t *testing.T, b *cpu.Batch, ops []plan.Op) *cpu.Batch {
	t.Helper()
	st, err := CPUState([]*cpu.Batch{b}, ops)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// rowsOf renders a state as sorted rows "name=value ..." (types and scales
// show in the formatting).
func rowsOf(b *cpu.Batch) []string { return StateRows(b) }

// TestGPUPartialMatchesCPU runs pipelines over one random batch on the GPU
// and compares the partial states with the CPU engine's, cell by cell:
// string and integer keys, few (register), some (shared-memory) and many
// (global-atomic) groups, scalar aggregates with and without filters.
func TestGPUPartialMatchesCPU(t *testing.T) {
	d := testDevice(t)
	s, err := d.Context().NewStream(cuda.StreamNonBlocking)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	for _, c := range pipelineCases() {
		for _, mode := range []string{"compiled, registers", "compiled, bounded", "compiled, shared", "compiled, registers, ranges", "compiled, shared, ranges", "compiled, shared, ranges, narrow", "interpreted", "operators"} {
			fused, jit := mode != "operators", strings.HasPrefix(mode, "compiled")
			d.SetFused(fused)
			d.SetJIT(jit)
			acc := AccRegisters
			if strings.Contains(mode, "bounded") {
				acc = AccBounded
			}
			if strings.Contains(mode, "shared") {
				acc = AccShared
			}
			ranges := strings.Contains(mode, "ranges")
			d.SetNarrow(strings.HasSuffix(mode, "narrow"))
			d.SetAccumulators(acc)
			t.Run(c.name+"/"+mode, func(t *testing.T) {
				b := randomBatch(300_007, c.distinct, uint64(c.distinct))
				ops := c.ops
				if err := Supported(ops); err != nil {
					t.Fatal(err)
				}
				want := rowsOf(cpuPartial(t, b, ops))
				// Two chunks: the upload concatenates them.
				half := b.Rows / 3
				parts := []*cpu.Batch{slice(b, 0, half), slice(b, half, b.Rows)}
				g, err := d.Upload(s, parts)
				if err != nil {
					t.Fatal(err)
				}
				defer g.Free()
				if ranges {
					exactBounds(t, g, b)
				}
				got, st, err := d.Partial(s, g, ops)
				if err != nil {
					t.Fatal(err)
				}
				gotRows := rowsOf(got)
				if len(gotRows) != len(want) {
					t.Fatalf("%d groups, want %d", len(gotRows), len(want))
				}
				for i := range want {
					if gotRows[i] != want[i] {
						t.Fatalf("group %d:\n got %s\nwant %s", i, gotRows[i], want[i])
					}
				}
				if st.Fused != (fused && c.fused) {
					t.Errorf("fused path taken: %v, want %v", st.Fused, fused && c.fused)
				}
				if jit && st.Fused && !st.Compiled {
					t.Errorf("fused pipeline not compiled: %s", d.JIT())
				}
				if st.Compiled && st.Accumulators != acc && !(acc == AccShared && st.Accumulators == AccRegisters) {
					t.Errorf("accumulated in %s, asked for %s", st.Accumulators, acc)
				}
				t.Logf("%d rows, %d selected, %d groups, %d launches, fused %v, compiled %v (%s)", st.Rows, st.Selected, st.Groups, st.Launches, st.Fused, st.Compiled, st.Accumulators)
			})
		}
	}
	d.SetFused(true)
	d.SetJIT(true)
	d.SetAccumulators(AccShared)
	d.SetNarrow(false)
	t.Logf("run-time compiler: %s", d.JIT())
	if p := d.Peak(); p <= 0 {
		t.Errorf("peak device memory %d", p)
	}
}

// TestGPUSumOverflowRefused: a sum that could wrap is an error, not a value.
func TestGPUSumOverflowRefused(t *testing.T) {
	d := testDevice(t)
	s, err := d.Context().NewStream(cuda.StreamNonBlocking)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	n := 1000
	v := make([]int64, n)
	for i := range v {
		v[i] = 1 << 60
	}
	b := &cpu.Batch{Rows: n, Names: []string{"v"}, Cols: []cpu.Vec{{Type: cpu.TInt64, I64: v}}}
	g, err := d.Upload(s, []*cpu.Batch{b})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Free()
	ops := []plan.Op{{Kind: plan.OpScan}, {Kind: plan.OpAggPartial, Expr: plan.Aggs{plan.Sum("s", plan.Col("v"))}}}
	if _, _, err := d.Partial(s, g, ops); err == nil || !strings.Contains(err.Error(), "overflow") {
		t.Fatalf("sum of 1000 x 2^60: %v, want an overflow error", err)
	}
	// With the values' range known the sum is not tracked per row: the
	// range's bound refuses it.
	if err := g.Bound("v", 1<<60, 1<<60); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.Partial(s, g, ops); err == nil || !strings.Contains(err.Error(), "overflow") {
		t.Fatalf("bounded sum of 1000 x 2^60: %v, want an overflow error", err)
	}
}

// pipelineCase is a pipeline over randomBatch's columns.
type pipelineCase struct {
	name     string
	distinct int
	ops      []plan.Op
	compiles bool // for the fused path
	fused    bool // and runs there (at most 8 groups)
}

// pipelineCases: string and integer keys, few (register), some (shared
// memory) and many (global atomics) groups, scalar aggregates with and
// without filters; a filter of and/or/not/between/in over dates,
// decimals and int32, a projection with decimal arithmetic, and sums,
// averages, counts, minima and maxima of decimals, dates and int32.
func pipelineCases() []pipelineCase {
	col := func(n string) plan.Col { return plan.Col(n) }
	filter := plan.Op{Kind: plan.OpFilter, Label: "f", Expr: plan.And(
		plan.Le(col("day"), plan.Date("1996-06-30")),
		plan.Or(plan.Between(col("disc"), plan.Dec("0.02"), plan.Dec("0.07")), plan.Not(plan.Lt(col("qty"), plan.Int(24)))),
		plan.NotIn(col("small"), plan.Ints(0, 1, 2)...))}
	disc := plan.Mul(col("price"), plan.Sub(plan.Int(1), col("disc")))
	aggs := plan.Aggs{
		plan.Sum("sum_qty", col("qty")), plan.Sum("sum_disc", disc),
		plan.Sum("charge", plan.Mul(disc, plan.Add(plan.Dec("1.00"), col("disc")))),
		plan.Avg("avg_price", col("price")), plan.Count("n"),
		plan.Min("min_day", col("day")), plan.Max("max_small", col("small")), plan.Sum("sum_small", col("small")),
	}
	proj := plan.Op{Kind: plan.OpProject, Label: "p", Expr: plan.Projection{
		plan.As("k", col("k")), plan.As("flag", col("flag")), plan.As("qty", col("qty")),
		plan.As("price", plan.Add(col("price"), plan.Dec("0.5"))), plan.As("disc", col("disc")),
		plan.As("day", col("day")), plan.As("small", col("small"))}}
	var out []pipelineCase
	for _, c := range []struct {
		name            string
		distinct        int
		keys            []string
		filter, project bool
		compiles, fused bool
	}{
		{"flag-tag smem", 50, []string{"flag", "tag"}, true, false, true, false},
		{"flag only unfiltered", 50, []string{"flag"}, false, true, true, true},
		{"flag-tag few", 1, []string{"flag", "tag"}, true, false, true, true},
		{"k smem", 3000, []string{"k"}, true, true, true, false},
		{"k few", 5, []string{"k"}, true, true, true, true},
		{"k and flag global", 40000, []string{"k", "flag"}, true, true, false, false},
		{"scalar filtered", 10, nil, true, true, true, true},
		{"scalar", 10, nil, false, true, true, true},
	} {
		ops := []plan.Op{{Kind: plan.OpScan}}
		if c.filter {
			ops = append(ops, filter)
		}
		if c.project {
			ops = append(ops, proj)
		}
		ops = append(ops, plan.Op{Kind: plan.OpAggPartial, Keys: c.keys, Expr: aggs}, plan.Op{Kind: plan.OpGather})
		out = append(out, pipelineCase{c.name, c.distinct, ops, c.compiles, c.fused})
	}
	return out
}

// slice is rows [lo, hi) of b as a batch of views (strings keep their
// offsets into the shared bytes, as a stored chunk's do).
func slice(b *cpu.Batch, lo, hi int) *cpu.Batch {
	out := &cpu.Batch{Rows: hi - lo, Names: b.Names, Cols: make([]cpu.Vec, len(b.Cols))}
	for k, v := range b.Cols {
		o := cpu.Vec{Type: v.Type, Scale: v.Scale}
		switch {
		case v.I64 != nil:
			o.I64 = v.I64[lo:hi]
		case v.I32 != nil:
			o.I32 = v.I32[lo:hi]
		case v.Off != nil:
			o.Off, o.Str = v.Off[lo:hi+1], v.Str
		}
		out.Cols[k] = o
	}
	return out
}

// TestGPUUploadStrings: an upload of three chunks (the later ones with
// offsets that do not start at 0, and an empty one) holds the
// concatenation's offsets and bytes and the string columns' length range,
// whether rebased on the device (compiled) or on the host.
func TestGPUUploadStrings(t *testing.T) {
	d := testDevice(t)
	s, err := d.Context().NewStream(cuda.StreamNonBlocking)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	defer d.SetJIT(true)
	b := randomBatch(70_001, 40, 7)
	parts := []*cpu.Batch{slice(b, 0, 123), slice(b, 123, 123), slice(b, 123, 70_001)}
	for _, jit := range []bool{true, false} {
		d.SetJIT(jit)
		g, err := d.Upload(s, parts)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"flag", "tag"} {
			want, err := b.Column(name)
			if err != nil {
				t.Fatal(err)
			}
			c, ok := g.col(name)
			if !ok {
				t.Fatalf("no column %s", name)
			}
			off := make([]int32, b.Rows+1)
			if err := s.CopyDtoH(bytesOf(off), c.Off); err != nil {
				t.Fatal(err)
			}
			data := make([]byte, want.Off[b.Rows])
			if err := s.CopyDtoH(data, c.Data); err != nil {
				t.Fatal(err)
			}
			if err := s.Synchronize(); err != nil {
				t.Fatal(err)
			}
			lo, hi := math.MaxInt, 0
			for i := 0; i < b.Rows; i++ {
				l := int(want.Off[i+1] - want.Off[i])
				lo, hi = min(lo, l), max(hi, l)
			}
			if !slices.Equal(off, want.Off[:b.Rows+1]) || !bytes.Equal(data, want.Str[:want.Off[b.Rows]]) {
				t.Fatalf("jit %v: %s: offsets or bytes differ from the concatenation", jit, name)
			}
			if c.MinLen != lo || c.MaxLen != hi {
				t.Fatalf("jit %v: %s: lengths [%d, %d], want [%d, %d]", jit, name, c.MinLen, c.MaxLen, lo, hi)
			}
		}
		g.Free()
	}
}
