package sqlplan

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"vitess.io/vitess/go/vt/sqlparser"
)

// parser is vitess's parser with default options; it holds no state
// between statements, so one serves every call.
var parser, parserErr = sqlparser.New(sqlparser.Options{})

var syntaxPos = regexp.MustCompile(`at position (\d+)`)

// parse parses text as one SELECT statement.
func parse(text string) (*sqlparser.Select, error) {
	if parserErr != nil {
		return nil, &Error{Pos: -1, Msg: "parser: " + parserErr.Error()}
	}
	st, err := parser.Parse(text)
	if err != nil {
		msg := err.Error()
		pos := -1
		if i := strings.Index(msg, " (errno"); i >= 0 {
			msg = msg[:i]
		}
		if m := syntaxPos.FindStringSubmatch(msg); m != nil {
			// vitess reports the offset just past the offending token;
			// the error's line and column say where, so the message
			// names the token instead of repeating the offset.
			if n, err := strconv.Atoi(m[1]); err == nil {
				pos = tokenStart(text, n)
				msg = strings.Join(strings.Fields(syntaxPos.ReplaceAllString(msg, "")), " ")
				if !strings.Contains(msg, "near") {
					tok := strings.TrimSpace(text[pos:min(max(n-1, pos), len(text))])
					end := n > len(strings.TrimRight(text, " \t\r\n;"))
					switch {
					case end && tok != "":
						msg += fmt.Sprintf(" at %q, the end of the query", tok)
					case end:
						msg += " at the end of the query"
					case tok != "":
						msg += fmt.Sprintf(" at %q", tok)
					}
				}
			}
		}
		return nil, newError(text, pos, "%s", msg)
	}
	sel, ok := st.(*sqlparser.Select)
	if !ok {
		return nil, newError(text, 0, "only a SELECT statement can be planned, not %T", st)
	}
	return sel, nil
}

// tokenStart backs from end (an offset just past a token) to the token's
// first byte.
func tokenStart(text string, end int) int {
	end = min(max(end, 0), len(text))
	i := end
	for i > 0 && (text[i-1] == ' ' || text[i-1] == '\n' || text[i-1] == '\t' || text[i-1] == '\r') && i == end {
		i--
		end--
	}
	for i > 0 && !strings.ContainsRune(" \t\r\n(),", rune(text[i-1])) {
		i--
	}
	if i == len(text) && i > 0 {
		i--
	}
	return i
}

// newError locates pos (a byte offset, -1: nowhere) in text.
func newError(text string, pos int, format string, args ...any) *Error {
	e := &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)}
	if pos < 0 {
		e.Pos = -1
		return e
	}
	pos = min(pos, len(text))
	e.Pos = pos
	e.Line = 1 + strings.Count(text[:pos], "\n")
	e.Col = pos - strings.LastIndexByte(text[:pos], '\n')
	return e
}

// locator finds the text of AST nodes in the statement (vitess keeps no
// positions): a node is printed back and searched for, case-insensitively,
// ignoring spacing, from a cursor that moves forward as binding proceeds
// in text order. It is best effort: a node it cannot find is placed at
// the last one found.
type locator struct {
	text  string
	lower string
	last  int
}

func newLocator(text string) *locator {
	return &locator{text: text, lower: strings.ToLower(text)}
}

// find returns the offset of the first word of node's text at or after
// the last position found (or anywhere, failing that).
func (l *locator) find(node sqlparser.SQLNode) int {
	s := strings.ToLower(sqlparser.String(node))
	word := firstWord(s)
	if word == "" {
		return l.last
	}
	if i := wordIndex(l.lower[l.last:], word); i >= 0 {
		l.last += i
		return l.last
	}
	if i := wordIndex(l.lower, word); i >= 0 {
		return i
	}
	return l.last
}

// word finds a plain word (a name) from the cursor.
func (l *locator) word(w string) int {
	w = strings.ToLower(w)
	if i := wordIndex(l.lower[l.last:], w); i >= 0 {
		return l.last + i
	}
	if i := wordIndex(l.lower, w); i >= 0 {
		return i
	}
	return l.last
}

// mark moves the cursor to the first occurrence of keyword from it.
func (l *locator) mark(keyword string) {
	if i := wordIndex(l.lower[l.last:], keyword); i >= 0 {
		l.last += i
	}
}

func firstWord(s string) string {
	s = strings.TrimLeft(s, "( ")
	end := 0
	for end < len(s) && (isWordByte(s[end]) || s[end] == '\'' && end == 0) {
		end++
		if s[0] == '\'' {
			if j := strings.IndexByte(s[1:], '\''); j >= 0 {
				return s[:j+2]
			}
		}
	}
	if end == 0 && len(s) > 0 {
		return s[:1]
	}
	return s[:end]
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '#'
}

// wordIndex is the index of w in s at a word boundary, or -1.
func wordIndex(s, w string) int {
	for off := 0; ; {
		i := strings.Index(s[off:], w)
		if i < 0 {
			return -1
		}
		i += off
		before := i == 0 || !isWordByte(s[i-1]) || !isWordByte(w[0])
		after := i+len(w) == len(s) || !isWordByte(s[i+len(w)]) || !isWordByte(w[len(w)-1])
		if before && after {
			return i
		}
		off = i + 1
	}
}
