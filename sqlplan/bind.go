package sqlplan

import (
	"strconv"
	"strings"

	"gostachio/plan"

	"vitess.io/vitess/go/vt/sqlparser"
)

// bindSelect binds one SELECT whose enclosing scope (for correlated
// names) is outer.
func (p *planner) bindSelect(sel *sqlparser.Select, outer *scope) (*block, error) {
	blk := &block{limit: -1, pos: p.loc.find(sel), onConds: map[*rel][]bexpr{}}
	if sel.With != nil {
		if sel.With.Recursive {
			return nil, p.errNode(sel, "WITH RECURSIVE is not supported")
		}
		m := map[string]*sqlparser.CommonTableExpr{}
		for _, c := range sel.With.CTEs {
			m[strings.ToLower(c.ID.String())] = c
		}
		p.ctes = append(p.ctes, m)
		defer func() { p.ctes = p.ctes[:len(p.ctes)-1] }()
	}
	if sel.Into != nil || sel.Lock != sqlparser.NoLock || len(sel.Windows) > 0 {
		return nil, p.errNode(sel, "SELECT ... INTO, locking clauses and windows are not supported")
	}
	sc := &scope{parent: outer}
	if len(sel.From) == 0 {
		return nil, p.errAt(blk.pos, "a SELECT needs a FROM clause")
	}
	p.loc.mark("from")
	for _, te := range sel.From {
		if err := p.bindFrom(te, blk, sc); err != nil {
			return nil, err
		}
	}
	if sel.Where != nil {
		p.loc.mark("where")
		for _, c := range flatten(sel.Where.Expr, false) {
			if err := p.bindCond(c, blk, sc); err != nil {
				return nil, err
			}
		}
		p.mergeExists(blk)
	}
	if err := p.bindProjection(sel, blk, sc); err != nil {
		return nil, err
	}
	if len(blk.leftJoins) > 0 {
		if err := p.rewriteLeftJoins(blk); err != nil {
			return nil, err
		}
	}
	p.oneScan(blk)
	return blk, nil
}

// bindFrom binds one FROM item into blk and sc.
func (p *planner) bindFrom(te sqlparser.TableExpr, blk *block, sc *scope) error {
	switch t := te.(type) {
	case *sqlparser.ParenTableExpr:
		for _, x := range t.Exprs {
			if err := p.bindFrom(x, blk, sc); err != nil {
				return err
			}
		}
		return nil
	case *sqlparser.JoinTableExpr:
		if err := p.bindFrom(t.LeftExpr, blk, sc); err != nil {
			return err
		}
		before := len(blk.rels)
		if err := p.bindFrom(t.RightExpr, blk, sc); err != nil {
			return err
		}
		var on []sqlparser.Expr
		if t.Condition != nil && t.Condition.On != nil {
			on = flatten(t.Condition.On, false)
		}
		if t.Condition != nil && len(t.Condition.Using) > 0 {
			return p.errNode(t, "JOIN ... USING is not supported: write ON")
		}
		switch t.Join {
		case sqlparser.NormalJoinType:
			for _, c := range on {
				if err := p.bindCond(c, blk, sc); err != nil {
					return err
				}
			}
			return nil
		case sqlparser.LeftJoinType:
			right := blk.rels[before:]
			if len(right) != 1 {
				return p.errNode(t, "LEFT JOIN is supported with one table or derived table on its right side")
			}
			r := right[0]
			blk.leftJoins = append(blk.leftJoins, r)
			x := &exprBinder{p: p, sc: sc}
			for _, c := range on {
				b, err := x.bind(c)
				if err != nil {
					return err
				}
				if b.t.k != kBool {
					return p.errAt(b.pos, "ON condition of a %s, want a condition", b.t)
				}
				blk.onConds[r] = append(blk.onConds[r], b)
			}
			return nil
		}
		return p.errNode(t, "%s is not supported (inner joins, comma joins and LEFT JOIN are)", t.Join.ToString())
	case *sqlparser.AliasedTableExpr:
		pos := p.loc.find(t)
		if len(t.Partitions) > 0 || len(t.Hints) > 0 {
			return p.errAt(pos, "table partitions and index hints are not supported")
		}
		switch s := t.Expr.(type) {
		case sqlparser.TableName:
			name := s.Name.String()
			alias := strings.ToLower(name)
			if !t.As.IsEmpty() {
				alias = t.As.String()
			}
			alias = strings.ToLower(alias)
			if c := p.cte(name); c != nil && s.Qualifier.IsEmpty() {
				sub, ok := c.Subquery.(*sqlparser.Select)
				if !ok {
					return p.errAt(pos, "WITH %s: only a SELECT is supported", name)
				}
				cols := c.Columns
				if len(t.Columns) > 0 {
					cols = t.Columns
				}
				saved := p.loc.last
				p.loc.last = p.loc.find(sub)
				err := p.bindDerived(sub, alias, cols, blk, sc, pos)
				p.loc.last = max(saved, p.loc.last)
				return err
			}
			tab := p.table(name)
			if tab == nil {
				var names []string
				for i := range p.tables {
					names = append(names, p.tables[i].Name)
				}
				return p.errAt(p.loc.word(name), "unknown table %q%s", name, suggestFrom(strings.ToLower(name), names))
			}
			if len(t.Columns) > 0 {
				return p.errAt(pos, "column aliases on a stored table are not supported")
			}
			r, sr, err := p.baseRel(tab, alias, pos)
			if err != nil {
				return err
			}
			for _, have := range sc.rels {
				if have.alias == alias {
					return p.errAt(pos, "table name %q appears twice in FROM: give one an alias", alias)
				}
			}
			blk.rels = append(blk.rels, r)
			sc.rels = append(sc.rels, sr)
			return nil
		case *sqlparser.DerivedTable:
			if t.As.IsEmpty() {
				return p.errAt(pos, "a derived table needs an alias")
			}
			sub, ok := s.Select.(*sqlparser.Select)
			if !ok || s.Lateral {
				return p.errAt(pos, "only a plain SELECT is supported as a derived table")
			}
			return p.bindDerived(sub, strings.ToLower(t.As.String()), t.Columns, blk, sc, pos)
		}
	}
	return p.errNode(te, "FROM item %q is not supported", sqlparser.String(te))
}

// bindDerived binds a derived table (or a WITH table's use) named alias:
// a plain select-project-join merges into blk; one that aggregates,
// deduplicates or limits becomes a relation of its own.
func (p *planner) bindDerived(sel *sqlparser.Select, alias string, cols sqlparser.Columns, blk *block, sc *scope, pos int) error {
	sub, err := p.bindSelect(sel, sc.parent)
	if err != nil {
		return err
	}
	if len(cols) > 0 && len(cols) != len(sub.outs) {
		return p.errAt(pos, "%s names %d columns but its SELECT has %d", alias, len(cols), len(sub.outs))
	}
	sr := &scopeRel{alias: alias, exprs: map[string]bexpr{}}
	for _, have := range sc.rels {
		if have.alias == alias {
			return p.errAt(pos, "table name %q appears twice in FROM: give one an alias", alias)
		}
	}
	names := make([]string, len(sub.outs))
	for i, o := range sub.outs {
		names[i] = strings.ToLower(o.sql)
		if len(cols) > 0 {
			names[i] = cols[i].Lowered()
		}
		if _, dup := sr.exprs[names[i]]; dup {
			return p.errAt(pos, "%s has two columns named %s", alias, names[i])
		}
		sr.names = append(sr.names, names[i])
	}
	if !sub.grouped && !sub.distinct && sub.limit < 0 && len(sub.order) == 0 {
		// Merge: its relations, conditions and attachments join blk.
		blk.rels = append(blk.rels, sub.rels...)
		blk.conds = append(blk.conds, sub.conds...)
		blk.leftJoins = append(blk.leftJoins, sub.leftJoins...)
		for r, c := range sub.onConds {
			blk.onConds[r] = c
		}
		for i, o := range sub.outs {
			sr.exprs[names[i]] = o.e
		}
		sc.rels = append(sc.rels, sr)
		return nil
	}
	if len(sub.order) > 0 || sub.limit >= 0 {
		return p.errAt(pos, "ORDER BY and LIMIT in a derived table are not supported")
	}
	p.nrel++
	r := &rel{id: p.nrel, alias: alias, sub: sub, pos: pos}
	for i, o := range sub.outs {
		c := p.addColumn(names[i], o.e.t, r)
		c.distinct, c.width = p.exprDistinct(o.e.e), p.exprWidth(o.e)
		c.agg = p.aggOf(o.e.e)
		r.out = append(r.out, c)
		sr.exprs[names[i]] = bexpr{e: plan.Col(c.name), t: c.t}
	}
	blk.rels = append(blk.rels, r)
	sc.rels = append(sc.rels, sr)
	return nil
}

// isAggregate reports whether n is an aggregate call.
func isAggregate(n sqlparser.SQLNode) bool {
	switch n.(type) {
	case *sqlparser.Sum, *sqlparser.Count, *sqlparser.CountStar, *sqlparser.Avg, *sqlparser.Min, *sqlparser.Max:
		return true
	}
	return false
}

// hasAggregate reports whether an aggregate occurs in n outside
// subqueries.
func hasAggregate(n sqlparser.SQLNode) bool {
	found := false
	_ = sqlparser.Walk(func(x sqlparser.SQLNode) (bool, error) {
		if _, ok := x.(*sqlparser.Subquery); ok {
			return false, nil
		}
		if isAggregate(x) {
			found = true
		}
		return !found, nil
	}, n)
	return found
}

// bindProjection binds the select list, GROUP BY, HAVING, ORDER BY and
// LIMIT of sel.
func (p *planner) bindProjection(sel *sqlparser.Select, blk *block, sc *scope) error {
	items := sel.SelectExprs.Exprs
	blk.distinct = sel.Distinct
	grouped := sel.GroupBy != nil && len(sel.GroupBy.Exprs) > 0 || sel.Having != nil
	for _, it := range items {
		if hasAggregate(it) {
			grouped = true
		}
	}
	for _, o := range sel.OrderBy {
		if hasAggregate(o.Expr) {
			grouped = true
		}
	}
	blk.grouped = grouped
	pre := &exprBinder{p: p, sc: sc}
	post := &exprBinder{p: p, sc: sc}
	if grouped {
		post.agg = &aggCtx{p: p, blk: blk, seen: map[string]string{}}
	}
	// Select items first, located in text order; GROUP BY may name them.
	p.loc.mark("select")
	type item struct {
		sql  string
		node sqlparser.Expr
	}
	var its []item
	for _, it := range items {
		switch e := it.(type) {
		case *sqlparser.StarExpr:
			qual := strings.ToLower(e.TableName.Name.String())
			n := 0
			for _, r := range sc.rels {
				if qual != "" && r.alias != qual {
					continue
				}
				for _, name := range r.names {
					its = append(its, item{name, &sqlparser.ColName{Name: sqlparser.NewIdentifierCI(name), Qualifier: sqlparser.TableName{Name: sqlparser.NewIdentifierCS(r.alias)}}})
					n++
				}
			}
			if n == 0 {
				return p.errNode(e, "%s matches no columns", sqlparser.String(e))
			}
		case *sqlparser.AliasedExpr:
			name := e.As.String()
			if name == "" {
				if c, ok := e.Expr.(*sqlparser.ColName); ok {
					name = c.Name.String()
				} else {
					name = strings.ReplaceAll(sqlparser.String(e.Expr), " ", "")
				}
			}
			its = append(its, item{strings.ToLower(name), e.Expr})
		default:
			return p.errNode(it, "select item %q is not supported", sqlparser.String(it))
		}
	}
	// GROUP BY keys, over the joined rows.
	if sel.GroupBy != nil {
		if sel.GroupBy.WithRollup {
			return p.errNode(sel, "GROUP BY ... WITH ROLLUP is not supported")
		}
		for _, g := range sel.GroupBy.Exprs {
			var node sqlparser.Expr = g
			hint := "key"
			if n, ok := intLiteral(g); ok {
				if n < 1 || int(n) > len(its) {
					return p.errNode(g, "GROUP BY %d: the select list has %d items", n, len(its))
				}
				node, hint = its[n-1].node, its[n-1].sql
			} else if c, ok := g.(*sqlparser.ColName); ok && c.Qualifier.IsEmpty() {
				hint = c.Name.Lowered()
				if _, err := p.resolve(sc, "", c.Name.String(), 0); err != nil {
					for _, it := range its {
						if it.sql == hint {
							node = it.node
						}
					}
				}
			}
			if hasAggregate(node) {
				return p.errNode(g, "GROUP BY an aggregate is not allowed")
			}
			b, err := pre.bind(node)
			if err != nil {
				return err
			}
			p.addKey(blk, b, hint)
		}
	}
	for _, it := range its {
		b, err := post.bind(it.node)
		if err != nil {
			return err
		}
		blk.outs = append(blk.outs, output{sql: it.sql, e: b})
	}
	if sel.Having != nil {
		p.loc.mark("having")
		for _, c := range flatten(sel.Having.Expr, false) {
			if err := p.bindHaving(c, blk, sc, post); err != nil {
				return err
			}
		}
	}
	// ORDER BY: an ordinal, an output's name, or an expression.
	p.loc.mark("order")
	var hidden []output
	for _, o := range sel.OrderBy {
		desc := o.Direction == sqlparser.DescOrder
		idx := -1
		if n, ok := intLiteral(o.Expr); ok {
			if n < 1 || int(n) > len(blk.outs) {
				return p.errNode(o.Expr, "ORDER BY %d: the select list has %d items", n, len(blk.outs))
			}
			idx = int(n - 1)
		} else if c, ok := o.Expr.(*sqlparser.ColName); ok && c.Qualifier.IsEmpty() {
			for i, out := range blk.outs {
				if out.sql == c.Name.Lowered() {
					idx = i
					break
				}
			}
		}
		if idx >= 0 {
			blk.order = append(blk.order, sortKey{name: strconv.Itoa(idx), desc: desc})
			continue
		}
		b, err := post.bind(o.Expr)
		if err != nil {
			return err
		}
		for i, out := range blk.outs {
			if out.e.e.String() == b.e.String() {
				idx = i
			}
		}
		if idx < 0 {
			idx = len(blk.outs) + len(hidden)
			hidden = append(hidden, output{sql: "", e: b})
		}
		blk.order = append(blk.order, sortKey{name: strconv.Itoa(idx), desc: desc})
	}
	if sel.Limit != nil {
		if sel.Limit.Offset != nil {
			return p.errNode(sel.Limit.Offset, "OFFSET is not supported")
		}
		n, ok := intLiteral(sel.Limit.Rowcount)
		if !ok || n < 0 || n > 1<<31 {
			return p.errNode(sel.Limit.Rowcount, "LIMIT needs a non-negative integer literal")
		}
		blk.limit = int(n)
	}
	// Name every output and hidden sort column.
	all := append(blk.outs, hidden...)
	for i := range all {
		if grouped {
			e, err := p.postAgg(blk, all[i].e)
			if err != nil {
				return err
			}
			all[i].e = e
		}
		if c, ok := all[i].e.e.(plan.Col); ok {
			all[i].name = string(c)
		} else {
			hint := all[i].sql
			if hint == "" || strings.ContainsAny(hint, "()*+-/,'") {
				hint = "expr"
			}
			all[i].name = p.addColumn(hint, all[i].e.t, nil).name
		}
	}
	blk.outs = all[:len(blk.outs)]
	for i := range blk.order {
		n, _ := strconv.Atoi(blk.order[i].name)
		blk.order[i].name = all[n].name
	}
	if len(hidden) > 0 {
		blk.outs = all
		blk.hiddenOuts = len(hidden)
	}
	for i := range blk.having {
		e, err := p.postAgg(blk, blk.having[i])
		if err != nil {
			return err
		}
		blk.having[i] = e
	}
	return nil
}

// addKey adds a group key: a plain column keeps its name, an expression
// gets a new column.
func (p *planner) addKey(blk *block, b bexpr, hint string) {
	for _, k := range blk.keys {
		if k.E.String() == b.e.String() {
			return
		}
	}
	if c, ok := b.e.(plan.Col); ok {
		blk.keys = append(blk.keys, plan.As(string(c), c))
		return
	}
	c := p.addColumn(hint, b.t, nil)
	c.distinct = p.exprDistinct(b.e)
	c.width = p.exprWidth(b)
	blk.keys = append(blk.keys, plan.As(c.name, b.e))
}

// postAgg rewrites an expression over the joined rows into one over the
// aggregation's output: group-key expressions become the key columns;
// anything else must be an aggregate's column.
func (p *planner) postAgg(blk *block, b bexpr) (bexpr, error) {
	keyOf := map[string]string{}
	for _, k := range blk.keys {
		keyOf[k.E.String()] = k.Name
	}
	outs := map[string]bool{}
	for _, a := range blk.aggs {
		outs[a.As] = true
	}
	for _, cd := range blk.countDistincts {
		outs[cd.as] = true
	}
	for _, r := range blk.havingRels {
		for _, c := range r.out {
			outs[c.name] = true
		}
	}
	var bad string
	var walk func(e plan.Expr) plan.Expr
	walk = func(e plan.Expr) plan.Expr {
		if k, ok := keyOf[e.String()]; ok {
			return plan.Col(k)
		}
		switch x := e.(type) {
		case plan.Col:
			if !outs[string(x)] && bad == "" {
				bad = string(x)
			}
		case plan.Call:
			args := make([]plan.Expr, len(x.Args))
			for i, a := range x.Args {
				args[i] = walk(a)
			}
			return plan.Call{Fn: x.Fn, Args: args}
		}
		return e
	}
	out := walk(b.e)
	if bad != "" {
		return b, p.errAt(b.pos, "column %s must appear in GROUP BY or inside an aggregate", p.sqlName(bad))
	}
	return bexpr{e: out, t: b.t, pos: b.pos}, nil
}

// sqlName is a registered column's stored name, for messages.
func (p *planner) sqlName(name string) string {
	if c := p.cols[name]; c != nil && c.src != "" {
		return c.src
	}
	return name
}
