package queries

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"gostachio/plan"
	"gostachio/tpch/schema"
)

// A static checker of executable plans, following the execution contract of docs/design.md: it
// walks every pipeline tracking the batch's columns (names and types) and
// how its rows are distributed over devices, and rejects what the engine
// would fail on or compute wrongly: unknown or duplicate columns, type
// errors in expressions, join keys of different types, carried columns the
// build lacks, a Partial not followed by its exchange, a Final whose
// aggregates differ from its Partial's, a hash build that not every probing
// device holds (built from a scan, or partitioned unlike the probe), data
// copied to every device then gathered or aggregated (counted W times), a
// result not on one device, and pipelines whose output nobody reads. While
// walking it compiles each operator into a step of the reference
// interpreter (interp_test.go).

// distKind says how a batch's rows are spread over the devices.
type distKind uint8

const (
	dSpread distKind = iota + 1 // scan units dealt round-robin: any row anywhere
	dPart                       // hash-partitioned on keys
	dRepl                       // a full copy on every device
	dSingle                     // all on device 0
)

type dist struct {
	k    distKind
	keys []string // dPart
}

func (d dist) String() string {
	switch d.k {
	case dSpread:
		return "spread over devices"
	case dPart:
		return fmt.Sprintf("partitioned on %v", d.keys)
	case dRepl:
		return "replicated on every device"
	case dSingle:
		return "on device 0"
	}
	return "?"
}

func (d dist) equal(e dist) bool { return d.k == e.k && slices.Equal(d.keys, e.keys) }

// rows is a device's batch.
type rows [][]value

// step is one compiled operator over a device's batch; rt gives access to
// hash tables of earlier pipelines.
type step func(rt *runtime, dev int, in rows) (rows, error)

// partialSpec is the Partial that fills an exchange: its keys and aggregates.
type partialSpec struct {
	keys []string
	aggs plan.Aggs
}

// pipeInfo is what the checker learned about a pipeline.
type pipeInfo struct {
	name    string
	table   string     // scan pipelines
	scanIdx []int      // scanned columns' indices in the table
	prune   [][3]int64 // column index in the scan, lo, hi
	inputs  []int
	steps   []step
	sink    plan.Op
	out     cols // the columns at the sink (delivered, retained, built or output)
	dist    dist // where the sink's output lies (for a hash build: its table)
	partial *partialSpec
	keyIdx  []int // hash-build keys, shuffle keys or output columns in out
	readers int
}

// checked is a plan that passed the checker, ready to interpret.
type checked struct {
	p     *plan.Plan
	pipes []*pipeInfo
}

// checkPlan runs the static checks over p.
func checkPlan(p *plan.Plan) (*checked, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	c := &checked{p: p}
	results := 0
	for i := range p.Pipelines {
		pi, err := c.pipeline(i)
		if err != nil {
			return nil, fmt.Errorf("%s: pipeline %d (%s): %w", p.Name, i, p.Pipelines[i].Name, err)
		}
		c.pipes = append(c.pipes, pi)
		if pi.sink.Kind == plan.OpResult {
			results++
			if i != len(p.Pipelines)-1 {
				return nil, fmt.Errorf("%s: pipeline %d (%s): the result must be the last pipeline", p.Name, i, pi.name)
			}
		}
	}
	if results != 1 {
		return nil, fmt.Errorf("%s: %d result pipelines, want 1", p.Name, results)
	}
	for i, pi := range c.pipes[:len(c.pipes)-1] {
		if pi.readers == 0 {
			return nil, fmt.Errorf("%s: pipeline %d (%s): nobody reads its output", p.Name, i, pi.name)
		}
	}
	return c, nil
}

func (c *checked) pipeline(i int) (*pipeInfo, error) {
	pl := &c.p.Pipelines[i]
	pi := &pipeInfo{name: pl.Name, sink: *pl.Sink()}
	var cur cols
	var d dist
	ops := pl.Ops
	// fromPartial: the inputs' partial state, consumable by a Final that is
	// the pipeline's first op.
	var fromPartial *partialSpec
	switch pl.Source.Kind {
	case plan.SourceScan:
		ts := &c.p.Tables[pl.Source.Table]
		st, err := schema.Lookup(ts.Name)
		if err != nil {
			return nil, err
		}
		pi.table = ts.Name
		scan := ops[0]
		for _, name := range scan.Out {
			j := st.Column(name)
			if j < 0 {
				return nil, fmt.Errorf("scan: table %s has no column %q", ts.Name, name)
			}
			pi.scanIdx = append(pi.scanIdx, j)
			cur = append(cur, column{name, schemaType(st.Columns[j])})
		}
		for _, r := range scan.Prune {
			j := cur.index(r.Column)
			if j < 0 {
				return nil, fmt.Errorf("prune on %q, not a scanned column", r.Column)
			}
			if cur[j].t.k == kStr || r.Lo > r.Hi {
				return nil, fmt.Errorf("prune range %v on a %v column", r, cur[j].t)
			}
			pi.prune = append(pi.prune, [3]int64{int64(j), r.Lo, r.Hi})
		}
		d = dist{k: dSpread}
		ops = ops[1:]
	case plan.SourceInputs:
		for n, j := range pl.Source.Inputs {
			in := c.pipes[j]
			switch in.sink.Kind {
			case plan.OpHashBuild, plan.OpResult:
				return nil, fmt.Errorf("reads pipeline %d (%s), which ends in %s", j, in.name, in.sink.Kind)
			}
			in.readers++
			if n == 0 {
				cur, d, fromPartial = in.out, in.dist, in.partial
				continue
			}
			if !sameCols(cur, in.out) || !d.equal(in.dist) {
				return nil, fmt.Errorf("inputs differ: pipeline %d gives (%s) %v, pipeline %d gives (%s) %v",
					pl.Source.Inputs[0], colsString(cur), d, j, colsString(in.out), in.dist)
			}
			if !samePartial(fromPartial, in.partial) {
				fromPartial = nil
			}
		}
		pi.inputs = pl.Source.Inputs
	}
	if err := cur.unique(); err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	if fromPartial != nil && (len(ops) == 0 || ops[0].Kind != plan.OpAggFinal) {
		return nil, fmt.Errorf("reads partial aggregate states without a Final")
	}
	for n, op := range ops {
		last := n == len(ops)-1
		where := fmt.Sprintf("op %s %q", op.Kind, op.Label)
		var err error
		switch op.Kind {
		case plan.OpFilter:
			err = c.filter(pi, op, cur)
		case plan.OpProject:
			cur, d, err = c.project(pi, op, cur, d)
		case plan.OpHashProbe:
			cur, err = c.probe(pi, op, cur, d)
		case plan.OpAggPartial:
			if last || n != len(ops)-2 || (ops[n+1].Kind != plan.OpGather && ops[n+1].Kind != plan.OpShuffle) {
				err = fmt.Errorf("a Partial must be the last streaming op, followed by Gather or Shuffle")
				break
			}
			if d.k == dRepl {
				err = fmt.Errorf("aggregates data %v: every row counted once per device", d)
				break
			}
			cur, err = c.partialAgg(pi, op, cur)
		case plan.OpAggFinal:
			if n != 0 || pl.Source.Kind != plan.SourceInputs || fromPartial == nil {
				err = fmt.Errorf("a Final must be the first op of a From pipeline whose inputs all end in a Partial and an exchange")
				break
			}
			cur, err = c.finalAgg(pi, op, cur, fromPartial)
		case plan.OpSort, plan.OpTopK:
			err = c.sortOp(pi, op, cur)
		case plan.OpHashBuild, plan.OpShuffle, plan.OpBroadcast, plan.OpGather, plan.OpResult:
			if !last {
				err = fmt.Errorf("%s must end the pipeline", op.Kind)
				break
			}
			d, err = c.sinkOp(pi, op, cur, d, pl.Source.Kind == plan.SourceScan)
		default:
			err = fmt.Errorf("unexpected operator")
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if err := cur.unique(); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
	}
	pi.out, pi.dist = cur, d
	return pi, nil
}

func sameCols(a, b cols) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].name != b[i].name || !sameType(a[i].t, b[i].t) {
			return false
		}
	}
	return true
}

func colsString(s cols) string {
	parts := make([]string, len(s))
	for i, c := range s {
		parts[i] = c.name + " " + c.t.String()
	}
	return strings.Join(parts, ", ")
}

func samePartial(a, b *partialSpec) bool {
	return a != nil && b != nil && slices.Equal(a.keys, b.keys) && a.aggs.String() == b.aggs.String()
}

func (c *checked) filter(pi *pipeInfo, op plan.Op, cur cols) error {
	if !(op.Selectivity > 0 && op.Selectivity <= 1) {
		return fmt.Errorf("selectivity %v outside (0, 1]", op.Selectivity)
	}
	ev, t, err := compileExpr(op.Expr, cur)
	if err != nil {
		return err
	}
	if t.k != kBool {
		return fmt.Errorf("predicate of type %v", t)
	}
	pi.steps = append(pi.steps, func(_ *runtime, _ int, in rows) (rows, error) {
		var out rows
		for _, r := range in {
			if ev(r).i != 0 {
				out = append(out, r)
			}
		}
		return out, nil
	})
	return nil
}

func (c *checked) project(pi *pipeInfo, op plan.Op, cur cols, d dist) (cols, dist, error) {
	proj, ok := op.Expr.(plan.Projection)
	if !ok {
		return nil, d, fmt.Errorf("expression %T, want plan.Projection", op.Expr)
	}
	if op.OutWidth <= 0 {
		return nil, d, fmt.Errorf("width %d", op.OutWidth)
	}
	var out cols
	evs := make([]evaluator, len(proj))
	rename := map[string]string{}
	for i, nm := range proj {
		ev, t, err := compileExpr(nm.E, cur)
		if err != nil {
			return nil, d, fmt.Errorf("column %s: %w", nm.Name, err)
		}
		if t.k == kBool {
			return nil, d, fmt.Errorf("column %s is a predicate", nm.Name)
		}
		evs[i] = ev
		out = append(out, column{nm.Name, t.norm()})
		if src, ok := nm.E.(plan.Col); ok {
			if _, dup := rename[string(src)]; !dup {
				rename[string(src)] = nm.Name
			}
		}
	}
	if d.k == dPart {
		nd := dist{k: dPart}
		for _, k := range d.keys {
			n, ok := rename[k]
			if !ok {
				nd = dist{k: dSpread} // the partitioning can no longer be named
				break
			}
			nd.keys = append(nd.keys, n)
		}
		d = nd
	}
	pi.steps = append(pi.steps, func(_ *runtime, _ int, in rows) (rows, error) {
		out := make(rows, len(in))
		for j, r := range in {
			nr := make([]value, len(evs))
			for i, ev := range evs {
				nr[i] = ev(r)
			}
			out[j] = nr
		}
		return out, nil
	})
	return out, d, nil
}

func (c *checked) probe(pi *pipeInfo, op plan.Op, cur cols, d dist) (cols, error) {
	j, ok := op.Expr.(plan.Join)
	if !ok {
		return nil, fmt.Errorf("expression %T, want plan.Join", op.Expr)
	}
	if !(op.Selectivity > 0) || op.OutWidth <= 0 {
		return nil, fmt.Errorf("estimates: selectivity %v, width %d", op.Selectivity, op.OutWidth)
	}
	b := c.pipes[op.Build]
	b.readers++
	bkeys := b.sink.Keys
	if len(op.Keys) != len(bkeys) {
		return nil, fmt.Errorf("%d probe keys %v for %d build keys %v", len(op.Keys), op.Keys, len(bkeys), bkeys)
	}
	pk, err := cur.find("probe key", op.Keys)
	if err != nil {
		return nil, err
	}
	keyTypes := make([]typ, len(pk))
	for n := range pk {
		bt := b.out[b.keyIdx[n]].t
		if !sameType(cur[pk[n]].t, bt) {
			return nil, fmt.Errorf("probe key %s is %v, build key %s is %v", op.Keys[n], cur[pk[n]].t, bkeys[n], bt)
		}
		keyTypes[n] = bt
	}
	switch b.dist.k {
	case dRepl:
	case dSingle:
		if d.k != dSingle {
			return nil, fmt.Errorf("the build (pipeline %d) is only on device 0 but the probe is %v", op.Build, d)
		}
	case dPart:
		okPart := d.k == dPart && len(d.keys) == len(b.dist.keys)
		for m := 0; okPart && m < len(b.dist.keys); m++ {
			n := slices.Index(bkeys, b.dist.keys[m])
			okPart = n >= 0 && op.Keys[n] == d.keys[m]
		}
		if !okPart {
			return nil, fmt.Errorf("the build (pipeline %d) is %v on build keys %v; the probe is %v, not co-partitioned on probe keys %v",
				op.Build, b.dist, bkeys, d, op.Keys)
		}
	default:
		return nil, fmt.Errorf("the build (pipeline %d) is %v: feed it with Broadcast or co-partition both sides with Shuffle", op.Build, b.dist)
	}
	carry, err := b.out.find("carried column", j.Carry)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(op.Out, j.Carry) {
		return nil, fmt.Errorf("op Out %v differs from carry %v", op.Out, j.Carry)
	}
	out := cur
	switch j.Kind {
	case plan.JoinInner, plan.JoinLeftOuter:
		out = slices.Clone(cur)
		for _, k := range carry {
			out = append(out, b.out[k])
		}
	case plan.JoinSemi, plan.JoinAnti:
		if len(carry) > 0 {
			return nil, fmt.Errorf("a %s join carries no columns (carry %v)", j.Kind, j.Carry)
		}
	default:
		return nil, fmt.Errorf("unknown join kind %d", j.Kind)
	}
	build, kind := op.Build, j.Kind
	pi.steps = append(pi.steps, func(rt *runtime, dev int, in rows) (rows, error) {
		ht := rt.tables[build][dev]
		var res rows
		for _, r := range in {
			var match []int
			if len(pk) == 0 {
				match = ht.all
			} else {
				match = ht.m[keyString(r, pk, keyTypes)]
			}
			switch kind {
			case plan.JoinSemi:
				if len(match) > 0 {
					res = append(res, r)
				}
			case plan.JoinAnti:
				if len(match) == 0 {
					res = append(res, r)
				}
			default:
				for _, m := range match {
					nr := slices.Clone(r)
					for _, k := range carry {
						nr = append(nr, ht.rows[m][k])
					}
					res = append(res, nr)
				}
				if len(match) == 0 && kind == plan.JoinLeftOuter {
					res = append(res, append(slices.Clone(r), make([]value, len(carry))...))
				}
			}
		}
		return res, nil
	})
	return out, nil
}

// aggOp types an aggregate op's keys and aggregates.
func aggOp(op plan.Op, in cols) ([]int, plan.Aggs, error) {
	aggs, ok := op.Expr.(plan.Aggs)
	if !ok {
		return nil, nil, fmt.Errorf("expression %T, want plan.Aggs", op.Expr)
	}
	if op.Groups < 1 || op.OutWidth <= 0 {
		return nil, nil, fmt.Errorf("estimates: %d groups, width %d", op.Groups, op.OutWidth)
	}
	if len(aggs) == 0 {
		return nil, nil, fmt.Errorf("no aggregates")
	}
	ki, err := in.find("group key", op.Keys)
	return ki, aggs, err
}

func (c *checked) partialAgg(pi *pipeInfo, op plan.Op, cur cols) (cols, error) {
	ki, aggs, err := aggOp(op, cur)
	if err != nil {
		return nil, err
	}
	gs := make([]aggregate, len(aggs))
	var out cols
	kt := make([]typ, len(ki))
	for n, i := range ki {
		out = append(out, cur[i])
		kt[n] = cur[i].t
	}
	for n, a := range aggs {
		if gs[n], err = compileAgg(a, cur); err != nil {
			return nil, err
		}
		for m, name := range a.PartialColumns() {
			out = append(out, column{name, gs[n].states[m]})
		}
	}
	pi.partial = &partialSpec{keys: op.Keys, aggs: aggs}
	pi.steps = append(pi.steps, func(_ *runtime, _ int, in rows) (rows, error) {
		return groupRows(in, ki, kt, gs, false), nil
	})
	return out, nil
}

// groupRows aggregates in per key (first-appearance order): a Partial
// (merge false: emits keys and partial states) or a Final over partial
// states (merge true: emits keys and results). Without keys it yields one
// row even for no input.
func groupRows(in rows, ki []int, kt []typ, gs []aggregate, merge bool) rows {
	type group struct {
		key  []value
		accs []accumulator
	}
	idx := map[string]*group{}
	var order []*group
	get := func(r []value) *group {
		k := keyString(r, ki, kt)
		g := idx[k]
		if g == nil {
			g = &group{accs: make([]accumulator, len(gs))}
			for _, i := range ki {
				g.key = append(g.key, r[i])
			}
			idx[k] = g
			order = append(order, g)
		}
		return g
	}
	if len(ki) == 0 {
		get(nil)
	}
	for _, r := range in {
		g := get(r)
		off := len(ki)
		for n := range gs {
			if merge {
				w := len(gs[n].states)
				g.accs[n].merge(&gs[n], r[off:off+w])
				off += w
			} else {
				g.accs[n].add(&gs[n], r)
			}
		}
	}
	out := make(rows, 0, len(order))
	for _, g := range order {
		r := slices.Clone(g.key)
		for n := range gs {
			if merge {
				r = append(r, g.accs[n].final(&gs[n]))
			} else {
				r = append(r, g.accs[n].partial(&gs[n])...)
			}
		}
		out = append(out, r)
	}
	return out
}

func (c *checked) finalAgg(pi *pipeInfo, op plan.Op, cur cols, from *partialSpec) (cols, error) {
	ki, aggs, err := aggOp(op, cur)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(op.Keys, from.keys) || aggs.String() != from.aggs.String() {
		return nil, fmt.Errorf("Final (keys %v, %s) differs from its Partial (keys %v, %s)", op.Keys, aggs, from.keys, from.aggs)
	}
	// The input holds keys then each aggregate's state columns: type the
	// aggregates from the states.
	var out cols
	kt := make([]typ, len(ki))
	for n, i := range ki {
		out = append(out, cur[i])
		kt[n] = cur[i].t
	}
	gs := make([]aggregate, len(aggs))
	off := len(ki)
	for n, a := range aggs {
		g := aggregate{a: a}
		for range a.PartialColumns() {
			g.states = append(g.states, cur[off].t)
			off++
		}
		g.out = g.states[0]
		if a.Fn == plan.AggAvg {
			g.out = tFloat
		}
		gs[n] = g
		out = append(out, column{a.As, g.out})
	}
	pi.steps = append(pi.steps, func(_ *runtime, _ int, in rows) (rows, error) {
		return groupRows(in, ki, kt, gs, true), nil
	})
	return out, nil
}

func (c *checked) sortOp(pi *pipeInfo, op plan.Op, cur cols) error {
	if op.Kind == plan.OpTopK && op.Limit < 1 {
		return fmt.Errorf("limit %d", op.Limit)
	}
	if len(op.Keys) == 0 {
		return fmt.Errorf("no sort keys")
	}
	type key struct {
		i    int
		t    typ
		desc bool
	}
	var ks []key
	for _, s := range op.Keys {
		sk := plan.ParseSortKey(s)
		i := cur.index(sk.Col)
		if i < 0 || len(strings.Fields(s)) > 2 {
			return fmt.Errorf("sort key %q: unknown column (have %s)", s, strings.Join(cur.names(), ", "))
		}
		ks = append(ks, key{i, cur[i].t, sk.Desc})
	}
	limit := op.Limit
	topK := op.Kind == plan.OpTopK
	pi.steps = append(pi.steps, func(_ *runtime, _ int, in rows) (rows, error) {
		out := slices.Clone(in)
		sort.SliceStable(out, func(a, b int) bool {
			for _, k := range ks {
				c := cmpValues(out[a][k.i], k.t, out[b][k.i], k.t)
				if k.desc {
					c = -c
				}
				if c != 0 {
					return c < 0
				}
			}
			return false
		})
		if topK && len(out) > limit {
			out = out[:limit]
		}
		return out, nil
	})
	return nil
}

func (c *checked) sinkOp(pi *pipeInfo, op plan.Op, cur cols, d dist, scan bool) (dist, error) {
	switch op.Kind {
	case plan.OpHashBuild:
		if scan {
			return d, fmt.Errorf("a hash build fed by a scan holds only the chunks dealt to each device: Broadcast or Shuffle first")
		}
		ki, err := cur.find("build key", op.Keys)
		pi.keyIdx = ki
		return d, err
	case plan.OpShuffle:
		if d.k == dRepl {
			return d, fmt.Errorf("shuffles data %v: every row sent once per device", d)
		}
		ki, err := cur.find("shuffle key", op.Keys)
		if err != nil {
			return d, err
		}
		if pi.partial != nil {
			for _, k := range op.Keys {
				if !slices.Contains(pi.partial.keys, k) {
					return d, fmt.Errorf("shuffle key %s is not a group key of the Partial %v", k, pi.partial.keys)
				}
			}
		}
		if len(op.Keys) == 0 {
			return d, fmt.Errorf("shuffle without keys")
		}
		pi.keyIdx = ki
		return dist{k: dPart, keys: op.Keys}, nil
	case plan.OpBroadcast, plan.OpGather:
		if d.k == dRepl {
			return d, fmt.Errorf("%s of data %v: every row sent once per device", op.Kind, d)
		}
		if op.Kind == plan.OpBroadcast {
			return dist{k: dRepl}, nil
		}
		return dist{k: dSingle}, nil
	case plan.OpResult:
		if d.k != dSingle {
			return d, fmt.Errorf("the result is %v, want on device 0 (Gather first)", d)
		}
		ki, err := cur.find("result column", op.Out)
		pi.keyIdx = ki
		return d, err
	}
	return d, fmt.Errorf("unexpected sink")
}
