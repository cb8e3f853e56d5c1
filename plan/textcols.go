package plan

// The Builder types the plan's columns as text or not, by name, so that
// operators keyed on text (a sort on a brand or a type name, groups of
// nation names) are priced for it (Op.StrKeys): a scan brings its table's
// text columns (as the caller declares them: TextColumns), a projection
// names a text expression (a text column under a new name, a SUBSTRING, a
// string literal, a CASE of text), and every other computed column (sums,
// counts, dates, years) is not text. Names are unique within a plan, so
// one set per plan suffices.

// TextColumns declares which table columns are text: isText(table, column)
// reports whether a scan of table brings column as text (a column as long
// on average as TextFlagBytes or shorter, a one-byte flag, should not be:
// it costs as an integer key). Without it no table column is text. Call it
// before the first Scan.
func (b *Builder) TextColumns(isText func(table, column string) bool) *Builder {
	b.isText = isText
	return b
}

// noteScanText records table's text columns among cols.
func (b *Builder) noteScanText(table string, cols []string) {
	if b.isText == nil {
		return
	}
	for _, c := range cols {
		if b.isText(table, c) {
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
			if b.exprText(n.E) {
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

// exprText reports whether e evaluates to text.
func (b *Builder) exprText(e Expr) bool {
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
			return len(x.Args) == 3 && b.exprText(x.Args[1])
		}
	}
	return false
}
