// Package sqlquery is what the commands and the experiment specs share
// about SQL queries a user gives: reading one from a flag or a file,
// checking its name, making a plan.Catalog of several, and showing a
// planning error at its place in the text.
package sqlquery

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"gostachio/plan"
	"gostachio/sqlplan"
)

// DefaultName names a query given without a name.
const DefaultName = "sql"

// MaxBytes bounds the text of one query: a query passes to cluster
// workers on their command line, where Linux takes at most 128 KiB per
// argument.
const MaxBytes = 100 << 10

// Read returns the query named name (DefaultName when empty) whose text is
// text or, where file is set instead, the file's contents. Exactly one of
// text and file must be given; an empty or all-blank text, an unreadable
// file (the error names it), a text over MaxBytes or a bad name
// (CheckName) is an error.
func Read(name, text, file string) (sqlplan.Query, error) {
	if name == "" {
		name = DefaultName
	}
	if err := CheckName(name); err != nil {
		return sqlplan.Query{}, err
	}
	switch {
	case text != "" && file != "":
		return sqlplan.Query{}, fmt.Errorf("sql: give the query as --sql TEXT or --sql-file FILE, not both")
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return sqlplan.Query{}, fmt.Errorf("sql: read query %s: %w", file, err)
		}
		text = string(b)
		if strings.TrimSpace(text) == "" {
			return sqlplan.Query{}, fmt.Errorf("sql: query file %s is empty", file)
		}
	case strings.TrimSpace(text) == "":
		return sqlplan.Query{}, fmt.Errorf("sql: the query %s is empty", name)
	}
	if len(text) > MaxBytes {
		return sqlplan.Query{}, fmt.Errorf("sql: query %s is %d bytes, more than the %d a query may have", name, len(text), MaxBytes)
	}
	return sqlplan.Query{Name: name, SQL: text}, nil
}

// CheckName checks a query name: it names the query in results, traces
// and experiment keys and on the engine's --query lists, so it is
// lowercase letters, digits, '_', '-' and '.', starting with a letter; not
// "all", and not "q" and digits, which name TPC-H's queries (and which
// the engine's lists rewrite: "q06" is "q6").
func CheckName(name string) error {
	ok := name != "" && name[0] >= 'a' && name[0] <= 'z'
	digits := len(name) > 1 && name[0] == 'q'
	for i, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			ok = false
		}
		if i > 0 && !(r >= '0' && r <= '9') {
			digits = false
		}
	}
	if !ok || digits || name == "all" {
		return fmt.Errorf("sql: query name %q: want lowercase letters, digits, '_', '-' or '.', starting with a letter; not \"all\" nor q and digits (TPC-H's)", name)
	}
	return nil
}

// Catalog is qs as a plan.Catalog (sqlplan.Catalog) whose planning errors
// located in a query's text come back as *Located errors showing the
// place. Names must be unique: a repeated name is an error.
func Catalog(qs []sqlplan.Query, opts sqlplan.Options) (plan.Catalog, error) {
	texts := make(map[string]string, len(qs))
	for _, q := range qs {
		if _, dup := texts[q.Name]; dup {
			return plan.Catalog{}, fmt.Errorf("sql: two queries named %q", q.Name)
		}
		texts[q.Name] = q.SQL
	}
	cat := sqlplan.Catalog(qs, opts)
	build := cat.Build
	cat.Build = func(name string, sf float64, tables []plan.TableStats) (*plan.Plan, error) {
		p, err := build(name, sf, tables)
		if err != nil {
			return nil, Locate(err, texts[name])
		}
		return p, nil
	}
	return cat, nil
}

// Located is a planning error shown at its place in the query's text.
type Located struct {
	Err *sqlplan.Error
	// Line is the line of the text holding the error, and Caret as many
	// blanks as precede the place on that line (tabs kept, so that it
	// lines up) followed by '^'.
	Line, Caret string
}

func (e *Located) Error() string { return e.Err.Error() + "\n" + e.Line + "\n" + e.Caret }

func (e *Located) Unwrap() error { return e.Err }

// Locate returns err as a *Located error where it holds a *sqlplan.Error
// with a place in text, and err unchanged otherwise.
func Locate(err error, text string) error {
	var se *sqlplan.Error
	if !errors.As(err, &se) || se.Pos < 0 || text == "" {
		return err
	}
	pos := min(se.Pos, len(text))
	start := strings.LastIndexByte(text[:pos], '\n') + 1
	end := strings.IndexByte(text[pos:], '\n')
	if end < 0 {
		end = len(text)
	} else {
		end += pos
	}
	line := strings.TrimRight(text[start:end], "\r")
	var caret strings.Builder
	for _, r := range text[start:pos] {
		if r == '\t' {
			caret.WriteByte('\t')
		} else {
			caret.WriteByte(' ')
		}
	}
	caret.WriteByte('^')
	return &Located{Err: se, Line: line, Caret: caret.String()}
}

// Unwrapped returns the *Located error err holds, if any, without the
// context wrapped around it (the caller's "engine: DIR: ..."): the message
// then starts with "sql:LINE:COL:" and its lines stay together. Other
// errors are returned as they are.
func Unwrapped(err error) error {
	var le *Located
	if errors.As(err, &le) {
		return le
	}
	return err
}
