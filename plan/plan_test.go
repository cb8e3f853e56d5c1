package plan

import (
	"strings"
	"testing"
	"time"
)

func TestDay(t *testing.T) {
	if d := Day(1970, time.January, 2); d != 1 {
		t.Errorf("Day(1970-01-02) = %d", d)
	}
	// 1995-03-15: 25 years incl. 6 leap days (72..92) + 31 + 28 + 14.
	if d := Day(1995, time.March, 15); d != 25*365+6+31+28+14 {
		t.Errorf("Day(1995-03-15) = %d", d)
	}
}

func TestSurvives(t *testing.T) {
	tb := TableStats{Name: "t", Columns: []string{"a", "b"}, Chunks: []ChunkStats{
		{Rows: 1, Bytes: []int64{8, 8}, Stats: []MinMax{{true, 0, 99}, {}}},
		{Rows: 1, Bytes: []int64{8, 8}, Stats: []MinMax{{true, 100, 199}, {}}},
		{Rows: 1, Bytes: []int64{8, 8}},
	}}
	for _, tc := range []struct {
		r    []Range
		want [3]bool
	}{
		{[]Range{{"a", 50, 60}}, [3]bool{true, false, true}},
		{[]Range{{"a", 99, 100}}, [3]bool{true, true, true}},
		{[]Range{{"a", 200, 300}}, [3]bool{false, false, true}},
		{[]Range{{"b", 0, 0}}, [3]bool{true, true, true}},
		{[]Range{{"a", 0, 10}, {"a", 150, 160}}, [3]bool{false, false, true}},
	} {
		for i := range 3 {
			if got := tb.Survives(i, tc.r); got != tc.want[i] {
				t.Errorf("Survives(%d, %v) = %v", i, tc.r, got)
			}
		}
	}
}

func TestBuilderAndValidateErrors(t *testing.T) {
	tables := []TableStats{{Name: "t", Columns: []string{"a"}, Chunks: []ChunkStats{{Rows: 10, Bytes: []int64{80}}}}}
	for _, tc := range []struct {
		name  string
		build func(b *Builder)
		err   string
	}{
		{"unknown table", func(b *Builder) { b.Scan("u", "a").Result() }, `unknown table "u"`},
		{"unknown column", func(b *Builder) { b.Scan("t", "z").Result() }, `no column "z"`},
		{"empty", func(b *Builder) {}, "no pipelines"},
		{"no breaker", func(b *Builder) { b.Scan("t", "a").Filter("x", 0.5).Done() }, "not a pipeline breaker"},
		{"breaker in scan", func(b *Builder) { b.Scan("t", "a").Sort("a").Result() }, "breaker before the last op"},
		{"forward input", func(b *Builder) { b.From(3).Result() }, "not an earlier one"},
		{"probe non-build", func(b *Builder) {
			g := b.Scan("t", "a").Gather()
			b.Scan("t", "a").Probe(g, 1, 8, "a").Result()
		}, "not an earlier hash build"},
		{"negative selectivity", func(b *Builder) { b.Scan("t", "a").Filter("x", -1).Result() }, "negative estimate"},
		{"distinct keys past 1 a row", func(b *Builder) { b.Scan("t", "a").HashBuildRepeating(1.5, "a") }, "distinct keys per row 1.5"},
		{"ok", func(b *Builder) {
			b.Scan("t", "a").HashBuildRepeating(0.25, "a")
			h := b.Scan("t", "a").HashBuild("a")
			b.Scan("t", "a").Probe(h, 1, 8, "a").AggPartial("c", 1, 8).Gather()
		}, ""},
	} {
		b := NewBuilder(tc.name, tables)
		tc.build(b)
		_, err := b.Build()
		if tc.err == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
		}
	}
	bad := TableStats{Name: "x", Columns: []string{"a", "b"}, Chunks: []ChunkStats{{Rows: 1, Bytes: []int64{1}}}}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "1 column sizes, want 2") {
		t.Errorf("Validate = %v", err)
	}
}

func TestOpKindNames(t *testing.T) {
	for k := OpScan; int(k) < NumOpKinds; k++ {
		back, err := ParseOpKind(k.String())
		if err != nil || back != k {
			t.Errorf("ParseOpKind(%q) = %v, %v", k, back, err)
		}
	}
	if _, err := ParseOpKind("bogus"); err == nil {
		t.Error("bogus kind parsed")
	}
}

// Terms counts one comparison per IN item; StrTerms the terms on strings:
// LIKE, SUBSTRING, comparisons with a string literal (one per IN item).
func TestOpTermsAndStrTerms(t *testing.T) {
	c := func(fn Fn, args ...Expr) Call { return Call{Fn: fn, Args: args} }
	for _, tc := range []struct {
		name       string
		e          Expr
		terms, str float64
	}{
		{"a < 5", c(FnLt, Col("a"), Int(5)), 2, 0},
		{"a in (1, 2, 3)", c(FnIn, Col("a"), Int(1), Int(2), Int(3)), 5, 0},
		{"s in ('x', 'y')", c(FnIn, Col("s"), Str("x"), Str("y")), 4, 2},
		{"s like 'a%'", c(FnLike, Col("s"), Str("a%")), 2, 1},
		{"substring(s, 1, 2) not in ('13', '31', '23')", c(FnNotIn, c(FnSubstr, Col("s"), Int(1), Int(2)), Str("13"), Str("31"), Str("23")), 6, 4},
		{"a < 5 and s = 'R'", c(FnAnd, c(FnLt, Col("a"), Int(5)), c(FnEq, Col("s"), Str("R"))), 5, 1},
	} {
		op := Op{Kind: OpFilter, Expr: tc.e}
		if got := op.Terms(); got != tc.terms {
			t.Errorf("%s: Terms %v, want %v", tc.name, got, tc.terms)
		}
		if got := op.StrTerms(); got != tc.str {
			t.Errorf("%s: StrTerms %v, want %v", tc.name, got, tc.str)
		}
	}
}
