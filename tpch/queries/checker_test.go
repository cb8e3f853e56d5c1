package queries

import (
	"strconv"
	"strings"
	"testing"

	"gostachio/plan"
)

// TestCheckerRejects makes sure the static checker (which TestPlansCheck
// relies on) catches each kind of mistake it claims to, on small plans
// that plan.Validate accepts.
func TestCheckerRejects(t *testing.T) {
	tables, err := Stats(0.01, 1<<17)
	if err != nil {
		t.Fatal(err)
	}
	nationHT := func(b *plan.Builder) int {
		return broadcastBuild(b, b.Scan("nation", "n_nationkey", "n_name"), "nation", "n_nationkey")
	}
	count := plan.Count("n")
	for _, tc := range []struct {
		name, err string
		build     func(b *plan.Builder)
	}{
		{"ok", "", func(b *plan.Builder) {
			ht := nationHT(b)
			p := b.Scan("supplier", "s_suppkey", "s_nationkey").
				Join(plan.JoinInner, ht, keys("s_nationkey"), keys("n_name"), 1, 8).
				Partial(25, 8, keys("n_name"), count).Gather()
			b.From(p).Final(25, 8, keys("n_name"), count).Sort("n desc").Output("n_name", "n")
		}},
		{"unknown column", `unknown column "s_name"`, func(b *plan.Builder) {
			p := b.Scan("supplier", "s_suppkey").Where(plan.Eq(col("s_name"), plan.Str("x")), 0.5).Gather()
			b.From(p).Output("s_suppkey")
		}},
		{"type error", "bad argument types", func(b *plan.Builder) {
			p := b.Scan("supplier", "s_suppkey").Where(plan.Like(col("s_suppkey"), "1%"), 0.5).Gather()
			b.From(p).Output("s_suppkey")
		}},
		{"case branch types", "bad argument types", func(b *plan.Builder) {
			p := b.Scan("lineitem", "l_extendedprice", "l_discount", "l_shipmode").
				Select(8, plan.As("x", plan.Case(plan.Eq(col("l_shipmode"), plan.Str("AIR")), discPrice(), plan.Int(0)))).Gather()
			b.From(p).Output("x")
		}},
		{"sum of text", "aggregate sum(s_name)", func(b *plan.Builder) {
			a := plan.Sum("x", col("s_name"))
			p := b.Scan("supplier", "s_name").Partial(1, 8, nil, a).Gather()
			b.From(p).Final(1, 8, nil, a).Output("x")
		}},
		{"duplicate column", `duplicate column "n_name"`, func(b *plan.Builder) {
			ht := nationHT(b)
			p := b.Scan("nation", "n_nationkey", "n_name").
				Join(plan.JoinInner, ht, keys("n_nationkey"), keys("n_name"), 1, 8).Gather()
			b.From(p).Output("n_nationkey")
		}},
		{"carry unknown", `carried column: unknown column "n_comment"`, func(b *plan.Builder) {
			ht := nationHT(b)
			p := b.Scan("supplier", "s_nationkey").
				Join(plan.JoinInner, ht, keys("s_nationkey"), keys("n_comment"), 1, 8).Gather()
			b.From(p).Output("s_nationkey")
		}},
		{"semi carries", "carries no columns", func(b *plan.Builder) {
			ht := nationHT(b)
			p := b.Scan("supplier", "s_nationkey").
				Join(plan.JoinSemi, ht, keys("s_nationkey"), keys("n_name"), 1, 8).Gather()
			b.From(p).Output("s_nationkey")
		}},
		{"key types", "probe key l_linenumber is int32, build key n_nationkey is int64", func(b *plan.Builder) {
			ht := nationHT(b)
			p := b.Scan("lineitem", "l_linenumber").
				Join(plan.JoinSemi, ht, keys("l_linenumber"), nil, 1, 8).Gather()
			b.From(p).Output("l_linenumber")
		}},
		{"partial not last", "a Partial must be the last streaming op", func(b *plan.Builder) {
			p := b.Scan("nation", "n_name").Partial(25, 8, keys("n_name"), count).
				Where(plan.Gt(col("n"), plan.Int(0)), 0.5).Gather()
			b.From(p).Final(25, 8, keys("n_name"), count).Output("n_name")
		}},
		{"shuffle not on group keys", "not a group key", func(b *plan.Builder) {
			p := b.Scan("nation", "n_name", "n_regionkey").Partial(25, 8, keys("n_name"), count).Shuffle("n")
			f := b.From(p).Final(25, 8, keys("n_name"), count).Gather()
			b.From(f).Output("n_name")
		}},
		{"final differs", "differs from its Partial", func(b *plan.Builder) {
			p := b.Scan("nation", "n_name").Partial(25, 8, keys("n_name"), count).Gather()
			b.From(p).Final(25, 8, keys("n_name"), plan.Count("m")).Output("n_name")
		}},
		{"partial states without final", "without a Final", func(b *plan.Builder) {
			p := b.Scan("nation", "n_name").Partial(25, 8, keys("n_name"), count).Gather()
			b.From(p).Sort("n_name").Output("n_name")
		}},
		{"build from scan", "hash build fed by a scan", func(b *plan.Builder) {
			ht := b.Scan("nation", "n_nationkey").HashBuild("n_nationkey")
			p := b.Scan("supplier", "s_nationkey").Join(plan.JoinSemi, ht, keys("s_nationkey"), nil, 1, 8).Gather()
			b.From(p).Output("s_nationkey")
		}},
		{"probe not shuffled", "not co-partitioned", func(b *plan.Builder) {
			ht := shuffleBuild(b, b.Scan("orders", "o_orderkey"), "orders", "o_orderkey")
			p := b.Scan("lineitem", "l_orderkey").Join(plan.JoinSemi, ht, keys("l_orderkey"), nil, 1, 8).Gather()
			b.From(p).Output("l_orderkey")
		}},
		{"probe shuffled on another key", "not co-partitioned", func(b *plan.Builder) {
			ht := shuffleBuild(b, b.Scan("orders", "o_orderkey"), "orders", "o_orderkey")
			l := b.Scan("lineitem", "l_orderkey", "l_partkey").Shuffle("l_partkey")
			p := b.From(l).Join(plan.JoinSemi, ht, keys("l_orderkey"), nil, 1, 8).Gather()
			b.From(p).Output("l_orderkey")
		}},
		{"partitioning lost by a projection", "not co-partitioned", func(b *plan.Builder) {
			ht := shuffleBuild(b, b.Scan("orders", "o_orderkey"), "orders", "o_orderkey")
			l := b.Scan("lineitem", "l_orderkey").Shuffle("l_orderkey")
			p := b.From(l).Select(8, plan.As("k", plan.Add(col("l_orderkey"), plan.Int(0)))).
				Join(plan.JoinSemi, ht, keys("k"), nil, 1, 8).Gather()
			b.From(p).Output("k")
		}},
		{"gather of broadcast", "every row sent once per device", func(b *plan.Builder) {
			bc := b.Scan("nation", "n_name").Broadcast()
			g := b.From(bc).Gather()
			b.From(g).Output("n_name")
		}},
		{"aggregate of broadcast", "counted once per device", func(b *plan.Builder) {
			bc := b.Scan("nation", "n_name").Broadcast()
			g := b.From(bc).Partial(1, 8, nil, count).Gather()
			b.From(g).Final(1, 8, nil, count).Output("n")
		}},
		{"result not gathered", "want on device 0", func(b *plan.Builder) {
			s := b.Scan("nation", "n_name").Shuffle("n_name")
			b.From(s).Sort("n_name").Output("n_name")
		}},
		{"unread pipeline", "nobody reads its output", func(b *plan.Builder) {
			nationHT(b)
			g := b.Scan("nation", "n_name").Gather()
			b.From(g).Output("n_name")
		}},
		{"unknown output column", `result column: unknown column "x"`, func(b *plan.Builder) {
			g := b.Scan("nation", "n_name").Gather()
			b.From(g).Output("x")
		}},
		{"prune on text", "prune range", func(b *plan.Builder) {
			g := b.Scan("nation", "n_name").Prune("n_name", 0, 1).Gather()
			b.From(g).Output("n_name")
		}},
		{"bad selectivity", "selectivity", func(b *plan.Builder) {
			g := b.Scan("nation", "n_name").Where(plan.Eq(col("n_name"), plan.Str("x")), 0).Gather()
			b.From(g).Output("n_name")
		}},
		{"no groups", "estimates", func(b *plan.Builder) {
			p := b.Scan("nation", "n_name").Partial(0, 8, keys("n_name"), count).Gather()
			b.From(p).Final(25, 8, keys("n_name"), count).Output("n_name")
		}},
	} {
		b := plan.NewBuilder(tc.name, tables)
		tc.build(b)
		p, err := b.Build()
		if err != nil {
			t.Errorf("%s: plan.Build: %v", tc.name, err)
			continue
		}
		_, err = checkPlan(p)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
		}
	}
}

// TestInterpreterDevices checks the interpreter's distribution semantics
// on plans the static checker accepts: a gathered no-key aggregate has its
// one row on device 0 only, and a shuffled join finds every match.
func TestInterpreterDevices(t *testing.T) {
	const sf = 0.01
	ds := loadData(t, sf)
	tables, err := Stats(sf, 1<<17)
	if err != nil {
		t.Fatal(err)
	}
	b := plan.NewBuilder("count", tables)
	o := b.Scan("orders", "o_orderkey")
	oht := shuffleBuild(b, o, "orders", "o_orderkey")
	l := b.Scan("lineitem", "l_orderkey").Shuffle("l_orderkey")
	cnt := plan.Count("lines")
	p := b.From(l).Join(plan.JoinSemi, oht, keys("l_orderkey"), nil, 1, 8).Partial(1, 8, nil, cnt).Gather()
	b.From(p).Final(1, 8, nil, cnt).Output("lines")
	pl, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	c, err := checkPlan(pl)
	if err != nil {
		t.Fatal(err)
	}
	lines := ds.tables["lineitem"].Rows
	for w := 1; w <= 4; w++ {
		res, err := run(c, ds, w)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.rows) != 1 || res.rows[0][0] != strconv.Itoa(lines) {
			t.Errorf("%d devices: %v, want [[%d]]", w, res.rows, lines)
		}
	}
}
