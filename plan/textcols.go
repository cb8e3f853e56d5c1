package plan

import "gostachio/tpch/schema"

// The Builder types the plan's columns as text or not, by name, so that
// operators keyed on text (q16's sort on p_brand and p_type, q7's groups
// of nation names) are priced for it (Op.StrKeys): a scan
// brings its table's text columns (the TPC-H schema), a projection names
// a text expression (a text column under a new name, a SUBSTRING, a
// string literal, a CASE of text), and every other computed column
// (sums, counts, dates, years) is not text. Names are unique within a
// TPC-H plan, so one set per plan suffices.

// noteScanText records table's text columns among cols (none for a table
// the TPC-H schema does not know). One-byte flags (l_returnflag,
// l_linestatus, o_orderstatus) are not text here: they hash and compare
// in one byte, as an integer does (sorts on l_returnflag measured 41–53
// ns a row where sorts on p_brand and p_type took 330–600).
func (b *Builder) noteScanText(table string, cols []string) {
	t, err := schema.Lookup(table)
	if err != nil {
		return
	}
	for _, c := range cols {
		if i := t.Column(c); i >= 0 && t.Columns[i].Type == schema.String && tpchAvgLen[c] > TextFlagBytes {
			b.markText(c)
		}
	}
}

// TextFlagBytes is the longest average length of a text column that
// costs as an integer key (a one-byte flag).
const TextFlagBytes = 1

func (b *Builder) markText(name string) {
	if b.text == nil {
		b.text = map[string]bool{}
	}
	b.text[name] = true
}

// typeText sets op.StrKeys from the text columns known so far and records
// the text columns a projection makes.
func (b *Builder) typeText(op *Op) {
	if p, ok := op.Expr.(Projection); ok && op.Kind == OpProject {
		for _, n := range p {
			if b.isText(n.E) {
				b.markText(n.Name)
			}
		}
	}
	n := 0
	for _, k := range op.Keys {
		col := k
		if op.Kind == OpSort || op.Kind == OpTopK {
			col = ParseSortKey(k).Col
		}
		if b.text[col] {
			n++
		}
	}
	if j, ok := op.Expr.(Join); ok && op.Kind == OpHashProbe {
		for _, c := range j.Carry {
			if b.text[c] {
				n++
			}
		}
	}
	op.StrKeys = n
}

// isText reports whether e evaluates to text.
func (b *Builder) isText(e Expr) bool {
	switch x := e.(type) {
	case Col:
		return b.text[string(x)]
	case Lit:
		return x.Kind == LitString
	case Call:
		switch x.Fn {
		case FnSubstr:
			return true
		case FnCase:
			return len(x.Args) == 3 && b.isText(x.Args[1])
		}
	}
	return false
}
