package querygen

import (
	"strconv"
	"strings"
)

// render resolves the placeholders of colSQL and fromSQL once every table
// occurrence of the query is known: in one of three styles (bare names,
// aliases, table-qualified names) drawn per query, except that a table
// read twice, or whose column names another table shares, is always
// aliased and qualified.
func (q *gen) render(text string) string {
	style := q.r.IntN(3)
	count := map[*table]int{}
	names := map[string]int{}
	for _, r := range q.refs {
		count[r.t]++
		if count[r.t] == 1 {
			for _, c := range r.t.cols {
				names[c.name]++
			}
		}
	}
	type how struct {
		alias, qual string
	}
	hows := make([]how, len(q.refs)+1)
	for _, r := range q.refs {
		shared := count[r.t] > 1
		for _, c := range r.t.cols {
			if names[c.name] > 1 {
				shared = true
			}
		}
		h := how{}
		switch {
		case shared || style == 1:
			h.alias = "t" + strconv.Itoa(r.id)
			h.qual = h.alias + "."
		case style == 2:
			h.qual = r.t.name + "."
		}
		hows[r.id] = h
	}
	var b strings.Builder
	for i := 0; i < len(text); {
		c := text[i]
		if c != 0 && c != 1 {
			b.WriteByte(c)
			i++
			continue
		}
		j := strings.IndexByte(text[i+1:], c) + i + 1
		body := text[i+1 : j]
		i = j + 1
		if c == 1 {
			id, _ := strconv.Atoi(body)
			b.WriteString(q.refs[id-1].t.name)
			if a := hows[id].alias; a != "" {
				if style == 2 {
					b.WriteString(" as")
				}
				b.WriteString(" " + a)
			}
			continue
		}
		idText, col, _ := strings.Cut(body, ".")
		id, _ := strconv.Atoi(idText)
		b.WriteString(hows[id].qual + col)
	}
	return b.String()
}
