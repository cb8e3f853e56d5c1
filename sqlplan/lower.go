package sqlplan

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"gostachio/plan"
)

// gatherGroups is the most groups an aggregation merges on one worker
// (a Gather to worker 0); more are shuffled on the group keys and merged
// where they land. A hundred thousand groups of a few dozen bytes merge
// in milliseconds, less than a shuffle's round of messages costs.
const gatherGroups = 100_000

// distKind says how a stream's rows lie over the workers.
type distKind uint8

const (
	dSpread distKind = iota // scan units dealt to any worker
	dPart                   // hash-partitioned on keys
	dSingle                 // all on worker 0
)

// stream is an open pipeline: its columns, distribution, estimated rows
// and the relations joined into it.
type stream struct {
	p    *plan.Pipe
	cols []string
	dist distKind
	keys []string
	rows float64
	rels map[*rel]bool
}

// lowering is the state of lowering one block.
type lowering struct {
	p   *planner
	blk *block
	// local are the single-relation conditions pushed to each relation;
	// conds the others, with applied marking those done.
	local   map[*rel][]plan.Expr
	conds   []plan.Expr
	applied []bool
	// class maps a column joined by equalities to its class; members
	// lists each class's columns in order.
	class   map[string]int
	members [][]string
	// attached marks semi, anti and left outer relations joined.
	attached map[*rel]bool
	// upper are the columns the block needs after its joins.
	upper []string
	rows  map[*rel]float64
	// bcast are the broadcast hash tables of the block's inner joins on
	// one key: relations opened later semi-join them on a column joined
	// to that key by equalities when it keeps few of their rows.
	bcast []bcastBuild
}

// bcastBuild is a broadcast hash table on key with distinct keys.
type bcastBuild struct {
	build    int
	key      string
	distinct float64
}

func (p *planner) rowsWidth(cols []string) int {
	w := 0
	for _, c := range cols {
		if col := p.cols[c]; col != nil {
			w += col.width
		} else {
			w += 8
		}
	}
	return max(w, 1)
}

// lowerBlock plans blk into a stream whose columns are blk's outputs.
func (p *planner) lowerBlock(blk *block) (*stream, error) {
	l := &lowering{p: p, blk: blk, local: map[*rel][]plan.Expr{}, class: map[string]int{}, attached: map[*rel]bool{}, rows: map[*rel]float64{}}
	if len(blk.countDistincts) > 1 {
		return l.severalDistinct()
	}
	if blk.input != nil {
		return l.fromInput()
	}
	var inner []*rel
	for _, r := range blk.rels {
		if r.kind == relInner {
			inner = append(inner, r)
		}
	}
	if len(inner) == 0 {
		return nil, p.errAt(blk.pos, "a query block needs at least one table joined by its FROM")
	}
	// Conditions: split, factor ORs, push single-relation ones down, and
	// read column equalities between relations as join edges.
	var all []plan.Expr
	for _, c := range blk.conds {
		all = append(all, splitAnd(c.e)...)
	}
	all = p.factorOrs(all)
	for _, c := range all {
		rs := p.relsOf(c)
		if a, b, ok := p.joinEdge(c); ok && len(rs) == 2 {
			l.union(a, b)
			continue
		}
		if len(rs) == 1 {
			for r := range rs {
				if r.kind == relInner {
					l.local[r] = append(l.local[r], c)
					rs = nil
				}
			}
			if rs == nil {
				continue
			}
		}
		l.conds = append(l.conds, c)
	}
	l.applied = make([]bool, len(l.conds))
	// Columns needed after the joins.
	for _, k := range blk.keys {
		l.upper = colsOf(k.E, l.upper)
	}
	for _, a := range blk.aggs {
		if a.Arg != nil {
			l.upper = colsOf(a.Arg, l.upper)
		}
	}
	for _, cd := range blk.countDistincts {
		l.upper = colsOf(cd.arg.e, l.upper)
	}
	if !blk.grouped {
		for _, o := range blk.outs {
			l.upper = colsOf(o.e.e, l.upper)
		}
	}
	for _, r := range inner {
		l.rows[r] = p.relRows(r, l.local[r])
	}
	if m := blk.magic; m != nil {
		l.rows[m.rel] = math.Max(1, l.rows[m.rel]*m.sel)
	}
	var s *stream
	var err error
	eager := l.eagerSplit(inner)
	if eager != nil {
		s, err = l.eagerJoin(eager)
	} else {
		s, err = l.joinSet(inner)
	}
	if err != nil {
		return nil, err
	}
	for i, c := range l.conds {
		if !l.applied[i] {
			return nil, p.errAt(blk.pos, "condition %s could not be placed", c)
		}
	}
	for _, r := range blk.rels {
		if r.kind != relInner && !l.attached[r] {
			return nil, p.errAt(r.pos, "subquery could not be joined")
		}
	}
	if blk.grouped {
		if eager != nil {
			// The block's aggregates merge the eager aggregation's.
			b := *blk
			b.aggs = eager.aggs
			l.blk = &b
		}
		if s, err = l.aggregate(s); err != nil {
			return nil, err
		}
	} else {
		// A column selected twice is projected once (see having).
		var outs []plan.Named
		for _, o := range blk.outs {
			if !slices.ContainsFunc(outs, func(n plan.Named) bool { return n.Name == o.name }) {
				outs = append(outs, plan.As(o.name, o.e.e))
			}
		}
		s = p.project(s, outs)
	}
	if blk.distinct {
		s = p.dedup(s, names2(blk.outs))
	}
	return s, nil
}

// names2 lists the columns of outs, each once (a column selected twice
// is one column of the stream).
func names2(outs []output) []string {
	var out []string
	for _, o := range outs {
		if !slices.Contains(out, o.name) {
			out = append(out, o.name)
		}
	}
	return out
}

// splitAnd lists the conjuncts of e.
func splitAnd(e plan.Expr) []plan.Expr {
	if c, ok := e.(plan.Call); ok && c.Fn == plan.FnAnd {
		var out []plan.Expr
		for _, a := range c.Args {
			out = append(out, splitAnd(a)...)
		}
		return out
	}
	return []plan.Expr{e}
}

// factorOrs pulls the conjuncts common to every disjunct of an OR out of
// it, and adds, for each relation every disjunct constrains alone, the
// disjunction of those constraints (which scans can apply early); the
// full OR stays as a condition.
func (p *planner) factorOrs(conds []plan.Expr) []plan.Expr {
	var out []plan.Expr
	for _, c := range conds {
		call, ok := c.(plan.Call)
		if !ok || call.Fn != plan.FnOr {
			out = append(out, c)
			continue
		}
		ds := make([][]plan.Expr, len(call.Args))
		for i, d := range call.Args {
			ds[i] = splitAnd(d)
		}
		var common []plan.Expr
		for _, x := range ds[0] {
			in := true
			for _, d := range ds[1:] {
				if !slices.ContainsFunc(d, func(y plan.Expr) bool { return y.String() == x.String() }) {
					in = false
				}
			}
			if in {
				common = append(common, x)
			}
		}
		out = append(out, common...)
		rest := make([]plan.Expr, len(ds))
		for i, d := range ds {
			d = slices.DeleteFunc(slices.Clone(d), func(y plan.Expr) bool {
				return slices.ContainsFunc(common, func(x plan.Expr) bool { return x.String() == y.String() })
			})
			if len(d) == 0 {
				rest = nil
				break
			}
			rest[i] = and(d)
		}
		if rest == nil {
			continue // one disjunct is all common: the OR holds
		}
		out = append(out, plan.Or(rest...))
		// Per-relation disjunctions.
		var rels []*rel
		for _, d := range ds {
			for _, x := range d {
				if rs := p.relsOf(x); len(rs) == 1 {
					for r := range rs {
						if !slices.Contains(rels, r) {
							rels = append(rels, r)
						}
					}
				}
			}
		}
		slices.SortFunc(rels, func(a, b *rel) int { return a.id - b.id })
		for _, r := range rels {
			var parts []plan.Expr
			for _, d := range ds {
				var mine []plan.Expr
				for _, x := range d {
					if rs := p.relsOf(x); len(rs) == 1 && rs[r] && !slices.ContainsFunc(common, func(y plan.Expr) bool { return y.String() == x.String() }) {
						mine = append(mine, x)
					}
				}
				if len(mine) == 0 {
					parts = nil
					break
				}
				parts = append(parts, and(mine))
			}
			if len(parts) > 0 {
				out = append(out, plan.Or(parts...))
			}
		}
	}
	return out
}

func and(xs []plan.Expr) plan.Expr {
	if len(xs) == 1 {
		return xs[0]
	}
	return plan.And(xs...)
}

// relsOf is the set of relations whose columns e reads.
func (p *planner) relsOf(e plan.Expr) map[*rel]bool {
	m := map[*rel]bool{}
	for _, n := range colsOf(e, nil) {
		if c := p.cols[n]; c != nil && c.rel != nil {
			m[c.rel] = true
		}
	}
	return m
}

// joinEdge reads e as an equality of columns of two inner relations.
func (p *planner) joinEdge(e plan.Expr) (string, string, bool) {
	c, ok := e.(plan.Call)
	if !ok || c.Fn != plan.FnEq {
		return "", "", false
	}
	a, aok := c.Args[0].(plan.Col)
	b, bok := c.Args[1].(plan.Col)
	if !aok || !bok {
		return "", "", false
	}
	ca, cb := p.cols[string(a)], p.cols[string(b)]
	if ca == nil || cb == nil || ca.rel == nil || cb.rel == nil || ca.rel == cb.rel || ca.t != cb.t ||
		ca.rel.kind != relInner || cb.rel.kind != relInner {
		return "", "", false
	}
	return string(a), string(b), true
}

func (l *lowering) union(a, b string) {
	ia, oka := l.class[a]
	ib, okb := l.class[b]
	switch {
	case !oka && !okb:
		l.members = append(l.members, []string{a, b})
		l.class[a], l.class[b] = len(l.members)-1, len(l.members)-1
	case oka && !okb:
		l.members[ia] = append(l.members[ia], b)
		l.class[b] = ia
	case !oka && okb:
		l.members[ib] = append(l.members[ib], a)
		l.class[a] = ib
	case ia != ib:
		for _, m := range l.members[ib] {
			l.class[m] = ia
		}
		l.members[ia] = append(l.members[ia], l.members[ib]...)
		l.members[ib] = nil
	}
}

// relRows estimates a relation's rows after its own conditions.
func (p *planner) relRows(r *rel, local []plan.Expr) float64 {
	var rows float64
	if r.table != nil {
		rows = float64(r.table.Rows())
	} else {
		rows = p.blockRows(r.sub)
	}
	if len(local) > 0 {
		rows *= p.selectivity(and(local))
	}
	return math.Max(1, rows)
}

// blockRows estimates a block's output rows: its largest relation after
// its conditions, shrunk by its joins' conditions; an aggregation's
// groups (the product of the keys' distinct values, at most the rows).
func (p *planner) blockRows(b *block) float64 {
	rows := 1.0
	for _, r := range b.rels {
		if r.kind != relInner {
			continue
		}
		n := 0.0
		if r.table != nil {
			n = float64(r.table.Rows())
		} else {
			n = p.blockRows(r.sub)
		}
		for _, c := range b.conds {
			if rs := p.relsOf(c.e); len(rs) == 1 && rs[r] {
				n *= p.selectivity(c.e)
			}
		}
		rows = math.Max(rows, n)
	}
	if b.grouped {
		g := 1.0
		for _, k := range b.keys {
			g *= p.exprDistinct(k.E)
		}
		g = math.Max(1, math.Min(rows, g))
		p.notePerGroup(b.aggs, rows, g)
		rows = g
		if len(b.having) > 0 {
			hs := make([]plan.Expr, len(b.having))
			for i, h := range b.having {
				hs[i] = h.e
			}
			rows *= p.selectivity(and(hs))
		}
	}
	return math.Max(1, rows)
}

// notePerGroup records in aggs' output columns that in input rows form
// groups groups, for the estimates of conditions on them.
func (p *planner) notePerGroup(aggs []plan.Agg, in, groups float64) {
	for _, a := range aggs {
		if c := p.cols[a.As]; c != nil && c.agg != nil {
			c.agg.perGroup = math.Max(1, in/math.Max(1, groups))
		}
	}
}

// distinctIn is column c's distinct values among rows rows.
func (p *planner) distinctIn(c string, rows float64) float64 {
	d := 1000.0
	if col := p.cols[c]; col != nil && col.distinct > 0 {
		d = col.distinct
	}
	return math.Max(1, math.Min(d, rows))
}

// keysBetween pairs the columns joining relation sets a and b: one pair
// per equality class with members on both sides, taken among acols and
// bcols (the streams' columns) where those are given.
func (l *lowering) keysBetween(a, b map[*rel]bool, acols, bcols []string) (ka, kb []string) {
	for _, ms := range l.members {
		var x, y string
		for _, m := range ms {
			r := l.p.cols[m].rel
			if a[r] && x == "" && (acols == nil || slices.Contains(acols, m)) {
				x = m
			}
			if b[r] && y == "" && (bcols == nil || slices.Contains(bcols, m)) {
				y = m
			}
		}
		if x != "" && y != "" {
			ka, kb = append(ka, x), append(kb, y)
		}
	}
	return ka, kb
}

// keyDistinct is column c's distinct values among rows rows of the
// relations rels: at most those of any of them joined to c by
// equalities, after its own conditions.
func (l *lowering) keyDistinct(c string, rows float64, rels map[*rel]bool) float64 {
	d := l.p.distinctIn(c, rows)
	if cl, ok := l.class[c]; ok {
		for _, m := range l.members[cl] {
			if r := l.p.cols[m].rel; rels[r] && l.rows[r] > 0 {
				d = math.Min(d, l.p.distinctIn(m, l.rows[r]))
			}
		}
	}
	return d
}

// fanout estimates rows of a join per row of the probe side: build rows
// over the larger distinct count of the keys' combinations on either
// side (containment). A side's combinations are the product of its keys'
// distinct counts, at most its rows; when every probe key has no more
// distinct values than its build key, the probe's combinations are taken
// to be among the build's (a foreign key of several columns).
func (l *lowering) fanout(probeRows, buildRows float64, pk, bk []string, prels, brels map[*rel]bool) float64 {
	dp, db := 1.0, 1.0
	contained := true
	for i := range pk {
		x, y := l.keyDistinct(pk[i], probeRows, prels), l.keyDistinct(bk[i], buildRows, brels)
		dp, db = dp*x, db*y
		contained = contained && x <= y
	}
	dp, db = math.Min(dp, math.Max(1, probeRows)), math.Min(db, math.Max(1, buildRows))
	if contained {
		dp = math.Min(dp, db)
	}
	return buildRows / math.Max(dp, db)
}

func setOf(rs []*rel) map[*rel]bool {
	m := map[*rel]bool{}
	for _, r := range rs {
		m[r] = true
	}
	return m
}

// joinSet joins the inner relations rs: the largest probes, each other
// relation joins the tree where it shrinks rows most (a spanning tree
// grown by the smallest fan-out, Prim's way), and each subtree of the
// largest relation is joined on its own and built.
func (l *lowering) joinSet(rs []*rel) (*stream, error) {
	root := rs[0]
	for _, r := range rs[1:] {
		if l.rows[r] > l.rows[root] {
			root = r
		}
	}
	if alt := l.magicRoot(root, rs); alt != nil {
		root = alt
	}
	parent, fan := l.spanning(rs, root)
	// A subtree shrinks the rows by its fan-out times its own subtrees'
	// (those below 1): the most reducing subtrees join first.
	var reduce func(c *rel) float64
	reduce = func(c *rel) float64 {
		f := fan[c]
		for _, x := range rs {
			if parent[x] == c {
				f *= math.Min(1, reduce(x))
			}
		}
		return f
	}
	var children []*rel
	red := map[*rel]float64{}
	for _, c := range rs {
		if parent[c] == root {
			children = append(children, c)
			red[c] = reduce(c)
		}
	}
	slices.SortStableFunc(children, func(a, b *rel) int {
		switch {
		case red[a] < red[b]:
			return -1
		case red[a] > red[b]:
			return 1
		}
		return 0
	})
	children = l.orderChildren(root, rs, children, parent, red)
	s, err := l.open(root)
	if err != nil {
		return nil, err
	}
	if err := l.applyReady(s); err != nil {
		return nil, err
	}
	for _, c := range children {
		var sub []*rel
		for _, r := range rs {
			for x := r; x != nil; x = parent[x] {
				if x == c {
					sub = append(sub, r)
					break
				}
			}
		}
		if len(sub) == 1 {
			s = l.shareInput(s, sub[0])
			s = l.magicFor(s, sub[0])
		}
		b, err := l.joinSet(sub)
		if err != nil {
			return nil, err
		}
		pk, bk := l.keysBetween(s.rels, b.rels, s.cols, b.cols)
		// Carry what is still read, except build keys needed only to
		// join: the probe side holds their equal.
		direct := l.needed(b, setUnion(s.rels, b.rels), false)
		carry := slices.DeleteFunc(l.needed(b, setUnion(s.rels, b.rels), true), func(x string) bool {
			return slices.Contains(bk, x) && !slices.Contains(direct, x)
		})
		if s, err = l.join(s, b, pk, bk, plan.JoinInner, carry); err != nil {
			return nil, err
		}
		for r := range b.rels {
			s.rels[r] = true
		}
		if err := l.applyReady(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// spanning grows the join tree of rs from root: each other relation
// joins the tree where it shrinks rows most (the smallest fan-out,
// Prim's way); parent is where each joins, fan its fan-out there.
func (l *lowering) spanning(rs []*rel, root *rel) (parent map[*rel]*rel, fan map[*rel]float64) {
	parent, fan = map[*rel]*rel{}, map[*rel]float64{}
	in := map[*rel]bool{root: true}
	for len(in) < len(rs) {
		var best, bestParent *rel
		bestFan := math.Inf(1)
		for _, c := range rs {
			if in[c] {
				continue
			}
			for _, t := range rs {
				if !in[t] {
					continue
				}
				pk, bk := l.keysBetween(map[*rel]bool{t: true}, map[*rel]bool{c: true}, nil, nil)
				if len(pk) == 0 {
					continue
				}
				f := l.fanout(l.rows[t], l.rows[c], pk, bk, map[*rel]bool{t: true}, map[*rel]bool{c: true})
				if f < bestFan {
					best, bestParent, bestFan = c, t, f
				}
			}
		}
		if best == nil {
			// Disconnected: a cross join (a scalar subquery's row).
			for _, c := range rs {
				if !in[c] {
					best, bestParent, bestFan = c, root, l.rows[c]
					break
				}
			}
		}
		in[best], parent[best], fan[best] = true, bestParent, bestFan
	}
	return parent, fan
}

// joinRows estimates the rows of joining rs: the largest relation's
// times the fan-outs of the others.
func (l *lowering) joinRows(rs []*rel) float64 {
	root := rs[0]
	for _, r := range rs[1:] {
		if l.rows[r] > l.rows[root] {
			root = r
		}
	}
	rows := l.rows[root]
	_, fan := l.spanning(rs, root)
	for _, f := range fan {
		rows *= f
	}
	return math.Max(1, rows)
}

func setUnion(a, b map[*rel]bool) map[*rel]bool {
	m := map[*rel]bool{}
	for r := range a {
		m[r] = true
	}
	for r := range b {
		m[r] = true
	}
	return m
}

// needed lists the columns of s that are still to be read by something
// outside the relations done: conditions not applied, relations not
// attached, the block's upper needs, and a member of each equality class
// that relations outside done still join on.
func (l *lowering) needed(s *stream, done map[*rel]bool, classes bool) []string {
	want := map[string]bool{}
	for _, c := range l.upper {
		want[c] = true
	}
	for i, c := range l.conds {
		if !l.applied[i] {
			for _, n := range colsOf(c, nil) {
				want[n] = true
			}
		}
	}
	for _, r := range l.blk.rels {
		if r.kind != relInner && !l.attached[r] {
			for _, k := range r.outerKeys {
				want[k] = true
			}
		}
	}
	for _, ms := range l.members {
		if !classes {
			break
		}
		open := false
		for _, m := range ms {
			if !done[l.p.cols[m].rel] {
				open = true
			}
		}
		if !open {
			continue
		}
		for _, m := range ms {
			if slices.Contains(s.cols, m) {
				want[m] = true
				break
			}
		}
	}
	var out []string
	for _, c := range s.cols {
		if want[c] {
			out = append(out, c)
		}
	}
	return out
}

// open starts the stream of one relation with its own conditions.
func (l *lowering) open(r *rel) (*stream, error) {
	p := l.p
	local := l.local[r]
	s := &stream{rels: map[*rel]bool{r: true}}
	if r.table != nil {
		want := map[string]bool{}
		for _, c := range local {
			for _, n := range colsOf(c, nil) {
				want[n] = true
			}
		}
		tmp := &stream{cols: names(r.cols)}
		for _, n := range l.needed(tmp, map[*rel]bool{r: true}, true) {
			want[n] = true
		}
		if m := l.blk.magic; m != nil && m.rel == r {
			for _, n := range m.cols {
				want[n] = true
			}
		}
		transfers := l.transfers(r)
		for _, t := range transfers {
			want[t.col] = true
		}
		var src, cols []string
		renamed := false
		for _, c := range r.cols {
			if want[c.name] {
				src = append(src, c.src)
				cols = append(cols, c.name)
				renamed = renamed || c.name != c.src
			}
		}
		if len(cols) == 0 {
			// A scan reads at least one column: the narrowest.
			best := r.cols[0]
			for _, c := range r.cols {
				if c.width < best.width {
					best = c
				}
			}
			src, cols, renamed = []string{best.src}, []string{best.name}, best.name != best.src
		}
		s.p = p.b.Scan(r.table.Name, src...).Named(fmt.Sprintf("scan %s", r.alias))
		s.rows = float64(r.table.Rows())
		for _, c := range local {
			for _, cj := range splitAnd(c) {
				call, ok := cj.(plan.Call)
				if !ok {
					continue
				}
				if col, lo, hi, ok := p.rangeOf(call); ok && lo <= hi {
					s.p.Prune(p.cols[col].src, lo, hi)
				}
			}
		}
		if renamed {
			ns := make([]plan.Named, len(cols))
			for i := range cols {
				ns[i] = plan.As(cols[i], plan.Col(src[i]))
			}
			s.p.Select(p.rowsWidth(cols), ns...)
		}
		s.cols = cols
	} else {
		sub, err := p.lowerShared(r.sub)
		if err != nil {
			return nil, err
		}
		ns := make([]plan.Named, len(r.out))
		for i, o := range r.sub.outs[:len(r.out)] {
			ns[i] = plan.As(r.out[i].name, plan.Col(o.name))
		}
		*s = *sub
		s.rels = map[*rel]bool{r: true}
		s = p.project(s, ns)
	}
	if len(local) > 0 {
		pred := and(local)
		sel := p.selectivity(pred)
		s.p.Where(pred, sel)
		s.rows *= sel
	}
	if m := l.blk.magic; m != nil && m.rel == r {
		sel := math.Max(minSel, m.sel)
		s.p.Join(plan.JoinSemi, m.build, m.cols, nil, sel, p.rowsWidth(s.cols))
		s.rows *= sel
	}
	if r.table != nil {
		for _, t := range l.transfers(r) {
			s.p.Join(plan.JoinSemi, t.build, []string{t.col}, nil, t.sel, p.rowsWidth(s.cols))
			s.rows *= t.sel
		}
	}
	s.rows = math.Max(1, s.rows)
	return s, nil
}

// transfer is a semi join of a relation's column with a broadcast hash
// table of a column it is joined to.
type transfer struct {
	build int
	col   string
	sel   float64
}

// transfers lists the broadcast hash tables built so far that base
// relation r can semi-join right after its scan: a table on a key that
// equalities join to a column of r, whose distinct keys are below
// transferShare of that column's distinct values among r's rows. Every row
// of the block joins the table's relation on that key, so a row of r
// without a match could not reach the result.
func (l *lowering) transfers(r *rel) []transfer {
	var out []transfer
	for _, c := range r.cols {
		cl, ok := l.class[c.name]
		if !ok {
			continue
		}
		for _, bb := range l.bcast {
			if k, ok := l.class[bb.key]; !ok || k != cl || l.p.cols[bb.key].rel == r {
				continue
			}
			d := l.p.distinctIn(c.name, l.rows[r])
			if bb.distinct < transferShare*d {
				out = append(out, transfer{build: bb.build, col: c.name, sel: math.Max(minSel, bb.distinct/d)})
				break
			}
		}
	}
	return out
}

// magicFor restricts the input of c, a derived relation about to be
// joined with s on keys, to s's keys when those are few next to c's
// groups (magicShare): s is shuffled on its keys, its keys broadcast
// into a hash table that the subquery's relation holding the keys
// semi-joins right after its scan. It applies when every key is a plain
// column of one base relation of c's block (for an aggregating block, a
// group key), so the restriction only drops groups the join drops.
func (l *lowering) magicFor(s *stream, c *rel) *stream {
	p := l.p
	sb := c.sub
	if sb == nil || c.kind != relInner || sb.limit >= 0 || sb.magic != nil || sb.input != nil || p.shared(sb) {
		return s
	}
	pk, bk := l.keysBetween(s.rels, map[*rel]bool{c: true}, s.cols, nil)
	if len(pk) == 0 {
		return s
	}
	base, cols := p.magicBase(c, bk)
	if base == nil {
		return s
	}
	// The outer keys' distinct values: at most those of any relation of
	// s joined to them by equalities.
	outer := 1.0
	for _, k := range pk {
		outer *= l.keyDistinct(k, s.rows, s.rels)
	}
	outer = math.Min(outer, s.rows)
	groups := p.blockRows(sb)
	if outer >= magicShare*groups {
		return s
	}
	kept := l.needed(s, s.rels, true)
	for _, k := range pk {
		if !slices.Contains(kept, k) {
			kept = append(kept, k)
		}
	}
	s = p.keep(s, s.colsIn(kept))
	sh := s.p.Shuffle(pk...)
	s.p = p.b.From(sh).Named("probe shuffled")
	s.dist, s.keys = dPart, slices.Clone(pk)
	m := p.b.From(sh).Named("keys for subquery")
	m.Select(p.rowsWidth(pk), plan.Keep(pk...)...)
	bc := m.Broadcast()
	share := math.Min(1, outer/s.rows)
	if share >= 0.999 {
		share = 0
	}
	build := p.b.From(bc).Named("build keys").HashBuildRepeating(share, pk...)
	sb.magic = &magicSet{build: build, rel: base, cols: cols, sel: math.Min(1, outer/groups)}
	return s
}

// magicBase reads c's output columns bk as plain columns of one base
// relation of c's block (for an aggregating block, group keys): that
// relation and its columns, which a magic set restricts; nil when c's
// input cannot be restricted on bk.
func (p *planner) magicBase(c *rel, bk []string) (*rel, []string) {
	sb := c.sub
	if sb == nil || c.kind != relInner || sb.limit >= 0 || sb.magic != nil {
		return nil, nil
	}
	var base *rel
	var cols []string
	for _, k := range bk {
		i := slices.IndexFunc(c.out, func(o *column) bool { return o.name == k })
		if i < 0 {
			return nil, nil
		}
		ic, ok := sb.outs[i].e.e.(plan.Col)
		if !ok {
			return nil, nil
		}
		col := p.cols[string(ic)]
		if col == nil || col.rel == nil || col.rel.table == nil || col.rel.kind != relInner || !slices.Contains(sb.rels, col.rel) {
			return nil, nil
		}
		if sb.grouped && !slices.ContainsFunc(sb.keys, func(n plan.Named) bool {
			kc, ok := n.E.(plan.Col)
			return ok && n.Name == string(ic) && string(kc) == string(ic)
		}) {
			return nil, nil
		}
		if base != nil && base != col.rel {
			return nil, nil
		}
		base, cols = col.rel, append(cols, string(ic))
	}
	return base, cols
}

// magicRoot picks the relation to probe with in place of c, the largest
// of rs, when c is a derived relation that a magic set would restrict
// were it joined to the others (see magicFor): the largest of the others,
// if their keys, after the semi joins each one's own columns attach,
// are below magicShare of c's groups. Joined last and restricted, c then
// aggregates only the rows the join keeps; probed with, it would
// aggregate all of its input.
func (l *lowering) magicRoot(c *rel, rs []*rel) *rel {
	if len(rs) < 2 {
		return nil
	}
	var others []*rel
	var alt *rel
	for _, r := range rs {
		if r == c {
			continue
		}
		others = append(others, r)
		if alt == nil || l.rows[r] > l.rows[alt] {
			alt = r
		}
	}
	pk, bk := l.keysBetween(setOf(others), map[*rel]bool{c: true}, nil, nil)
	if len(pk) == 0 {
		return nil
	}
	if base, _ := l.p.magicBase(c, bk); base == nil {
		return nil
	}
	outer, most := 1.0, 1.0
	for _, k := range pk {
		r := l.p.cols[k].rel
		rows := l.rows[r] * l.semiShare(r)
		outer *= l.p.distinctIn(k, rows)
		most = math.Max(most, rows)
	}
	if math.Min(outer, most) >= magicShare*l.p.blockRows(c.sub) {
		return nil
	}
	return alt
}

// semiShare estimates the share of base relation r's rows (after its
// own conditions) that the block's semi joins on r's columns alone keep:
// for each, its subquery's distinct keys over r's.
func (l *lowering) semiShare(r *rel) float64 {
	share := 1.0
	for _, x := range l.blk.rels {
		if x.kind != relSemi || x.sub == nil || len(x.outerKeys) == 0 ||
			slices.ContainsFunc(x.outerKeys, func(k string) bool { return l.p.cols[k] == nil || l.p.cols[k].rel != r }) {
			continue
		}
		sub := l.p.blockRows(x.sub)
		m := 1.0
		for i, k := range x.outerKeys {
			m = math.Min(m, l.p.distinctIn(x.buildKeys[i], sub)/l.p.distinctIn(k, l.rows[r]))
		}
		share *= m
	}
	return share
}

// project replaces s's columns by ns, renaming the partitioning keys.
func (p *planner) project(s *stream, ns []plan.Named) *stream {
	same := len(ns) == len(s.cols)
	for i := range ns {
		if c, ok := ns[i].E.(plan.Col); !same || !ok || string(c) != ns[i].Name || s.cols[i] != ns[i].Name {
			same = false
		}
	}
	if same {
		return s
	}
	out := make([]string, len(ns))
	rename := map[string]string{}
	for i, n := range ns {
		out[i] = n.Name
		if c, ok := n.E.(plan.Col); ok {
			if _, dup := rename[string(c)]; !dup {
				rename[string(c)] = n.Name
			}
		}
	}
	s.p.Select(p.rowsWidth(out), ns...)
	s.cols = out
	if s.dist == dPart {
		var keys []string
		for _, k := range s.keys {
			n, ok := rename[k]
			if !ok {
				s.dist, keys = dSpread, nil
				break
			}
			keys = append(keys, n)
		}
		s.keys = keys
	}
	return s
}

// colsIn lists s's columns that are in want, in s's order.
func (s *stream) colsIn(want []string) []string {
	var out []string
	for _, c := range s.cols {
		if slices.Contains(want, c) {
			out = append(out, c)
		}
	}
	return out
}

// keep projects s onto cols (in s's order).
func (p *planner) keep(s *stream, cols []string) *stream {
	if len(cols) == 0 {
		cols = s.cols[:1]
	}
	return p.project(s, plan.Keep(cols...))
}

// applyReady applies the conditions and attaches the relations whose
// columns s now holds.
func (l *lowering) applyReady(s *stream) error {
	p := l.p
	for changed := true; changed; {
		changed = false
		var preds []plan.Expr
		for i, c := range l.conds {
			if l.applied[i] {
				continue
			}
			ready := true
			for r := range p.relsOf(c) {
				if !s.rels[r] {
					ready = false
				}
			}
			if ready {
				l.applied[i] = true
				preds = append(preds, c)
			}
		}
		if len(preds) > 0 {
			pred := and(preds)
			sel := p.selectivity(pred)
			s.p.Where(pred, sel)
			s.rows = math.Max(1, s.rows*sel)
		}
		for _, r := range l.blk.rels {
			if r.kind == relInner || l.attached[r] {
				continue
			}
			ready := true
			for _, k := range r.outerKeys {
				if !slices.Contains(s.cols, k) {
					ready = false
				}
			}
			if !ready {
				continue
			}
			l.attached[r] = true
			sub, err := p.lowerBlock(r.sub)
			if err != nil {
				return err
			}
			ns := make([]plan.Named, len(r.out))
			for i, o := range r.sub.outs[:len(r.out)] {
				ns[i] = plan.As(r.out[i].name, plan.Col(o.name))
			}
			sub = p.project(sub, ns)
			kind := map[relKind]plan.JoinKind{relSemi: plan.JoinSemi, relAnti: plan.JoinAnti, relLeftOuter: plan.JoinLeftOuter}[r.kind]
			ns2, err := l.join(s, sub, r.outerKeys, r.buildKeys, kind, r.carry)
			if err != nil {
				return err
			}
			*s = *ns2
			s.rels[r] = true
			changed = true
		}
	}
	return nil
}

// join probes b's hash table with s on keys: b is broadcast when its
// bytes sent to every other worker cost less than shuffling both sides
// (B·(W-1) < P, from B·(W-1) < (B+P)·(W-1)/W), else both sides are
// shuffled on the keys (a side already partitioned on them stays).
func (l *lowering) join(s, b *stream, pk, bk []string, kind plan.JoinKind, carry []string) (*stream, error) {
	p := l.p
	pk, bk = slices.Clone(pk), slices.Clone(bk)
	for i := range pk {
		// The engine hashes, partitions and compares join keys of one
		// type: an int32 key joins an int64 one widened to int64.
		if tp, tb := p.cols[pk[i]].t, p.cols[bk[i]].t; tp != tb && tp.integer() && tb.integer() {
			if tp.k == kInt32 {
				s, pk[i] = p.widen(s, pk[i])
			} else {
				b, bk[i] = p.widen(b, bk[i])
			}
		}
		if p.cols[pk[i]].t != p.cols[bk[i]].t {
			return nil, p.errAt(l.blk.pos, "join of %s (%s) with %s (%s): keys of a join must have one type",
				p.sqlName(pk[i]), p.cols[pk[i]].t, p.sqlName(bk[i]), p.cols[bk[i]].t)
		}
	}
	bcols := append(slices.Clone(bk), carry...)
	var keepB []string
	for _, c := range b.cols {
		if slices.Contains(bcols, c) {
			keepB = append(keepB, c)
		}
	}
	b = p.keep(b, keepB)
	W := float64(p.workers)
	bBytes := b.rows * float64(p.rowsWidth(b.cols))
	pBytes := s.rows * float64(p.rowsWidth(s.cols))
	co := coPartitioned(s, b, pk, bk)
	broadcast := !co && (len(pk) == 0 || bBytes*(W-1) <= pBytes)
	// Distinct keys per build row (repeating keys).
	d := 1.0
	for _, k := range bk {
		d *= p.distinctIn(k, b.rows)
	}
	share := math.Min(1, d/b.rows)
	if share >= 0.999 {
		share = 0
	}
	var build int
	if broadcast {
		bc := b.p.Broadcast()
		build = p.b.From(bc).Named("build broadcast").HashBuildRepeating(share, bk...)
		if kind == plan.JoinInner && len(bk) == 1 {
			l.bcast = append(l.bcast, bcastBuild{build: build, key: bk[0], distinct: d})
		}
	} else {
		if !co && !(b.dist == dPart && slices.Equal(b.keys, bk)) {
			sh := b.p.Shuffle(bk...)
			b.p = p.b.From(sh).Named("build shuffled")
		}
		build = b.p.HashBuildRepeating(share, bk...)
		if !co && !(s.dist == dPart && slices.Equal(s.keys, pk)) {
			kept := l.needed(s, s.rels, true)
			for _, k := range pk {
				if !slices.Contains(kept, k) {
					kept = append(kept, k)
				}
			}
			s = p.keep(s, s.colsIn(kept))
			if !slices.ContainsFunc(pk, func(k string) bool { return !slices.Contains(s.cols, k) }) {
				sh := s.p.Shuffle(pk...)
				s.p = p.b.From(sh).Named("probe shuffled")
				s.dist, s.keys = dPart, slices.Clone(pk)
			}
		}
	}
	var sel float64
	switch kind {
	case plan.JoinInner, plan.JoinLeftOuter:
		sel = l.fanout(s.rows, b.rows, pk, bk, s.rels, b.rels)
		if len(pk) == 0 {
			sel = b.rows
		}
		if kind == plan.JoinLeftOuter {
			sel = math.Max(1, sel)
		}
	case plan.JoinSemi, plan.JoinAnti:
		m := 1.0
		for i := range pk {
			m = math.Min(m, l.keyDistinct(bk[i], b.rows, b.rels)/l.keyDistinct(pk[i], s.rows, s.rels))
		}
		sel = m
		if kind == plan.JoinAnti {
			sel = 1 - m
		}
	}
	sel = math.Max(minSel, sel)
	out := s.cols
	if kind == plan.JoinInner || kind == plan.JoinLeftOuter {
		out = append(slices.Clone(s.cols), carry...)
	} else {
		carry = nil
	}
	s.p.Join(kind, build, pk, carry, sel, p.rowsWidth(out))
	s.cols = out
	s.rows = math.Max(1, s.rows*sel)
	return s, nil
}

// aggregate runs the block's aggregation over s: a Partial per worker,
// an exchange (Gather for few groups, else Shuffle on the keys), a Final,
// then HAVING and the outputs.
func (l *lowering) aggregate(s *stream) (*stream, error) {
	p, blk := l.p, l.blk
	keyNames := make([]string, len(blk.keys))
	for i, k := range blk.keys {
		keyNames[i] = k.Name
	}
	aggs := blk.aggs
	var ns []plan.Named
	ns = append(ns, blk.keys...)
	if len(blk.countDistincts) == 1 {
		cd := blk.countDistincts[0]
		x := p.addColumn("distinct", cd.arg.t, nil)
		x.distinct, x.width = p.exprDistinct(cd.arg.e), p.exprWidth(cd.arg)
		ns = append(ns, plan.As(x.name, cd.arg.e))
		if len(aggs) > 0 {
			return l.aggregateBesideDistinct(s, ns, keyNames, x.name)
		}
		s = p.project(s, ns)
		s = p.groupBy(s, append(slices.Clone(keyNames), x.name), nil)
		s = p.keep(s, s.cols[:len(keyNames)])
		aggs = []plan.Agg{plan.Count(cd.as)}
	} else {
		var args []string
		for _, a := range aggs {
			if a.Arg != nil {
				args = colsOf(a.Arg, args)
			}
		}
		for _, a := range args {
			if !slices.ContainsFunc(ns, func(n plan.Named) bool { return n.Name == a }) {
				ns = append(ns, plan.As(a, plan.Col(a)))
			}
		}
		if len(ns) == 0 {
			ns = plan.Keep(s.cols[0])
		}
		s = p.project(s, ns)
	}
	in := s.rows
	s = p.groupBy(s, keyNames, aggs)
	p.notePerGroup(blk.aggs, in, s.rows)
	return l.having(s)
}

// aggregateBesideDistinct aggregates s when count(DISTINCT x) stands
// beside other aggregates: a first aggregation on the keys and x (ns
// projects them, x named dx) leaves one row per distinct x of a group
// holding the partial states of the other aggregates (avg as its sum and
// count); a final aggregation on the keys then merges those states and
// counts the rows, each marked 1, as the distinct count. The counts stay
// counts (not sums of counts), so a scalar aggregate over no rows still
// reports 0 for them.
func (l *lowering) aggregateBesideDistinct(s *stream, ns []plan.Named, keyNames []string, dx string) (*stream, error) {
	p, blk := l.p, l.blk
	cd := blk.countDistincts[0]
	in := s.rows
	var args []string
	for _, a := range blk.aggs {
		if a.Arg != nil {
			args = colsOf(a.Arg, args)
		}
	}
	for _, a := range args {
		if !slices.ContainsFunc(ns, func(n plan.Named) bool { return n.Name == a }) {
			ns = append(ns, plan.As(a, plan.Col(a)))
		}
	}
	s = p.project(s, ns)
	inner := p.avgAsSumCount(blk.aggs)
	s = p.groupBy(s, append(slices.Clone(keyNames), dx), inner)
	states := plan.Keep(keyNames...)
	states = append(states, plan.As(cd.as, plan.Int(1)))
	var partialCols []string
	for _, a := range inner {
		states = append(states, plan.As(a.As, plan.Col(a.As)))
		partialCols = append(partialCols, a.As)
	}
	s = p.project(s, states)
	aggs := append([]plan.Agg{plan.Count(cd.as)}, blk.aggs...)
	p.finalAggregate(s, keyNames, aggs)
	p.notePerGroup(blk.aggs, in, s.rows)
	return l.having(s)
}

// having applies the block's HAVING (with its subqueries) to the
// aggregated s, then computes the block's outputs.
func (l *lowering) having(s *stream) (*stream, error) {
	p, blk := l.p, l.blk
	for _, r := range blk.havingRels {
		sub, ok := l.scalarFromGroups(s, r)
		if !ok {
			var err error
			if sub, err = p.lowerShared(r.sub); err != nil {
				return nil, err
			}
		}
		rn := make([]plan.Named, len(r.out))
		for i, o := range r.sub.outs[:len(r.out)] {
			rn[i] = plan.As(r.out[i].name, plan.Col(o.name))
		}
		sub = p.project(sub, rn)
		var err error
		if s, err = l.join(s, sub, nil, nil, plan.JoinInner, names(r.out)); err != nil {
			return nil, err
		}
	}
	if len(blk.having) > 0 {
		var hs []plan.Expr
		for _, h := range blk.having {
			hs = append(hs, h.e)
		}
		pred := and(hs)
		sel := p.selectivity(pred)
		s.p.Where(pred, sel)
		s.rows = math.Max(1, s.rows*sel)
	}
	// Select items naming one aggregate twice share its column: project
	// it once (the result's renaming reads it for each).
	var outs []plan.Named
	for _, o := range blk.outs {
		if !slices.ContainsFunc(outs, func(n plan.Named) bool { return n.Name == o.name }) {
			outs = append(outs, plan.As(o.name, o.e.e))
		}
	}
	return p.project(s, outs), nil
}

// groupBy aggregates s on keys (no aggregates: a count stands in, and is
// dropped, so the step deduplicates).
func (p *planner) groupBy(s *stream, keys []string, aggs []plan.Agg) *stream {
	dropCount := false
	if len(aggs) == 0 {
		c := p.addColumn("dup", typ{k: kInt}, nil)
		aggs = []plan.Agg{plan.Count(c.name)}
		dropCount = true
	}
	g := 1.0
	for _, k := range keys {
		g *= p.distinctIn(k, s.rows)
	}
	g = math.Max(1, math.Min(g, s.rows))
	if len(keys) == 0 {
		g = 1
	}
	var out []string
	out = append(out, keys...)
	for _, a := range aggs {
		out = append(out, a.As)
	}
	var partialCols []string
	partialCols = append(partialCols, keys...)
	for _, a := range aggs {
		partialCols = append(partialCols, a.PartialColumns()...)
	}
	for _, a := range aggs {
		if a.Fn == plan.AggAvg {
			for _, n := range a.PartialColumns() {
				if p.cols[n] == nil {
					p.cols[n] = &column{name: n, t: typ{k: kFloat}, width: 8}
				}
			}
		}
	}
	groups := int64(math.Min(g, 1e15))
	s.p.Partial(groups, p.rowsWidth(partialCols), keys, aggs...)
	var ex int
	if len(keys) == 0 || (g <= gatherGroups && !partitionedWithin(s, keys)) {
		ex = s.p.Gather()
		s.dist, s.keys = dSingle, nil
	} else {
		shKeys := keys
		if s.dist == dPart && !slices.ContainsFunc(s.keys, func(k string) bool { return !slices.Contains(keys, k) }) {
			shKeys = s.keys
		}
		ex = s.p.Shuffle(shKeys...)
		s.dist, s.keys = dPart, slices.Clone(shKeys)
	}
	s.p = p.b.From(ex).Named("aggregate " + strings.Join(keys, ","))
	s.p.Final(groups, p.rowsWidth(out), keys, aggs...)
	s.cols = out
	s.rows = g
	if dropCount {
		s = p.keep(s, keys)
	}
	return s
}

// dedup removes duplicate rows of s over cols.
func (p *planner) dedup(s *stream, cols []string) *stream {
	return p.groupBy(s, cols, nil)
}

// widen adds to s an int64 copy of its int32 column col (integer
// arithmetic yields int64 in the engine: col + 0) and returns the new
// stream and the copy's name.
func (p *planner) widen(s *stream, col string) (*stream, string) {
	c := p.addColumn(p.sqlName(col), typ{k: kInt}, p.cols[col].rel)
	ns := make([]plan.Named, 0, len(s.cols)+1)
	for _, x := range s.cols {
		ns = append(ns, plan.As(x, plan.Col(x)))
	}
	ns = append(ns, plan.As(c.name, plan.Add(plan.Col(col), plan.Int(0))))
	return p.project(s, ns), c.name
}

// severalDistinct lowers a block with count(DISTINCT x) over several
// arguments. One pass cannot deduplicate on two columns at once, so the
// block's input is planned once per argument (grouped on the keys and
// that argument, then counted per keys) and once more for the other
// aggregates, kept as partial states (avg as its sum and count). The
// branches, one row per group each, are joined on the keys (every group
// is in each branch; no keys: cross joins of one-row results), and a
// final aggregation on the keys merges those single states. It keeps the
// counts counts, so a scalar aggregate over no rows still reports 0 for
// them.
func (l *lowering) severalDistinct() (*stream, error) {
	p, blk := l.p, l.blk
	keyNames := make([]string, len(blk.keys))
	keyOuts := make([]output, len(blk.keys))
	for i, k := range blk.keys {
		c := p.cols[k.Name]
		if c == nil {
			return nil, p.errAt(blk.pos, "group key %s has no column", k.Name)
		}
		keyNames[i] = k.Name
		keyOuts[i] = output{name: k.Name, e: bexpr{e: plan.Col(k.Name), t: c.t, pos: blk.pos}}
	}
	// branch plans blk's input aggregated by aggs or one count(DISTINCT),
	// its outputs the keys and those columns.
	branch := func(aggs []plan.Agg, cds []*distinctCount, cols []string) (*stream, error) {
		b := *blk
		b.aggs, b.countDistincts = aggs, cds
		b.having, b.havingRels, b.distinct, b.hiddenOuts = nil, nil, false, 0
		b.order, b.limit = nil, -1
		b.outs = slices.Clone(keyOuts)
		for _, c := range cols {
			b.outs = append(b.outs, output{name: c, e: bexpr{e: plan.Col(c), t: p.cols[c].t, pos: blk.pos}})
		}
		return p.lowerBlock(&b)
	}
	inner := p.avgAsSumCount(blk.aggs)
	// The joins keep the columns the final aggregation merges.
	l.upper = slices.Clone(keyNames)
	for _, a := range inner {
		l.upper = append(l.upper, a.As)
	}
	for _, cd := range blk.countDistincts {
		l.upper = append(l.upper, cd.as)
	}
	var s *stream
	add := func(b *stream, cols []string) error {
		if s == nil {
			s = b
			return nil
		}
		var err error
		s, err = l.join(s, b, keyNames, keyNames, plan.JoinInner, cols)
		return err
	}
	for _, a := range inner {
		if p.cols[a.As] == nil {
			return nil, p.errAt(blk.pos, "aggregate %s has no column", a)
		}
	}
	if len(inner) > 0 {
		var cols []string
		for _, a := range inner {
			cols = append(cols, a.As)
		}
		b, err := branch(inner, nil, cols)
		if err != nil {
			return nil, err
		}
		if err := add(b, cols); err != nil {
			return nil, err
		}
	}
	var aggs []plan.Agg
	for _, cd := range blk.countDistincts {
		b, err := branch(nil, []*distinctCount{cd}, []string{cd.as})
		if err != nil {
			return nil, err
		}
		if err := add(b, []string{cd.as}); err != nil {
			return nil, err
		}
		aggs = append(aggs, plan.Count(cd.as))
	}
	aggs = append(aggs, blk.aggs...)
	p.finalAggregate(s, keyNames, aggs)
	s, err := l.having(s)
	if err != nil {
		return nil, err
	}
	if blk.distinct {
		s = p.dedup(s, names2(blk.outs))
	}
	return s, nil
}

// finalAggregate ends s's pipeline, whose rows are partial states of aggs
// grouped on keyNames (at most s.rows groups), with a gather (no keys, or
// at most gatherGroups groups) or a shuffle on the keys, and continues s
// in a pipeline merging them: the keys, then one column per aggregate.
func (p *planner) finalAggregate(s *stream, keyNames []string, aggs []plan.Agg) {
	var ex int
	if len(keyNames) == 0 || s.rows <= gatherGroups {
		ex = s.p.Gather()
		s.dist, s.keys = dSingle, nil
	} else {
		ex = s.p.Shuffle(keyNames...)
		s.dist, s.keys = dPart, slices.Clone(keyNames)
	}
	out := slices.Clone(keyNames)
	for _, a := range aggs {
		out = append(out, a.As)
	}
	groups := int64(math.Max(1, math.Min(s.rows, 1e15)))
	if len(keyNames) == 0 {
		groups = 1
	}
	s.p = p.b.From(ex).Named("aggregate " + strings.Join(keyNames, ","))
	s.p.Final(groups, p.rowsWidth(out), keyNames, aggs...)
	s.cols = out
}

// avgAsSumCount is aggs with each average split into the sum and the
// count its partial state keeps (plan.Agg.PartialColumns), for an
// aggregation whose results are merged again later.
func (p *planner) avgAsSumCount(aggs []plan.Agg) []plan.Agg {
	var inner []plan.Agg
	for _, a := range aggs {
		if a.Fn != plan.AggAvg {
			inner = append(inner, a)
			continue
		}
		pc := a.PartialColumns()
		inner = append(inner, plan.Agg{Fn: plan.AggSum, Arg: a.Arg, As: pc[0]}, plan.Agg{Fn: plan.AggCount, Arg: a.Arg, As: pc[1]})
		if p.cols[pc[0]] == nil {
			// As groupBy types an average's partial sum.
			p.cols[pc[0]] = &column{name: pc[0], t: typ{k: kFloat}, width: 8}
		}
		if p.cols[pc[1]] == nil {
			p.cols[pc[1]] = &column{name: pc[1], t: typ{k: kInt}, width: 8}
		}
	}
	return inner
}
