package querygen

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// Query is one generated query.
type Query struct {
	Seed uint64
	SQL  string
	// Ordered is true when the statement orders by every output column:
	// its rows then come in one order (up to identical rows), and a LIMIT
	// selects one multiset. Otherwise results compare as multisets.
	Ordered bool
	// Features are the constructs the statement uses.
	Features Features
}

// Query draws the query of seed. The same seed and configuration give the
// same query.
func (g *Generator) Query(seed uint64) Query {
	q := &gen{g: g, r: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))}
	var most int64 = 1
	for _, t := range g.tables {
		most = max(most, t.rows)
	}
	// A factor of 4 of headroom: the data may grow past the statistics.
	q.sumLimit = 9e18 / float64(4*most)
	var s selectStmt
	switch x := q.r.IntN(100); {
	case x < 25:
		s = q.plainSelect()
	case x < 65:
		s = q.grouped()
	case x < 88:
		s = q.global()
	default:
		s = q.leftJoin()
	}
	return Query{Seed: seed, SQL: q.render(s.text()), Ordered: s.ordered, Features: q.feats}
}

// selectStmt is a SELECT statement being assembled.
type selectStmt struct {
	items   []string // "expr as alias" or a bare column
	from    string
	where   []string
	groupBy []string
	having  string
	orderBy []string
	limit   int
	ordered bool
}

func (s *selectStmt) text() string {
	var b strings.Builder
	b.WriteString("select " + strings.Join(s.items, ", "))
	b.WriteString("\nfrom " + s.from)
	if len(s.where) > 0 {
		b.WriteString("\nwhere " + strings.Join(s.where, "\n  and "))
	}
	if len(s.groupBy) > 0 {
		b.WriteString("\ngroup by " + strings.Join(s.groupBy, ", "))
	}
	if s.having != "" {
		b.WriteString("\nhaving " + s.having)
	}
	if len(s.orderBy) > 0 {
		b.WriteString("\norder by " + strings.Join(s.orderBy, ", "))
	}
	if s.limit > 0 {
		fmt.Fprintf(&b, "\nlimit %d", s.limit)
	}
	return b.String()
}

// output adds a select item named alias (or left bare when it is a plain
// column and bare) and returns what ORDER BY calls it.
func (s *selectStmt) output(sql, alias string, bare bool) string {
	if bare {
		s.items = append(s.items, sql)
		return sql
	}
	s.items = append(s.items, sql+" as "+alias)
	return alias
}

// orderAll orders by every output key given, each ascending or
// descending, and maybe limits.
func (q *gen) orderAll(s *selectStmt, keys []string, limitP float64) {
	for _, k := range keys {
		if q.chance(0.35) {
			k += " desc"
		}
		s.orderBy = append(s.orderBy, k)
	}
	q.r.Shuffle(len(s.orderBy), func(i, j int) { s.orderBy[i], s.orderBy[j] = s.orderBy[j], s.orderBy[i] })
	s.ordered = true
	q.feats.add(FeatOrderBy)
	if q.chance(limitP) {
		s.limit = pick(q, []int{1, 3, 5, 10, 20, 100})
		q.feats.add(FeatLimit)
	}
}

// joined draws 1-4 tables joined along foreign keys, from a root table
// towards the tables it references (so no join multiplies rows), into s's
// FROM and WHERE.
func (q *gen) joined(s *selectStmt) []*ref {
	n := pick(q, []int{1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4})
	// Roots that reference other tables come up more often: joins start
	// there.
	var roots []*table
	for _, t := range q.g.tables {
		for range 1 + 2*len(t.up) {
			roots = append(roots, t)
		}
	}
	refs, conds := q.tree(pick(q, roots), n)
	q.feats.add([]Feature{FeatOneTable, FeatTwoTables, FeatThreeTables, FeatFourTables}[len(refs)-1])
	if len(refs) == 1 || q.chance(0.5) {
		items := make([]string, len(refs))
		for i, r := range refs {
			items[i] = fromSQL(r)
		}
		q.r.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
		s.from = strings.Join(items, ", ")
		s.where = append(s.where, conds...)
		if len(refs) > 1 {
			q.feats.add(FeatCommaJoin)
		}
	} else {
		s.from = fromSQL(refs[0])
		for i, c := range conds {
			s.from += pick(q, []string{"\n  join ", "\n  inner join "}) + fromSQL(refs[i+1]) + " on " + c
		}
		q.feats.add(FeatJoinOn)
	}
	return refs
}

// tree picks up to n tables starting at root, each new one referenced by
// a foreign key of one already chosen; conds[i] joins refs[i+1].
func (q *gen) tree(root *table, n int) (refs []*ref, conds []string) {
	refs = []*ref{q.newRef(root)}
	have := map[*table]bool{root: true}
	for len(refs) < n {
		type cand struct {
			from *ref
			fk   *FK
		}
		var cands []cand
		for _, r := range refs {
			for _, fk := range r.t.up {
				if !have[q.g.byName[fk.Parent]] {
					cands = append(cands, cand{r, fk})
				}
			}
		}
		if len(cands) == 0 {
			break
		}
		c := pick(q, cands)
		p := q.newRef(q.g.byName[c.fk.Parent])
		have[p.t] = true
		refs = append(refs, p)
		conds = append(conds, q.fkCond(c.from, c.fk, p))
	}
	return refs, conds
}

// fkCond is the equality of child's and parent's key columns.
func (q *gen) fkCond(child *ref, fk *FK, parent *ref) string {
	parts := make([]string, len(fk.ChildCols))
	for i := range fk.ChildCols {
		a, b := colSQL(child, child.t.col(fk.ChildCols[i])), colSQL(parent, parent.t.col(fk.ParentCols[i]))
		if q.chance(0.5) {
			a, b = b, a
		}
		parts[i] = a + " = " + b
	}
	return strings.Join(parts, " and ")
}

// filters adds 0-3 predicates and maybe a subquery predicate to s.
func (q *gen) filters(s *selectStmt, scope []*ref, subqueryP float64) {
	for range pick(q, []int{0, 1, 1, 2, 2, 3}) {
		if p := q.pred(scope, 2); p != "" {
			s.where = append(s.where, p)
		}
	}
	if q.chance(subqueryP) {
		if p := q.subquery(scope); p != "" {
			s.where = append(s.where, p)
		}
	}
	q.r.Shuffle(len(s.where), func(i, j int) { s.where[i], s.where[j] = s.where[j], s.where[i] })
}

// alias names output column i.
func alias(i int) string { return fmt.Sprintf("o%d", i+1) }

// plainSelect is a projection of columns and expressions, filtered.
func (q *gen) plainSelect() selectStmt {
	var s selectStmt
	scope := q.joined(&s)
	q.filters(&s, scope, 0.4)
	var keys []string
	seen := map[string]bool{}
	for i := range q.r.IntN(4) + 1 {
		var v val
		if q.chance(0.3) {
			if c, ok := q.computed(scope); ok {
				v = c
			}
		}
		if v.sql == "" {
			rc := pick(q, cols(scope, func(*column) bool { return true }))
			v = colVal(rc.r, rc.c)
		}
		if seen[v.sql] {
			continue
		}
		seen[v.sql] = true
		keys = append(keys, s.output(v.sql, alias(i), v.plain && q.chance(0.5)))
	}
	var rows int64
	for _, r := range scope {
		rows = max(rows, r.t.rows)
	}
	switch {
	case rows > 20000 || q.chance(0.5):
		q.orderAll(&s, keys, 0.9)
	}
	return s
}

// groupKey draws a grouping expression: a column (preferring few distinct
// values), or extract(year), substring, CASE or arithmetic.
func (q *gen) groupKey(scope []*ref) val {
	if q.chance(0.3) {
		for range 3 {
			v, ok := q.computed(scope)
			if ok && v.k != kFloat {
				return v
			}
		}
	}
	few := cols(scope, func(c *column) bool { return c.distinct > 0 && c.distinct <= 2000 })
	all := cols(scope, func(*column) bool { return true })
	if len(few) > 0 && q.chance(0.8) {
		rc := pick(q, few)
		return colVal(rc.r, rc.c)
	}
	rc := pick(q, all)
	return colVal(rc.r, rc.c)
}

// grouped is an aggregation with GROUP BY, maybe HAVING, ORDER BY, LIMIT.
func (q *gen) grouped() selectStmt {
	var s selectStmt
	scope := q.joined(&s)
	q.filters(&s, scope, 0.35)
	q.feats.add(FeatGroupBy)
	var keys []string
	seen := map[string]bool{}
	groups := 1.0
	n := 0
	for range q.r.IntN(3) + 1 {
		v := q.groupKey(scope)
		if seen[v.sql] {
			continue
		}
		seen[v.sql] = true
		s.groupBy = append(s.groupBy, v.sql)
		keys = append(keys, s.output(v.sql, alias(n), v.plain && q.chance(0.5)))
		n++
		groups *= q.distinct(v)
	}
	var numeric []string
	for range q.r.IntN(3) + 1 {
		a, v := q.aggregate(scope)
		if v.k == kInt || v.k == kDec || v.k == kFloat {
			numeric = append(numeric, a)
		}
		keys = append(keys, s.output(a, alias(n), false))
		n++
	}
	if len(numeric) > 0 && q.chance(0.15) {
		// Arithmetic on aggregates (as Q14's ratio): every group holds a
		// row, so count(*) is never zero.
		e := numeric[0]
		switch op := pick(q, []string{"+", "-", "/"}); op {
		case "/":
			e += " / count(*)"
		default:
			a, v := q.aggregate(scope)
			if v.k != kInt && v.k != kDec && v.k != kFloat {
				a = "count(*)"
			}
			e += " " + op + " " + a
		}
		keys = append(keys, s.output(e, alias(n), false))
		n++
		q.feats.add(FeatAggArith)
	}
	if q.chance(0.3) {
		s.having = q.having(scope)
	}
	if groups > 20000 || q.chance(0.6) {
		q.orderAll(&s, keys, 0.5)
		if groups > 20000 && s.limit == 0 {
			s.limit = 100
			q.feats.add(FeatLimit)
		}
	}
	return s
}

// distinct estimates a group key's distinct values.
func (q *gen) distinct(v val) float64 {
	if v.plain {
		for _, r := range q.refs {
			for _, c := range r.t.cols {
				if colSQL(r, c) == v.sql {
					if c.distinct > 0 {
						return float64(c.distinct)
					}
					return float64(c.t.rows)
				}
			}
		}
	}
	if v.k == kInt && v.bounded {
		return math.Max(v.hi-v.lo+1, 1)
	}
	return 1000
}

// global is an aggregation without GROUP BY: one row, even over no rows
// (count gives 0, the others NULL).
func (q *gen) global() selectStmt {
	var s selectStmt
	scope := q.joined(&s)
	q.filters(&s, scope, 0.45)
	q.feats.add(FeatGlobalAgg)
	for i := range q.r.IntN(3) + 1 {
		a, _ := q.aggregate(scope)
		s.output(a, alias(i), false)
	}
	return s
}

// leftJoin counts each parent row's children (a LEFT JOIN whose right
// side only feeds count(), as TPC-H's Q13), maybe then counting parents
// per number of children through a derived table.
func (q *gen) leftJoin() selectStmt {
	var s selectStmt
	fk := pick(q, q.g.fks)
	parent := q.newRef(q.g.byName[fk.Parent])
	child := q.newRef(q.g.byName[fk.Child])
	on := q.fkCond(child, fk, parent)
	if q.chance(0.5) {
		if p := q.atom([]*ref{child}); p != "" {
			on += " and " + p
		}
	}
	s.from = fromSQL(parent) + "\n  left join " + fromSQL(child) + " on " + on
	q.feats.add(FeatLeftJoin)
	if q.chance(0.4) {
		if p := q.pred([]*ref{parent}, 1); p != "" {
			s.where = append(s.where, p)
		}
	}
	var keys []string
	for i, name := range fk.ParentCols {
		c := colSQL(parent, parent.t.col(name))
		s.groupBy = append(s.groupBy, c)
		keys = append(keys, s.output(c, alias(i), false))
	}
	cc := pick(q, child.t.cols)
	cnt := "count(" + colSQL(child, cc) + ")"
	q.feats.add(FeatCount)
	q.feats.add(FeatGroupBy)
	if q.chance(0.4) {
		// Q13's shape: the distribution of the counts.
		s.items = append(s.items, cnt+" as cnt")
		inner := s.text()
		out := selectStmt{from: "(" + strings.ReplaceAll(inner, "\n", "\n  ") + ") as d", groupBy: []string{"cnt"}}
		k := []string{out.output("cnt", "", true), out.output("count(*)", "o2", false)}
		q.feats.add(FeatDerivedTable)
		q.feats.add(FeatCountStar)
		if q.chance(0.7) {
			q.orderAll(&out, k, 0.3)
		}
		return out
	}
	keys = append(keys, s.output(cnt, alias(len(keys)), false))
	q.orderAll(&s, keys, 0.6)
	return s
}
