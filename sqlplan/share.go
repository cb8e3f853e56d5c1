package sqlplan

import (
	"fmt"
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
