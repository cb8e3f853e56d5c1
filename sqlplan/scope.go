package sqlplan

import (
	"fmt"
	"sort"
	"strings"

	"gostachio/plan"

	"vitess.io/vitess/go/vt/sqlparser"
)

// planner holds the state of planning one statement.
type planner struct {
	name    string
	text    string
	loc     *locator
	tables  []plan.TableStats
	workers int
	cols    map[string]*column
	nrel    int
	b       *plan.Builder
	// ctes are the WITH definitions in force, innermost last.
	ctes []map[string]*sqlparser.CommonTableExpr
	// share holds the blocks computed once for several readers (share.go).
	share *sharing
}

// errAt is an *Error at offset pos.
func (p *planner) errAt(pos int, format string, args ...any) *Error {
	return newError(p.text, pos, format, args...)
}

// errNode is an *Error at node's text.
func (p *planner) errNode(node sqlparser.SQLNode, format string, args ...any) *Error {
	return p.errAt(p.loc.find(node), format, args...)
}

// newName reserves a unique column name from hint.
func (p *planner) newName(hint string) string {
	hint = strings.Map(func(r rune) rune {
		if r == ' ' || r == '\t' || r == '\n' {
			return -1
		}
		return r
	}, hint)
	if hint == "" {
		hint = "expr"
	}
	name := hint
	for i := 2; p.cols[name] != nil; i++ {
		name = fmt.Sprintf("%s_%d", hint, i)
	}
	return name
}

// addColumn registers a new column named from hint.
func (p *planner) addColumn(hint string, t typ, r *rel) *column {
	c := &column{name: p.newName(hint), t: t, rel: r, width: width(t, 0)}
	p.cols[c.name] = c
	return c
}

// scopeRel is a name a FROM item brings into scope: an alias and its
// columns (SQL name -> bound expression).
type scopeRel struct {
	alias string
	names []string
	exprs map[string]bexpr
}

// scope is the names visible in a block, and its enclosing blocks'.
type scope struct {
	parent *scope
	rels   []*scopeRel
	// outputs are the select list's aliases (GROUP BY, ORDER BY).
	outputs map[string]bexpr
}

// resolve finds column name, qualified by qual when not empty, in sc
// and its parents.
func (p *planner) resolve(sc *scope, qual, name string, pos int) (bexpr, error) {
	qual, name = strings.ToLower(qual), strings.ToLower(name)
	for s := sc; s != nil; s = s.parent {
		var found []bexpr
		var where []string
		qualSeen := false
		for _, r := range s.rels {
			if qual != "" && r.alias != qual {
				continue
			}
			qualSeen = qualSeen || qual != ""
			if e, ok := r.exprs[name]; ok {
				found = append(found, e)
				where = append(where, r.alias)
			}
		}
		if len(found) > 1 {
			return bexpr{}, p.errAt(pos, "ambiguous column %q (in %s)", name, strings.Join(where, " and "))
		}
		if len(found) == 1 {
			e := found[0]
			e.pos = pos
			return e, nil
		}
		if qualSeen {
			return bexpr{}, p.errAt(pos, "unknown column %q in %s%s", name, qual, p.suggest(name, s, qual))
		}
	}
	if qual != "" {
		return bexpr{}, p.errAt(pos, "unknown table %q%s", qual, suggestFrom(qual, aliases(sc)))
	}
	return bexpr{}, p.errAt(pos, "unknown column %q%s", name, p.suggest(name, sc, ""))
}

func aliases(sc *scope) []string {
	var out []string
	for s := sc; s != nil; s = s.parent {
		for _, r := range s.rels {
			out = append(out, r.alias)
		}
	}
	return out
}

// suggest names the closest column names in scope.
func (p *planner) suggest(name string, sc *scope, qual string) string {
	var cands []string
	for s := sc; s != nil; s = s.parent {
		for _, r := range s.rels {
			if qual == "" || r.alias == qual {
				cands = append(cands, r.names...)
			}
		}
	}
	return suggestFrom(name, cands)
}

// suggestFrom is " (did you mean x?)" for the candidates closest to name
// by edit distance, when one is close enough to be a likely typo.
func suggestFrom(name string, cands []string) string {
	best, bestD := []string(nil), len(name)/2+2
	for _, c := range cands {
		d := editDistance(name, c)
		switch {
		case d < bestD:
			best, bestD = []string{c}, d
		case d == bestD && len(best) > 0 && best[len(best)-1] != c:
			best = append(best, c)
		}
	}
	if len(best) == 0 {
		return ""
	}
	sort.Strings(best)
	if len(best) > 3 {
		best = best[:3]
	}
	return " (did you mean " + strings.Join(best, " or ") + "?)"
}

// editDistance is the Levenshtein distance of a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// baseRel binds an instance of stored table t under alias: its columns
// get the stored names where still free, alias-prefixed names otherwise.
func (p *planner) baseRel(t *plan.TableStats, alias string, pos int) (*rel, *scopeRel, error) {
	if t.Schema == nil || len(t.Schema) != len(t.Columns) {
		return nil, nil, p.errAt(pos, "table %q has no schema (column types and statistics): plan it from a dataset whose manifest records them", t.Name)
	}
	p.nrel++
	r := &rel{id: p.nrel, alias: alias, table: t, pos: pos}
	sr := &scopeRel{alias: alias, exprs: map[string]bexpr{}}
	rows := float64(t.Rows())
	for i, name := range t.Columns {
		st := t.Schema[i]
		ty, ok := typeOf(st)
		if !ok {
			return nil, nil, p.errAt(pos, "table %s column %s has type %s, which the planner cannot read", t.Name, name, st.Type)
		}
		if ty.k == kDecimal && (ty.scale < 0 || ty.scale > 18) {
			return nil, nil, p.errAt(pos, "table %s column %s has decimal scale %d, outside 0..18", t.Name, name, ty.scale)
		}
		n := name
		if p.cols[n] != nil {
			n = p.newName(alias + "_" + name)
		}
		c := &column{name: n, t: ty, rel: r, src: name, rng: st.Range, width: width(ty, st.AvgLen)}
		c.distinct = float64(st.Distinct)
		if c.distinct <= 0 {
			c.distinct = defaultDistinct(ty, rows, st.Range)
		}
		p.cols[n] = c
		r.cols = append(r.cols, c)
		low := strings.ToLower(name)
		sr.names = append(sr.names, low)
		sr.exprs[low] = bexpr{e: plan.Col(n), t: ty}
	}
	return r, sr, nil
}

// table finds a stored table by name (case-insensitive).
func (p *planner) table(name string) *plan.TableStats {
	for i := range p.tables {
		if strings.EqualFold(p.tables[i].Name, name) {
			return &p.tables[i]
		}
	}
	return nil
}

// cte finds a WITH definition in force.
func (p *planner) cte(name string) *sqlparser.CommonTableExpr {
	for i := len(p.ctes) - 1; i >= 0; i-- {
		if c, ok := p.ctes[i][strings.ToLower(name)]; ok {
			return c
		}
	}
	return nil
}
