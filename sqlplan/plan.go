package sqlplan

import (
	"fmt"
	"strings"

	"gostachio/plan"
)

// planSQL parses, binds, decorrelates and lowers text. A panic in a
// stage is a planner bug; it is returned as an error rather than taking
// the caller down.
func planSQL(name, text string, tables []plan.TableStats, opts Options) (pl *plan.Plan, err error) {
	defer func() {
		if r := recover(); r != nil {
			pl, err = nil, &Error{Pos: -1, Msg: fmt.Sprintf("internal planner error on %s: %v", name, r)}
		}
	}()
	sel, err := parse(text)
	if err != nil {
		return nil, err
	}
	w := opts.Workers
	if w <= 0 {
		w = DefaultWorkers
	}
	p := &planner{name: name, text: text, loc: newLocator(text), tables: tables, workers: w, cols: map[string]*column{}}
	blk, err := p.bindSelect(sel, nil)
	if err != nil {
		return nil, err
	}
	p.b = plan.NewBuilder(name, tables).TextColumns(p.isText)
	p.noteBlocks(blk)
	s, err := p.lowerBlock(blk)
	if err != nil {
		return nil, err
	}
	if err := p.finish(s, blk); err != nil {
		return nil, err
	}
	pl, err = p.b.Build()
	if err != nil {
		return nil, &Error{Pos: -1, Msg: err.Error()}
	}
	return pl, nil
}

// isText reports whether a stored column is text longer than a flag
// (plan.Builder.TextColumns).
func (p *planner) isText(table, column string) bool {
	t := p.table(table)
	if t == nil {
		return false
	}
	i := t.Column(column)
	return i >= 0 && i < len(t.Schema) && t.Schema[i].Type == plan.TypeString &&
		(t.Schema[i].AvgLen == 0 || t.Schema[i].AvgLen > plan.TextFlagBytes)
}

// finish orders, limits and outputs the top block's stream on worker 0:
// a limit keeps the top rows per worker, gathers them and keeps the top
// rows of those; an order alone gathers and sorts.
func (p *planner) finish(s *stream, blk *block) error {
	visible := blk.outs[:len(blk.outs)-blk.hiddenOuts]
	used := map[string]bool{}
	var outNames []string
	ns := make([]plan.Named, 0, len(blk.outs))
	for _, o := range visible {
		n := o.sql
		for i := 2; used[n]; i++ {
			n = fmt.Sprintf("%s_%d", o.sql, i)
		}
		used[n] = true
		outNames = append(outNames, n)
		ns = append(ns, plan.As(n, plan.Col(o.name)))
	}
	rename := map[string]string{}
	for i, o := range visible {
		rename[o.name] = outNames[i]
	}
	for _, o := range blk.outs[len(visible):] {
		n := o.name
		for i := 2; used[n]; i++ {
			n = fmt.Sprintf("%s_%d", o.name, i)
		}
		used[n] = true
		rename[o.name] = n
		ns = append(ns, plan.As(n, plan.Col(o.name)))
	}
	var keys []string
	for _, k := range blk.order {
		n := rename[k.name]
		if strings.ContainsAny(n, " \t") {
			return p.errAt(blk.pos, "cannot sort on %q: its name has spaces; give it an alias", n)
		}
		if k.desc {
			n += " desc"
		}
		keys = append(keys, n)
	}
	for _, n := range ns {
		p.cols[n.Name] = p.cols[string(n.E.(plan.Col))]
	}
	s = p.project(s, ns)
	if blk.limit >= 0 && len(keys) == 0 {
		keys = []string{outNames[0]}
	}
	switch {
	case blk.limit >= 0:
		// A scan pipeline ends in its one breaker: gather it whole.
		switch s.dist {
		case dPart:
			g := s.p.TopK(blk.limit, keys...).Gather()
			s.p = p.b.From(g).Named("result")
		case dSpread:
			g := s.p.Gather()
			s.p = p.b.From(g).Named("result")
		}
		s.p.TopK(blk.limit, keys...)
	case len(keys) > 0:
		if s.dist != dSingle {
			g := s.p.Gather()
			s.p = p.b.From(g).Named("result")
		}
		s.p.Sort(keys...)
	default:
		if s.dist != dSingle {
			g := s.p.Gather()
			s.p = p.b.From(g).Named("result")
			// A pipeline reading inputs runs its units through the ops
			// before its sink: the result needs one, a pass-through here.
			pass := make([]plan.Named, len(outNames))
			for i, n := range outNames {
				pass[i] = plan.As(n, plan.Col(n))
			}
			s.p.Select(p.rowsWidth(outNames), pass...)
		}
	}
	s.p.Output(outNames...)
	return nil
}
