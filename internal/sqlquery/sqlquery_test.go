package sqlquery

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gostachio/sqlplan"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "q.sql")
	if err := os.WriteFile(file, []byte("select 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	blank := filepath.Join(dir, "blank.sql")
	if err := os.WriteFile(blank, []byte(" \n\t"), 0o644); err != nil {
		t.Fatal(err)
	}
	q, err := Read("", "", file)
	if err != nil || q.Name != DefaultName || q.SQL != "select 1\n" {
		t.Errorf("Read(file) = %+v, %v; want sql, \"select 1\\n\"", q, err)
	}
	for _, c := range []struct{ name, text, file, want string }{
		{"a", "select 1", file, "not both"},
		{"a", "  ", "", "empty"},
		{"a", "", blank, blank + " is empty"},
		{"a", "", filepath.Join(dir, "missing.sql"), "missing.sql"},
		{"Q1", "select 1", "", "query name"},
		{"all", "select 1", "", "query name"},
		{"a,b", "select 1", "", "query name"},
		{"q06", "select 1", "", "query name"},
		{"q6", "select 1", "", "query name"},
		{"a", strings.Repeat("x", MaxBytes+1), "", "more than"},
	} {
		if _, err := Read(c.name, c.text, c.file); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Read(%q, %.10q, %q) = %v, want an error with %q", c.name, c.text, c.file, err, c.want)
		}
	}
}

func TestLocate(t *testing.T) {
	text := "select a,\n\tbogus\nfrom t"
	pos := strings.Index(text, "bogus")
	err := fmt.Errorf("engine: /data: %w", &sqlplan.Error{Pos: pos, Line: 2, Col: 2, Msg: `unknown column "bogus"`})
	got := Unwrapped(Locate(err, text))
	want := "sql:2:2: unknown column \"bogus\"\n\tbogus\n\t^"
	if got.Error() != want {
		t.Errorf("located error:\n%s\nwant:\n%s", got, want)
	}
	var se *sqlplan.Error
	if !errors.As(got, &se) || se.Pos != pos {
		t.Errorf("located error does not unwrap to the planning error: %v", got)
	}
	nowhere := &sqlplan.Error{Pos: -1, Msg: "no tables"}
	if got := Locate(nowhere, text); got != error(nowhere) {
		t.Errorf("an error without a place became %v", got)
	}
	other := errors.New("disk on fire")
	if got := Unwrapped(Locate(other, text)); got != other {
		t.Errorf("a foreign error became %v", got)
	}
}

func TestCatalogRefusesRepeatedNames(t *testing.T) {
	_, err := Catalog([]sqlplan.Query{{Name: "a", SQL: "select 1"}, {Name: "a", SQL: "select 2"}}, sqlplan.Options{})
	if err == nil || !strings.Contains(err.Error(), `"a"`) {
		t.Errorf("two queries named a: %v", err)
	}
}
