package plan

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// Explanation is a plan with the estimates it implies, as Explain prints
// it and ExplainJSON encodes it. Its JSON form is stable: fields are only
// ever added, never renamed or removed, and every row and byte figure is an
// integer.
//
// Rows and bytes are plan-wide: what every worker together produces, as if
// the plan ran on one. They follow the rules the scheduler sizes tasks by
// (scheduler.Estimate): a scan reads the rows of the chunks its pruning
// ranges leave; a filter or probe multiplies its input rows by its
// Selectivity; an aggregate multiplies by its Selectivity where set and
// keeps at most Groups rows; a top-k keeps at most Limit rows; every other
// operator keeps its input's rows. A pipeline reading the outputs of
// others starts from the sum of their outputs. Bytes are rows times the
// last output width set (an operator without one keeps its input's width).
// On W workers a partial aggregate holds up to W x Groups rows and a
// broadcast moves W copies; the figures here count one.
type Explanation struct {
	// Query is the plan's name.
	Query string `json:"query"`
	// PlanningNs is how long building the plan took, in nanoseconds, where
	// the caller measured it (0: not measured).
	PlanningNs int64               `json:"planning_ns,omitempty"`
	Pipelines  []ExplainedPipeline `json:"pipelines"`
	Totals     ExplainedTotals     `json:"totals"`
}

// ExplainedPipeline is one pipeline of an Explanation.
type ExplainedPipeline struct {
	Index int    `json:"index"`
	Name  string `json:"name"`
	// Source is where the pipeline's rows come from.
	Source ExplainedSource `json:"source"`
	// After lists the pipelines it waits for (probe builds included).
	After []int `json:"after"`
	// ProbedBy lists the pipelines probing this one's hash table (a
	// pipeline ending in a hash build).
	ProbedBy []int         `json:"probed_by,omitempty"`
	Ops      []ExplainedOp `json:"ops"`
	// RowsOut and BytesOut are what the pipeline's breaker emits.
	RowsOut  int64 `json:"rows_out"`
	BytesOut int64 `json:"bytes_out"`
}

// ExplainedSource is the source of an ExplainedPipeline.
type ExplainedSource struct {
	// Kind is "scan" or "inputs".
	Kind string `json:"kind"`
	// Table, Chunks, Pruned: a scan's table, its stored chunks and how many
	// of them its pruning ranges rule out by their min/max statistics.
	Table  string `json:"table,omitempty"`
	Chunks int    `json:"chunks,omitempty"`
	Pruned int    `json:"pruned,omitempty"`
	// Inputs are the pipelines whose outputs an inputs source reads.
	Inputs []int `json:"inputs,omitempty"`
	// Rows and Bytes enter the pipeline: a scan's rows of the surviving
	// chunks and the stored bytes of its columns there (what it reads), or
	// the sum of the inputs' outputs.
	Rows  int64 `json:"rows"`
	Bytes int64 `json:"bytes"`
}

// ExplainedOp is one operator of an ExplainedPipeline.
type ExplainedOp struct {
	// Kind is the OpKind's name ("scan", "filter", "hash-probe", ...).
	Kind  string `json:"kind"`
	Label string `json:"label,omitempty"`
	// Expr is the operator's expression where it says more than Label.
	Expr string   `json:"expr,omitempty"`
	Keys []string `json:"keys,omitempty"`
	// Out are the columns a scan projects, a projection computes or a
	// probe carries from its build side, or the result's columns.
	Out         []string `json:"out,omitempty"`
	Selectivity float64  `json:"selectivity"`
	RowsIn      int64    `json:"rows_in"`
	RowsOut     int64    `json:"rows_out"`
	// Width is the estimated bytes per output row; Bytes = RowsOut x Width.
	Width int   `json:"width"`
	Bytes int64 `json:"bytes"`
	// Groups (aggregates), Limit (top-k), Distinct (a hash build on
	// repeating keys: distinct keys per row).
	Groups   int64   `json:"groups,omitempty"`
	Limit    int     `json:"limit,omitempty"`
	Distinct float64 `json:"distinct,omitempty"`
	// Prune are a scan's min/max pruning ranges.
	Prune []ExplainedRange `json:"prune,omitempty"`
	// Build is the pipeline a hash probe probes (nil for other kinds).
	Build *int `json:"build,omitempty"`
	// Exchange is the data movement of an exchange breaker: "shuffle",
	// "broadcast" or "gather".
	Exchange string `json:"exchange,omitempty"`
}

// ExplainedRange is a pruning range: Lo and Hi integer-coded as in Range,
// and, where the table's schema types the column, as text ("1994-01-01",
// "0.05"; an open end as "-inf" / "+inf").
type ExplainedRange struct {
	Column string `json:"column"`
	Lo     int64  `json:"lo"`
	Hi     int64  `json:"hi"`
	Text   string `json:"text"`
}

// ExplainedTotals sums an Explanation.
type ExplainedTotals struct {
	Pipelines int `json:"pipelines"`
	Ops       int `json:"ops"`
	// Scans, Chunks, Pruned, ScanRows, ScanBytes: the scan pipelines, the
	// chunks of their tables, how many are pruned, and the rows and bytes
	// the scans read.
	Scans     int   `json:"scans"`
	Chunks    int   `json:"chunks"`
	Pruned    int   `json:"pruned"`
	ScanRows  int64 `json:"scan_rows"`
	ScanBytes int64 `json:"scan_bytes"`
	// ExchangeBytes is what the exchange breakers emit, by kind (one copy
	// of a broadcast).
	ExchangeBytes map[string]int64 `json:"exchange_bytes"`
	// ResultRows and ResultBytes are the result's.
	ResultRows  int64 `json:"result_rows"`
	ResultBytes int64 `json:"result_bytes"`
}

// Explain derives the plan's estimates (see Explanation). It fails on a
// plan that does not validate.
func (p *Plan) Explain() (*Explanation, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	e := &Explanation{Query: p.Name, Pipelines: make([]ExplainedPipeline, len(p.Pipelines)),
		Totals: ExplainedTotals{Pipelines: len(p.Pipelines), ExchangeBytes: map[string]int64{}}}
	outRows := make([]float64, len(p.Pipelines))
	outBytes := make([]float64, len(p.Pipelines))
	for i := range p.Pipelines {
		pl := &p.Pipelines[i]
		ep := &e.Pipelines[i]
		ep.Index, ep.Name, ep.After = i, pl.Name, append([]int{}, pl.After...)
		var rows, bytes float64
		switch pl.Source.Kind {
		case SourceScan:
			t := &p.Tables[pl.Source.Table]
			scan := &pl.Ops[0]
			cols, err := t.ColumnIndexes(scan.Out)
			if err != nil {
				return nil, fmt.Errorf("plan %s: pipeline %d (%s): %w", p.Name, i, pl.Name, err)
			}
			ep.Source = ExplainedSource{Kind: "scan", Table: t.Name, Chunks: len(t.Chunks)}
			for c := range t.Chunks {
				if !t.Survives(c, scan.Prune) {
					ep.Source.Pruned++
					continue
				}
				rows += float64(t.Chunks[c].Rows)
				for _, col := range cols {
					bytes += float64(t.Chunks[c].Bytes[col])
				}
			}
			e.Totals.Scans++
			e.Totals.Chunks += ep.Source.Chunks
			e.Totals.Pruned += ep.Source.Pruned
			e.Totals.ScanRows += int64(rows)
			e.Totals.ScanBytes += int64(bytes)
		case SourceInputs:
			ep.Source = ExplainedSource{Kind: "inputs", Inputs: append([]int{}, pl.Source.Inputs...)}
			for _, in := range pl.Source.Inputs {
				rows += outRows[in]
				bytes += outBytes[in]
			}
		}
		ep.Source.Rows, ep.Source.Bytes = whole(rows), whole(bytes)
		width := 0.0
		if rows > 0 {
			width = bytes / rows
		}
		for k := range pl.Ops {
			op := &pl.Ops[k]
			in := rows
			rows = opRows(op, rows)
			if op.OutWidth > 0 {
				width = float64(op.OutWidth)
			}
			ep.Ops = append(ep.Ops, explainOp(&p.Tables, pl, op, in, rows, width))
			if op.Kind == OpHashProbe {
				b := &e.Pipelines[op.Build]
				b.ProbedBy = append(b.ProbedBy, i)
			}
		}
		outRows[i], outBytes[i] = rows, rows*width
		ep.RowsOut, ep.BytesOut = whole(rows), whole(rows*width)
		e.Totals.Ops += len(pl.Ops)
		switch sink := pl.Sink(); {
		case sink.Kind.IsExchange():
			e.Totals.ExchangeBytes[sink.Kind.String()] += ep.BytesOut
		case sink.Kind == OpResult:
			e.Totals.ResultRows, e.Totals.ResultBytes = ep.RowsOut, ep.BytesOut
		}
	}
	return e, nil
}

// opRows is op's estimated output rows for in input rows (the rules of
// scheduler.Estimate, which the plan package cannot import).
func opRows(op *Op, in float64) float64 {
	r := in
	switch op.Kind {
	case OpFilter, OpHashProbe:
		r *= op.Selectivity
	case OpAggPartial, OpAggFinal:
		if op.Selectivity > 0 {
			r *= op.Selectivity
		}
		if op.Groups > 0 && r > float64(op.Groups) {
			r = float64(op.Groups)
		}
	case OpTopK:
		if op.Limit > 0 && r > float64(op.Limit) {
			r = float64(op.Limit)
		}
	}
	return r
}

// whole rounds an estimate up to a whole count, as the scheduler does (a
// fraction of a row is a row).
func whole(x float64) int64 {
	if !(x > 0) {
		return 0
	}
	return int64(math.Ceil(x - 1e-9))
}

func explainOp(tables *[]TableStats, pl *Pipeline, op *Op, in, out, width float64) ExplainedOp {
	eo := ExplainedOp{Kind: op.Kind.String(), Label: op.Label, Keys: op.Keys, Selectivity: op.Selectivity,
		RowsIn: whole(in), RowsOut: whole(out), Width: int(math.Round(width)), Bytes: whole(out * width),
		Groups: op.Groups, Limit: op.Limit, Distinct: op.Distinct}
	if op.Expr != nil {
		if s := op.Expr.String(); s != "" && s != op.Label && !strings.HasSuffix(op.Label, s) {
			eo.Expr = s
		}
	}
	switch op.Kind {
	case OpScan, OpProject, OpHashProbe, OpResult:
		eo.Out = op.Out
	}
	if op.Kind == OpHashProbe {
		b := op.Build
		eo.Build = &b
	}
	if op.Kind.IsExchange() {
		eo.Exchange = op.Kind.String()
	}
	if op.Kind == OpScan {
		t := &(*tables)[pl.Source.Table]
		for _, r := range op.Prune {
			eo.Prune = append(eo.Prune, ExplainedRange{Column: r.Column, Lo: r.Lo, Hi: r.Hi, Text: rangeText(t, r)})
		}
	}
	return eo
}

// rangeText renders r in the column's type where t's schema has it.
func rangeText(t *TableStats, r Range) string {
	typ, scale := TypeUnknown, 0
	if c := t.Column(r.Column); c >= 0 && c < len(t.Schema) {
		typ, scale = t.Schema[c].Type, t.Schema[c].Scale
	}
	return "[" + boundText(r.Lo, typ, scale, true) + ", " + boundText(r.Hi, typ, scale, false) + "]"
}

func boundText(v int64, typ ColumnType, scale int, lo bool) string {
	// Plans write an open end as the type's extreme; a range on a column
	// of unknown type is most often on a date32 or int32 one.
	open := v == math.MinInt64 || v == math.MaxInt64 ||
		(typ == TypeDate || typ == TypeInt32 || typ == TypeUnknown) && (v <= math.MinInt32 || v >= math.MaxInt32)
	switch {
	case open && lo:
		return "-inf"
	case open:
		return "+inf"
	case typ == TypeDate:
		return time.Unix(v*86400, 0).UTC().Format("2006-01-02")
	case typ == TypeDecimal && scale > 0:
		return decimalText(v, scale)
	}
	return strconv.FormatInt(v, 10)
}

// decimalText renders v scaled by 10^scale with scale digits after the
// point.
func decimalText(v int64, scale int) string {
	neg := v < 0
	u := uint64(v)
	if neg {
		u = -u
	}
	s := strconv.FormatUint(u, 10)
	if len(s) <= scale {
		s = strings.Repeat("0", scale-len(s)+1) + s
	}
	s = s[:len(s)-scale] + "." + s[len(s)-scale:]
	if neg {
		s = "-" + s
	}
	return s
}

// ExplainJSON is the plan's Explanation as indented JSON, with the
// planning time where planning is positive.
func (p *Plan) ExplainJSON(planning time.Duration) ([]byte, error) {
	e, err := p.Explain()
	if err != nil {
		return nil, err
	}
	e.PlanningNs = int64(max(planning, 0))
	out, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("plan %s: explain: %w", p.Name, err)
	}
	return append(out, '\n'), nil
}

// ExplainText writes the plan's Explanation to w as text: a header with
// the totals, then every pipeline with its source and operators, one
// operator a line with its estimated rows in and out and its output bytes.
// A planning time that is positive is printed in the header.
func (p *Plan) ExplainText(w io.Writer, planning time.Duration) error {
	e, err := p.Explain()
	if err != nil {
		return err
	}
	e.PlanningNs = int64(max(planning, 0))
	return e.WriteText(w)
}

// WriteText writes e to w as ExplainText describes.
func (e *Explanation) WriteText(w io.Writer) error {
	var b strings.Builder
	t := &e.Totals
	fmt.Fprintf(&b, "plan %s: %d pipelines, %d operators", e.Query, t.Pipelines, t.Ops)
	if e.PlanningNs > 0 {
		fmt.Fprintf(&b, ", planned in %s", time.Duration(e.PlanningNs).Round(time.Microsecond))
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "scans: %d reading %s rows, %s, from %d of %d chunks (%d pruned)\n",
		t.Scans, count(t.ScanRows), byteSize(t.ScanBytes), t.Chunks-t.Pruned, t.Chunks, t.Pruned)
	var ex []string
	for _, k := range []OpKind{OpShuffle, OpBroadcast, OpGather} {
		if n, ok := t.ExchangeBytes[k.String()]; ok {
			ex = append(ex, k.String()+" "+byteSize(n))
		}
	}
	if len(ex) == 0 {
		ex = []string{"none"}
	}
	fmt.Fprintf(&b, "exchanges: %s\n", strings.Join(ex, ", "))
	fmt.Fprintf(&b, "result: %s rows, %s\n", count(t.ResultRows), byteSize(t.ResultBytes))
	for i := range e.Pipelines {
		ep := &e.Pipelines[i]
		fmt.Fprintf(&b, "\n#%d %s\n", ep.Index, ep.Name)
		src := &ep.Source
		if src.Kind == "scan" {
			fmt.Fprintf(&b, "  source: scan %s, %d of %d chunks (%d pruned), %s rows, %s\n",
				src.Table, src.Chunks-src.Pruned, src.Chunks, src.Pruned, count(src.Rows), byteSize(src.Bytes))
		} else {
			fmt.Fprintf(&b, "  source: outputs of %s, %s rows, %s\n", pipeList(src.Inputs), count(src.Rows), byteSize(src.Bytes))
		}
		if len(ep.After) > 0 {
			fmt.Fprintf(&b, "  after: %s\n", pipeList(ep.After))
		}
		if len(ep.ProbedBy) > 0 {
			fmt.Fprintf(&b, "  probed by: %s\n", pipeList(ep.ProbedBy))
		}
		for k := range ep.Ops {
			writeOp(&b, &ep.Ops[k])
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeOp(b *strings.Builder, op *ExplainedOp) {
	fmt.Fprintf(b, "  %-11s %s -> %s rows, width %d, %s", op.Kind, count(op.RowsIn), count(op.RowsOut), op.Width, byteSize(op.Bytes))
	switch op.Kind {
	case OpFilter.String(), OpHashProbe.String():
		fmt.Fprintf(b, ", selectivity %s", strconv.FormatFloat(op.Selectivity, 'g', 4, 64))
	}
	if op.Groups > 0 {
		fmt.Fprintf(b, ", %s groups", count(op.Groups))
	}
	if op.Distinct > 0 {
		fmt.Fprintf(b, ", %s distinct keys per row", strconv.FormatFloat(op.Distinct, 'g', 4, 64))
	}
	b.WriteString("\n")
	detail := func(name, v string) {
		if v != "" {
			fmt.Fprintf(b, "  %11s %s: %s\n", "", name, v)
		}
	}
	switch op.Kind {
	case OpScan.String():
		detail("columns", strings.Join(op.Out, ", "))
		for _, r := range op.Prune {
			detail("prune", r.Column+" in "+r.Text)
		}
	case OpHashProbe.String():
		detail("probes", fmt.Sprintf("#%d on %s", *op.Build, strings.Join(op.Keys, ", ")))
		detail("join", op.Label)
	case OpResult.String():
		detail("columns", strings.Join(op.Out, ", "))
	case OpFilter.String(), OpProject.String(), OpAggPartial.String(), OpAggFinal.String():
		// Their labels are their expressions; the other kinds' labels
		// only repeat kind and keys.
		detail("keys", strings.Join(op.Keys, ", "))
		detail("expr", op.Label)
		detail("expr", op.Expr)
	case OpTopK.String():
		detail("keys", strings.Join(op.Keys, ", "))
		detail("limit", strconv.Itoa(op.Limit))
	default:
		detail("keys", strings.Join(op.Keys, ", "))
	}
}

// count renders n with thousands separators.
func count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var out []byte
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

// byteSize renders n bytes in binary units (plan imports nothing of the
// project, so not internal/units).
func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n), -1
	for v >= unit && i < 5 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTPE"[i])
}

func pipeList(ps []int) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = "#" + strconv.Itoa(p)
	}
	return strings.Join(s, ", ")
}
