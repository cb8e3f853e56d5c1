package costmodel

import (
	"math"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"gostachio/plan"
)

func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		bad  bool
	}{
		{in: "6.4GiB/s", want: 6.4 * (1 << 30)},
		{in: "25GB/s", want: 25e9},
		{in: "200Gb/s", want: 25e9}, // bits
		{in: "40G/s", want: 40e9},
		{in: "1.5e9", want: 1.5e9},
		{in: "1MiB", want: 1 << 20},
		{in: "12kb/s", want: 1500},
		{in: "fast", bad: true},
		{in: "-1GB/s", bad: true},
	} {
		got, err := ParseRate(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("ParseRate(%q) = %v, want error", tc.in, got)
			}
			continue
		}
		if err != nil || math.Abs(float64(got)-tc.want) > 1e-6*tc.want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", tc.in, float64(got), err, tc.want)
		}
	}
}

func TestOpCostAndDeviceWork(t *testing.T) {
	// fixed 10us + 2e9 bytes at 1e12 B/s (2 ms) + 1e6 rows at 1e9 rows/s (1 ms).
	c := OpCost{Fixed: 10_000, ByteRate: 1e12, RowRate: 1e9}
	if got, want := c.Ns(2e9, 1e6), 10_000.0+2e6+1e6; got != want {
		t.Fatalf("OpCost.Ns = %v, want %v", got, want)
	}
	var d Device
	d.Launch = 5_000
	d.Ops[plan.OpScan] = OpCost{ByteRate: 1e12}               // 1 ns per 1000 B
	d.Ops[plan.OpFilter] = OpCost{Fixed: 1_000, RowRate: 1e9} // 1 ns per row
	d.Ops[plan.OpAggPartial] = OpCost{ByteRate: 1e11}         // 1 ns per 100 B
	ops := []plan.Op{
		{Kind: plan.OpScan, Selectivity: 1, OutWidth: 20},
		{Kind: plan.OpFilter, Selectivity: 0.5, OutWidth: 10},
		{Kind: plan.OpAggPartial, Selectivity: 0.001, OutWidth: 8},
	}
	// scan: 2e9 B -> 2e6 ns; filter: 1e8 rows in (scan keeps rows) ->
	// 1000 + 1e8 ns; agg: input 5e7 rows x 10 B = 5e8 B -> 5e6 ns.
	want := 2e6 + 1000 + 1e8 + 5e6
	if got := d.Work(ops, plan.OpAggPartial, 2e9, 1e8); math.Abs(got-want) > 1e-6 {
		t.Fatalf("Device.Work = %v, want %v", got, want)
	}
	// No ops: the kind alone prices the input.
	if got := d.Work(nil, plan.OpFilter, 0, 4e6); got != 1000+4e6 {
		t.Fatalf("Device.Work(kind only) = %v, want %v", got, 1000+4e6)
	}
}

// WorkShared counts a working set once per sharer against the cache term:
// a 1 MiB table fits a 2 MiB cache alone, not among 4 sharers.
// TableBytes is the engine's table: 16-byte slots, a power of two of at
// least 2x the distinct keys, and 4-byte links a row when keys repeat;
// bucket heads, hashes and links for several keys. A build works on it:
// 2^16 unique keys take 2^17 slots (2 MiB: inside a 2 MiB cache), 2^16 + 1
// take 2^18 (4 MiB: half the lookups miss); the same rows at 1/8 distinct
// keys fit again.
func TestTableBytes(t *testing.T) {
	unique := []plan.Op{{Kind: plan.OpHashBuild, Selectivity: 1, Keys: []string{"k"}}}
	repeating := []plan.Op{{Kind: plan.OpHashBuild, Selectivity: 1, Keys: []string{"k"}, Distinct: 0.125}}
	pair := []plan.Op{{Kind: plan.OpHashBuild, Selectivity: 1, Keys: []string{"a", "b"}}}
	for _, tc := range []struct {
		op   *plan.Op
		rows float64
		want float64
	}{
		{&unique[0], 1 << 16, 16 << 17},
		{&unique[0], 1<<16 + 1, 16 << 18},
		{&unique[0], 3, 16 * 16},
		{&unique[0], 0, 0},
		{&repeating[0], 1 << 16, 16<<14 + 4<<16},
		{&pair[0], 1 << 16, 4<<17 + 12<<16},
	} {
		if got := TableBytes(tc.op, tc.rows); got != tc.want {
			t.Errorf("TableBytes(%v keys, distinct %v, %v rows) = %v, want %v", len(tc.op.Keys), tc.op.Distinct, tc.rows, got, tc.want)
		}
	}
	var d Device
	d.Ops[plan.OpHashBuild] = OpCost{RowRate: 1e9, Miss: 100, Cache: 2 << 20}
	if got := d.Work(unique, plan.OpHashBuild, 8<<16, 1<<16); got != 1<<16 {
		t.Errorf("2^16 unique keys: %v ns, want %v (the table fits)", got, 1<<16)
	}
	n := float64(1<<16 + 1)
	if got, want := d.Work(unique, plan.OpHashBuild, 8*(1<<16+1), 1<<16+1), n+n*100*0.5; got != want {
		t.Errorf("2^16+1 unique keys: %v ns, want %v", got, want)
	}
	if got := d.Work(repeating, plan.OpHashBuild, 8<<16, 1<<16); got != 1<<16 {
		t.Errorf("repeating keys: %v ns, want %v (the table fits)", got, 1<<16)
	}
}

func TestDeviceWorkShared(t *testing.T) {
	var d Device
	d.Ops[plan.OpHashProbe] = OpCost{RowRate: 1e9, Miss: 100, Cache: 2 << 20}
	ops := []plan.Op{{Kind: plan.OpHashProbe, Selectivity: 1, Build: 0}}
	table := func(int) float64 { return 1 << 20 }
	alone := d.WorkShared(ops, plan.OpHashProbe, 8e6, 1e6, table, 1)
	if alone != 1e6 {
		t.Fatalf("alone: %v ns, want 1e6 (no miss term: the table fits)", alone)
	}
	if got := d.WorkTables(ops, plan.OpHashProbe, 8e6, 1e6, table); got != alone {
		t.Errorf("WorkTables = %v, want WorkShared with 1 sharer %v", got, alone)
	}
	// 4 MiB against 2 MiB: half the lookups miss, 1e6 rows x 100 ns x 1/2.
	if got, want := d.WorkShared(ops, plan.OpHashProbe, 8e6, 1e6, table, 4), 1e6+5e7; got != want {
		t.Errorf("4 sharers: %v ns, want %v", got, want)
	}
	defer func() {
		if recover() == nil {
			t.Error("WorkShared with 0 sharers did not panic")
		}
	}()
	d.WorkShared(ops, plan.OpHashProbe, 8e6, 1e6, table, 0)
}

func TestStorageCurve(t *testing.T) {
	s := Storage{Bandwidth: 1e9, Request: 1 << 20, TaskQD: 8,
		Curve: []QDPoint{{QD: 2, Frac: 0.5}, {QD: 4, Frac: 0.9}, {QD: 8, Frac: 1}}}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ q, want float64 }{
		{1, 0.25}, {2, 0.5}, {3, 0.7}, {4, 0.9}, {6, 0.95}, {8, 1}, {64, 1}, {0, 0},
	} {
		if got := s.Frac(tc.q); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("Frac(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	for _, tc := range []struct {
		b    int64
		want int
	}{{1, 1}, {1 << 20, 1}, {1<<20 + 1, 2}, {5 << 20, 5}, {64 << 20, 8}} {
		if got := s.TaskRequests(tc.b); got != tc.want {
			t.Errorf("TaskRequests(%d) = %d, want %d", tc.b, got, tc.want)
		}
	}
	if got := s.MaxBandwidth(); got != 1e9 {
		t.Errorf("MaxBandwidth = %v", got)
	}
	if (Transfer{Bandwidth: 2e9, Latency: 1000}).Ns(1e9) != 1000+5e8 {
		t.Error("Transfer.Ns")
	}
	bad := Storage{Bandwidth: 1, Curve: []QDPoint{{QD: 2, Frac: 0.5}, {QD: 2, Frac: 0.6}}}
	if bad.Validate() == nil {
		t.Error("non-increasing qd_curve accepted")
	}
}

// cpu_steal must be finite and not negative.
func TestStorageCPUSteal(t *testing.T) {
	if err := (&Storage{Bandwidth: 1e9, CPUSteal: 0.2}).Validate(); err != nil {
		t.Fatal(err)
	}
	for _, v := range []float64{-0.1, math.Inf(1), math.NaN()} {
		if (&Storage{Bandwidth: 1e9, CPUSteal: v}).Validate() == nil {
			t.Errorf("cpu_steal %v accepted", v)
		}
	}
}

func TestDeviceYAML(t *testing.T) {
	var d Device
	src := "launch: 5us\nreference: 4.5ms\nops:\n  scan: {fixed: 10us, bytes: 1TB/s}\n  filter: {rows: 2G/s, str_terms: 100M/s}\n"
	if err := yaml.Unmarshal([]byte(src), &d); err != nil {
		t.Fatal(err)
	}
	if d.Launch != 5000 || d.Reference != 4500000 || d.Ops[plan.OpScan] != (OpCost{Fixed: 10000, ByteRate: 1e12}) || d.Ops[plan.OpFilter].RowRate != 2e9 || d.Ops[plan.OpFilter].StrTermRate != 1e8 {
		t.Fatalf("decoded %+v", d)
	}
	for _, tc := range []struct{ src, want string }{
		{"launch: 5us\nops:\n  scna: {bytes: 1TB/s}\n", "line 3"},
		{"launch: 5us\nops:\n  scan: {bytez: 1TB/s}\n", "line 3"},
		{"launch: 5us\nlunch: 1us\n", "line 2"},
		{"launch: soon\n", "line 1"},
		{"launch: 5us\nreference: -3ms\n", "line 2"},
	} {
		err := yaml.Unmarshal([]byte(tc.src), &d)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one naming %s", tc.src, err, tc.want)
		}
	}
}

// Slowed(f) multiplies every compute price by f: a fused chain with a
// fixed, per-byte, per-row, per-term, output and cache-miss part, and the
// launch; profiled scales and the reference stay.
func TestDeviceSlowed(t *testing.T) {
	var d Device
	d.Launch, d.Reference = 1000, 5e6
	d.Ops[plan.OpFilter] = OpCost{Fixed: 300, ByteRate: 2e9, TermRate: 1e9, OutRate: 4e9, StrTermRate: 5e8}
	d.Ops[plan.OpHashProbe] = OpCost{RowRate: 1e8, Miss: 40, Cache: 1 << 20}
	d.Profiled = map[string]OpScale{"x": {Op: "filter", Scale: 2}}
	ops := []plan.Op{
		{Kind: plan.OpFilter, Selectivity: 0.5, OutWidth: 16, Expr: plan.Call{Fn: plan.FnLike, Args: []plan.Expr{plan.Col("s"), plan.Lit{Kind: plan.LitString, S: "%a%"}}}},
		{Kind: plan.OpHashProbe, Selectivity: 1, Build: 0},
	}
	table := func(int) float64 { return 4 << 20 }
	base := d.WorkTables(ops, plan.OpFilter, 8e6, 1e6, table)
	for _, f := range []float64{1, 1.5, 0.8} {
		s := d.Slowed(f)
		if got := s.WorkTables(ops, plan.OpFilter, 8e6, 1e6, table); math.Abs(got/base-f) > 1e-6 {
			t.Errorf("Slowed(%g): work %v, want %v", f, got, f*base)
		}
		if s.Launch != Duration(math.Round(1000*f)) || s.Reference != d.Reference || s.Profiled["x"].Scale != 2 || s.Ops[plan.OpHashProbe].Cache != 1<<20 {
			t.Errorf("Slowed(%g) = %+v", f, s)
		}
	}
	if d.Ops[plan.OpFilter].ByteRate != 2e9 {
		t.Error("Slowed changed its receiver")
	}
	for _, f := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Slowed(%g) did not panic", f)
				}
			}()
			d.Slowed(f)
		}()
	}
}

// An aggregate's cache term, partial or final, sees its group state
// (Groups·OutWidth), not the unit's input: the same unit costs more
// against a state past the cache, and a keyless aggregate has no state to
// miss on.
func TestAggregateWorkingSetIsItsState(t *testing.T) {
	const rows = 4 << 20 // a row per group: a final's state is not capped below its groups
	for _, kind := range []plan.OpKind{plan.OpAggPartial, plan.OpAggFinal} {
		var d Device
		d.Ops[kind] = OpCost{RowRate: 1e9, Miss: 50, Cache: 1 << 20}
		unit := func(groups int64, keys ...string) float64 {
			op := plan.Op{Kind: kind, Keys: keys, Groups: groups, OutWidth: 16, Selectivity: 1}
			return d.Work([]plan.Op{op}, kind, 1<<30, rows)
		}
		small, large := unit(1000, "k"), unit(4<<20, "k") // 16 KB and 64 MiB of state
		if want := float64(rows); math.Abs(small-want) > 1e-6 {
			t.Errorf("%s, state in cache: %g ns, want %g (rows only, though the 1 GiB input is past the cache)", kind, small, want)
		}
		// 64 MiB state, 1 MiB cache: a miss fraction of 63/64 on every row.
		if want := rows + rows*50*(1-1.0/64); math.Abs(large-want) > 1e-6 {
			t.Errorf("%s, state past the cache: %g ns, want %g", kind, large, want)
		}
		if got := unit(4 << 20); math.Abs(got-rows) > 1e-6 {
			t.Errorf("%s, no keys: %g ns, want %d (no state to miss on)", kind, got, rows)
		}
	}
	// A final's state has at most a group per input row: 1000 rows of a
	// shuffled final hold 16 KB however many groups the plan expects.
	var d Device
	d.Ops[plan.OpAggFinal] = OpCost{RowRate: 1e9, Miss: 50, Cache: 1 << 20}
	op := plan.Op{Kind: plan.OpAggFinal, Keys: []string{"k"}, Groups: 4 << 20, OutWidth: 16, Selectivity: 1}
	if got := d.Work([]plan.Op{op}, plan.OpAggFinal, 64<<20, 1000); math.Abs(got-1000) > 1e-6 {
		t.Errorf("final of 1000 rows, 4 Mi groups planned: %g ns, want 1000 (16 KB of state, in cache)", got)
	}
}

// TestFusedDevice: a device with fused prices a kernel as one pass over its
// input, whatever its operators (rows·Σterms on every row), Slowed slows
// it, and its keys are checked.
func TestFusedDevice(t *testing.T) {
	var d Device
	if err := yaml.Unmarshal([]byte("launch: 0s\nfused: {fixed: 10us, bytes: 1GB/s, terms: 1G/s}\n"), &d); err != nil {
		t.Fatal(err)
	}
	ops := []plan.Op{
		{Kind: plan.OpFilter, Selectivity: 0.1, Expr: plan.Lt(plan.Col("a"), plan.Int(3))},
		{Kind: plan.OpAggPartial, Expr: plan.Aggs{plan.Sum("s", plan.Mul(plan.Col("a"), plan.Col("b")))}},
	}
	terms := ops[0].Terms() + ops[1].Terms()
	want := 10_000 + 1e6 + 1e3*terms // 1e6 B at 1 B/ns, 1e3 rows x terms at 1/ns
	if got := d.Work(ops, plan.OpAggPartial, 1e6, 1e3); math.Abs(got-want) > 1e-6 {
		t.Fatalf("Work = %g, want %g", got, want)
	}
	slow := d.Slowed(2)
	if got := slow.Work(ops, plan.OpAggPartial, 1e6, 1e3); math.Abs(got-2*want) > 1e-6 {
		t.Fatalf("Slowed(2).Work = %g, want %g", got, 2*want)
	}
	err := yaml.Unmarshal([]byte("fused: {fixed: 10us, byte: 1GB/s}\n"), &d)
	if err == nil || !strings.Contains(err.Error(), `"byte"`) {
		t.Fatalf("unknown key in fused: %v", err)
	}
}

// A sort's key terms, text or not, count once per comparison: log2(rows)
// a row, so a sort's price per row grows with its input.
func TestSortTermsPerComparison(t *testing.T) {
	var d Device
	d.Ops[plan.OpSort] = OpCost{TermRate: 1e9, StrTermRate: 1e8}
	op := plan.Op{Kind: plan.OpSort, Keys: []string{"a", "b desc"}, StrKeys: 1, Selectivity: 1}
	for _, rows := range []int64{1024, 1 << 20} {
		l := math.Log2(float64(rows))
		// rows·2 keys·l at 1 ns a term + rows·1 text key·l at 10 ns.
		want := float64(rows)*2*l + float64(rows)*l*10
		if got := d.Work([]plan.Op{op}, plan.OpSort, rows*16, rows); math.Abs(got-want) > 1e-6*want {
			t.Errorf("sort of %d rows: %g ns, want %g", rows, got, want)
		}
	}
	if got, want := SortLog(1), 1.0; got != want {
		t.Errorf("SortLog(1) = %g, want %g (one comparison at least)", got, want)
	}
}

// A final aggregate leaves at most its groups: the sort after a gathered
// final is priced on the groups, not on every device's copy of them.
func TestFinalKeepsItsGroups(t *testing.T) {
	final := plan.Op{Kind: plan.OpAggFinal, Keys: []string{"k"}, Groups: 1000, OutWidth: 40}
	if b, r := Through([]plan.Op{final}, 4000*40, 4000); r != 1000 || b != 1000*40 {
		t.Errorf("final of 4000 rows into 1000 groups: %g rows, %g bytes out; want 1000 and 40000", r, b)
	}
	if b, r := Through([]plan.Op{final}, 600*40, 600); r != 600 || b != 600*40 {
		t.Errorf("final of 600 rows, 1000 groups: %g rows, %g bytes out; want 600 and 24000", r, b)
	}
	var d Device
	d.Ops[plan.OpSort] = OpCost{RowRate: 1e9}
	ops := []plan.Op{final, {Kind: plan.OpSort, Keys: []string{"k"}, Selectivity: 1}}
	if got := d.Work(ops, plan.OpSort, 4000*40, 4000); math.Abs(got-1000) > 1e-9 {
		t.Errorf("sort after the final: %g ns, want 1000 (its 1000 groups at 1 ns)", got)
	}
}
