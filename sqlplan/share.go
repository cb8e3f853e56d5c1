package sqlplan

import (
	"fmt"
	"slices"
	"strings"

	"gostachio/plan"
)

// A subexpression written twice is computed once. Two blocks that render
// alike (blockSig: the same relations, conditions, grouping and outputs,
// each column named by its place rather than its bound name; a WITH table
// used twice binds twice to two such blocks) are lowered once: the first
// lowering ends its pipeline at its last breaker (plan.Pipe.Share), and
// every use reads that output in a pipeline of its own, which replays
// the operators after the breaker and renames the columns to the use's.
// The scheduler keeps a pipeline's output until its last reader is done.

// sharing is the state of computing blocks once.
type sharing struct {
	// sigs renders every bound block; uses counts the blocks per rendering.
	sigs map[*block]string
	uses map[string]int
	done map[string]*sharedOut
}

// sharedOut is a block's output computed once: the pipeline ending at
// its last breaker, the streaming operators after it, and the stream the
// first lowering produced (its columns are that block's outputs).
type sharedOut struct {
	index int
	rest  []plan.Op
	first *block
	s     stream
}

// noteBlocks renders blk and every block below it and counts them.
func (p *planner) noteBlocks(blk *block) {
	if p.share == nil {
		p.share = &sharing{sigs: map[*block]string{}, uses: map[string]int{}, done: map[string]*sharedOut{}}
	}
	sig := p.blockSig(blk)
	p.share.sigs[blk] = sig
	if sig != "" {
		p.share.uses[sig]++
	}
	for _, rs := range [][]*rel{blk.rels, blk.havingRels, blk.leftJoins} {
		for _, r := range rs {
			if r.sub != nil {
				p.noteBlocks(r.sub)
			}
		}
	}
}

// shared reports whether blk renders like another block, so that it is
// lowered once for all of them.
func (p *planner) shared(blk *block) bool {
	if p.share == nil {
		return false
	}
	sig := p.share.sigs[blk]
	return sig != "" && p.share.uses[sig] > 1
}

// lowerShared lowers blk, or reads the output of a block rendering alike
// lowered before.
func (p *planner) lowerShared(blk *block) (*stream, error) {
	if !p.shared(blk) {
		return p.lowerBlock(blk)
	}
	sig := p.share.sigs[blk]
	so := p.share.done[sig]
	if so == nil {
		s, err := p.lowerBlock(blk)
		if err != nil {
			return nil, err
		}
		index, rest, ok := s.p.Share()
		if !ok {
			// No breaker to share at: every use computes it.
			p.share.uses[sig] = 0
			return s, nil
		}
		so = &sharedOut{index: index, rest: rest, first: blk, s: *s}
		p.share.done[sig] = so
	}
	s := so.s
	s.p = p.b.From(so.index).Named("shared " + strings.Join(so.s.cols, ",")).Apply(so.rest...)
	s.cols = append([]string(nil), so.s.cols...)
	s.keys = append([]string(nil), so.s.keys...)
	s.rels = map[*rel]bool{}
	if so.first == blk {
		return &s, nil
	}
	// The outputs are in the same places: rename the first block's to
	// blk's.
	ns := make([]plan.Named, len(s.cols))
	for i, c := range s.cols {
		n := c
		for j, o := range so.first.outs {
			if o.name == c {
				n = blk.outs[j].name
				break
			}
		}
		ns[i] = plan.As(n, plan.Col(c))
	}
	return p.project(&s, ns), nil
}

// blockSig renders blk with every column named by its place: a base
// relation's column by the relation's position and stored name, a derived
// relation's output by their positions, a group key or aggregate by its
// position. "" where blk reads a column from outside itself (a
// correlation) or has a part the rendering does not cover (subqueries
// attached by semi, anti or outer joins, HAVING subqueries, counts of
// distinct values, a restriction from an enclosing block).
func (p *planner) blockSig(blk *block) string {
	if blk.magic != nil || len(blk.havingRels) > 0 || len(blk.leftJoins) > 0 || len(blk.countDistincts) > 0 {
		return ""
	}
	names := map[string]string{}
	var sb strings.Builder
	for i, r := range blk.rels {
		if r.kind != relInner {
			return ""
		}
		switch {
		case r.table != nil:
			fmt.Fprintf(&sb, "rel %s;", r.table.Name)
			for _, c := range r.cols {
				names[c.name] = fmt.Sprintf("r%d.%s", i, c.src)
			}
		case r.sub != nil:
			sub := p.blockSig(r.sub)
			if sub == "" {
				return ""
			}
			fmt.Fprintf(&sb, "rel (%s);", sub)
			for j, c := range r.out {
				names[c.name] = fmt.Sprintf("r%d.o%d", i, j)
			}
		default:
			return ""
		}
	}
	render := func(e plan.Expr) (string, bool) {
		x, ok := renameExpr(e, names)
		if !ok {
			return "", false
		}
		return x.String(), true
	}
	for _, c := range blk.conds {
		x, ok := render(c.e)
		if !ok {
			return ""
		}
		fmt.Fprintf(&sb, "where %s;", x)
	}
	if blk.grouped {
		sb.WriteString("grouped;")
		for i, k := range blk.keys {
			x, ok := render(k.E)
			if !ok {
				return ""
			}
			fmt.Fprintf(&sb, "key %s;", x)
			names[k.Name] = fmt.Sprintf("k%d", i)
		}
		for i, a := range blk.aggs {
			arg := ""
			if a.Arg != nil {
				x, ok := render(a.Arg)
				if !ok {
					return ""
				}
				arg = x
			}
			fmt.Fprintf(&sb, "agg %s(%s);", a.Fn, arg)
			names[a.As] = fmt.Sprintf("a%d", i)
		}
		for _, h := range blk.having {
			x, ok := render(h.e)
			if !ok {
				return ""
			}
			fmt.Fprintf(&sb, "having %s;", x)
		}
	}
	for i, o := range blk.outs {
		x, ok := render(o.e.e)
		if !ok {
			return ""
		}
		fmt.Fprintf(&sb, "out %s;", x)
		if _, ok := names[o.name]; !ok {
			names[o.name] = fmt.Sprintf("o%d", i)
		}
	}
	fmt.Fprintf(&sb, "hidden %d; distinct %v; limit %d;", blk.hiddenOuts, blk.distinct, blk.limit)
	for _, k := range blk.order {
		fmt.Fprintf(&sb, "order %s %v;", names[k.name], k.desc)
	}
	return sb.String()
}

// renameExpr is e with its columns renamed by names (false: a column
// names does not hold, or an expression it cannot rebuild).
func renameExpr(e plan.Expr, names map[string]string) (plan.Expr, bool) {
	switch x := e.(type) {
	case plan.Col:
		n, ok := names[string(x)]
		return plan.Col(n), ok
	case plan.Lit:
		return x, true
	case plan.Call:
		args := make([]plan.Expr, len(x.Args))
		for i, a := range x.Args {
			y, ok := renameExpr(a, names)
			if !ok {
				return nil, false
			}
			args[i] = y
		}
		return plan.Call{Fn: x.Fn, Args: args}, true
	}
	return nil, false
}

// A correlated subquery aggregating the rows of joins the enclosing block
// also makes (TPC-H's Q2 and Q17: the same tables, the same conditions on
// each, the same join keys) reads those rows from the enclosing block's
// stream rather than joining them again. When the stream s is about to
// join the subquery's groups and s holds, besides relations matching the
// subquery's one for one, only relations joined to them on the
// subquery's group key (which keep or drop a whole group, and repeat all
// of its rows alike), s is shuffled on that key and materialized once:
// the subquery aggregates that output, the join reads it again. Every
// row of a group repeated alike changes no min, max or avg; sums and
// counts are shared only where nothing else joins.

// sharedInput is the stream a subquery's block reads: the pipeline of
// the enclosing block's rows, its columns renamed to the block's own
// (names: the enclosing column of each), partitioned on key.
type sharedInput struct {
	index int
	cols  []string
	names map[string]string
	key   string
	rows  float64
}

// shareInput shares s's rows with c's block where the rules above allow,
// and returns s continued after the materialization (s itself where
// they do not).
func (l *lowering) shareInput(s *stream, c *rel) *stream {
	p, sb := l.p, c.sub
	if sb == nil || c.kind != relInner || !sb.grouped || len(sb.keys) != 1 || sb.magic != nil || sb.input != nil ||
		p.shared(sb) || l.blk.magic != nil || len(sb.havingRels) > 0 || len(sb.leftJoins) > 0 ||
		len(sb.countDistincts) > 0 || sb.distinct || sb.limit >= 0 {
		return s
	}
	// The subquery's relations: base, inner; its conditions: each on one
	// relation, or an equality joining two.
	subLocal := map[*rel][]string{}
	var edges [][2]string
	for _, r := range sb.rels {
		if r.kind != relInner || r.table == nil {
			return s
		}
	}
	for _, cd := range sb.conds {
		for _, x := range splitAnd(cd.e) {
			rs := p.relsOf(x)
			if a, b, ok := p.joinEdge(x); ok && len(rs) == 2 {
				edges = append(edges, [2]string{a, b})
				continue
			}
			if len(rs) != 1 {
				return s
			}
			for r := range rs {
				if !containsRel(sb.rels, r) {
					return s
				}
				txt, ok := srcText(x, r)
				if !ok {
					return s
				}
				subLocal[r] = append(subLocal[r], txt)
			}
		}
	}
	// s's relations: base, inner, of this block.
	for r := range s.rels {
		if r.kind != relInner || r.table == nil {
			return s
		}
	}
	// Match each subquery relation with one of s's: the same table, the
	// same conditions of its own.
	image := map[*rel]*rel{}
	used := map[*rel]bool{}
	for _, r := range sb.rels {
		want := sortedSet(subLocal[r])
		for _, o := range sortedRels(s.rels) {
			if used[o] || o.table.Name != r.table.Name {
				continue
			}
			var have []string
			for _, x := range l.local[o] {
				for _, y := range splitAnd(x) {
					txt, ok := srcText(y, o)
					if !ok {
						return s
					}
					have = append(have, txt)
				}
			}
			if sortedSet(have) == want {
				image[r], used[o] = o, true
				break
			}
		}
		if image[r] == nil {
			return s
		}
	}
	mapCol := func(n string) (string, bool) {
		c := p.cols[n]
		if c == nil || c.rel == nil || image[c.rel] == nil {
			return "", false
		}
		for _, oc := range image[c.rel].cols {
			if oc.src == c.src {
				return oc.name, true
			}
		}
		return "", false
	}
	// The group key: a column of a subquery relation, whose image is in
	// the class s joins c's key output on.
	kc, ok := sb.keys[0].E.(plan.Col)
	if !ok {
		return s
	}
	okey, ok := mapCol(string(kc))
	if !ok {
		return s
	}
	kclass, ok := l.class[okey]
	if !ok {
		return s
	}
	ki := slices.IndexFunc(sb.outs, func(o output) bool {
		x, ok := o.e.e.(plan.Col)
		return ok && x == plan.Col(sb.keys[0].Name)
	})
	if ki < 0 || ki >= len(c.out) {
		return s
	}
	if cl, ok := l.class[c.out[ki].name]; !ok || cl != kclass {
		return s
	}
	pk, _ := l.keysBetween(s.rels, map[*rel]bool{c: true}, s.cols, nil)
	key := ""
	for _, k := range pk {
		if l.class[k] == kclass {
			key = k
		}
	}
	if key == "" || p.cols[key].t != p.cols[okey].t {
		return s
	}
	// Equalities: the subquery's, and no others, among the matched
	// relations; the others join the matched ones on the key alone.
	var find func(string) string
	parent := map[string]string{}
	find = func(x string) string {
		for parent[x] != "" && parent[x] != x {
			x = parent[x]
		}
		return x
	}
	for _, e := range edges {
		a, b := find(e[0]), find(e[1])
		if a != b {
			parent[a] = b
		}
		oa, ok1 := mapCol(e[0])
		ob, ok2 := mapCol(e[1])
		if !ok1 || !ok2 {
			return s
		}
		ca, ok1 := l.class[oa]
		cb, ok2 := l.class[ob]
		if !ok1 || !ok2 || ca != cb {
			return s
		}
	}
	matched := map[*rel]bool{}
	back := map[*rel]*rel{}
	for r, o := range image {
		matched[o], back[o] = true, r
	}
	others := false
	for r := range s.rels {
		if !matched[r] {
			others = true
		}
	}
	for ci, ms := range l.members {
		var mine []string
		other := false
		for _, m := range ms {
			r := p.cols[m].rel
			switch {
			case matched[r]:
				for _, sc := range back[r].cols {
					if sc.src == p.cols[m].src {
						mine = append(mine, sc.name)
					}
				}
			case s.rels[r]:
				other = true
			}
		}
		if other && len(mine) > 0 && ci != kclass {
			return s
		}
		for _, m := range mine[min(1, len(mine)):] {
			if find(m) != find(mine[0]) {
				return s
			}
		}
	}
	// Conditions applied so far read no matched relation.
	for i, cd := range l.conds {
		if !l.applied[i] {
			continue
		}
		for r := range p.relsOf(cd) {
			if matched[r] {
				return s
			}
		}
	}
	// Semi joins right after a matched relation's scan: on the key, or
	// with a table of a matched relation.
	for o := range matched {
		for _, t := range l.transfers(o) {
			bb := slices.IndexFunc(l.bcast, func(b bcastBuild) bool { return b.build == t.build })
			if l.class[t.col] != kclass && (bb < 0 || !matched[p.cols[l.bcast[bb].key].rel]) {
				return s
			}
		}
	}
	// Aggregates that repeated groups leave alike.
	for _, a := range sb.aggs {
		if others && a.Fn != plan.AggMin && a.Fn != plan.AggMax && a.Fn != plan.AggAvg {
			return s
		}
	}
	// The columns the subquery reads, all in s.
	var need []string
	need = colsOf(kc, need)
	for _, a := range sb.aggs {
		if a.Arg != nil {
			need = colsOf(a.Arg, need)
		}
	}
	names := map[string]string{}
	var cols []string
	for _, n := range need {
		o, ok := mapCol(n)
		if ok && !slices.Contains(s.cols, o) {
			// A column joined to it by equalities holds its values.
			o = l.equalIn(s, o)
		}
		if !ok || o == "" {
			return s
		}
		names[n] = o
		if !slices.Contains(cols, o) {
			cols = append(cols, o)
		}
	}
	kept := l.needed(s, s.rels, true)
	for _, k := range append(slices.Clone(pk), cols...) {
		if !slices.Contains(kept, k) {
			kept = append(kept, k)
		}
	}
	s = p.keep(s, s.colsIn(kept))
	sh := s.p.Shuffle(key)
	s.p = p.b.From(sh).Named("probe shuffled")
	s.dist, s.keys = dPart, []string{key}
	sb.input = &sharedInput{index: sh, cols: slices.Clone(s.cols), names: names, key: string(kc), rows: s.rows}
	return s
}

// equalIn is a column of s equal to column c in every row of s (joined
// to it by equalities among s's relations, of its type), "" if none.
func (l *lowering) equalIn(s *stream, c string) string {
	cl, ok := l.class[c]
	if !ok {
		return ""
	}
	for _, m := range l.members[cl] {
		if slices.Contains(s.cols, m) && s.rels[l.p.cols[m].rel] && l.p.cols[m].t == l.p.cols[c].t {
			return m
		}
	}
	return ""
}

// fromInput lowers a block reading its enclosing block's rows
// (shareInput): renamed to its own columns, then aggregated.
func (l *lowering) fromInput() (*stream, error) {
	p, in := l.p, l.blk.input
	s := &stream{p: p.b.From(in.index).Named("subquery input"), rows: in.rows, rels: map[*rel]bool{}, cols: in.cols}
	for _, r := range l.blk.rels {
		s.rels[r] = true
	}
	var ns []plan.Named
	for n, o := range in.names {
		ns = append(ns, plan.As(n, plan.Col(o)))
	}
	slices.SortFunc(ns, func(a, b plan.Named) int { return strings.Compare(a.Name, b.Name) })
	s = p.project(s, ns)
	s.dist, s.keys = dPart, []string{in.key}
	s, err := l.aggregate(s)
	if err != nil {
		return nil, err
	}
	if l.blk.distinct {
		s = p.dedup(s, names2(l.blk.outs))
	}
	return s, nil
}

// coPartitioned reports whether s and b are hash-partitioned on keys in
// the same places of pk and bk: the join runs where the rows lie.
func coPartitioned(s, b *stream, pk, bk []string) bool {
	if s.dist != dPart || b.dist != dPart || len(s.keys) == 0 || len(s.keys) != len(b.keys) {
		return false
	}
	for i := range s.keys {
		j := slices.Index(pk, s.keys[i])
		if j < 0 || bk[j] != b.keys[i] {
			return false
		}
	}
	return true
}

// partitionedWithin reports whether s is hash-partitioned on a subset of
// keys: grouping on keys keeps each group where its rows lie.
func partitionedWithin(s *stream, keys []string) bool {
	return s.dist == dPart && len(s.keys) > 0 && !slices.ContainsFunc(s.keys, func(k string) bool { return !slices.Contains(keys, k) })
}

func containsRel(rs []*rel, r *rel) bool { return slices.Contains(rs, r) }

// srcText renders e, a condition on relation r alone, with r's columns
// by their stored names.
func srcText(e plan.Expr, r *rel) (string, bool) {
	names := map[string]string{}
	for _, c := range r.cols {
		names[c.name] = c.src
	}
	x, ok := renameExpr(e, names)
	if !ok {
		return "", false
	}
	return x.String(), true
}

func sortedSet(xs []string) string {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	return strings.Join(slices.Compact(xs), "\x00")
}

// sortedRels lists rs by id.
func sortedRels(rs map[*rel]bool) []*rel {
	var out []*rel
	for r := range rs {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *rel) int { return a.id - b.id })
	return out
}
