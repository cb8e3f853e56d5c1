package verify

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Repo paths of the answer files, relative to this package.
const (
	answersDir  = "../answers"
	officialDir = "../dbgen/testdata"
)

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReadAnswerCSV(t *testing.T) {
	path := writeFile(t, "q.csv", "a|b|c\n1| x |2.5\n\"p|q\"|\"say \"\"hi\"\"\"|\r\n")
	got, err := ReadAnswer(path)
	if err != nil {
		t.Fatal(err)
	}
	want := &Table{Header: []string{"a", "b", "c"}, Rows: [][]string{{"1", " x ", "2.5"}, {"p|q", `say "hi"`, ""}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v, want %#v", got, want)
	}
}

func TestReadAnswerNullRow(t *testing.T) {
	// The SF0.01 Q17 answer: one row holding one NULL.
	got, err := ReadAnswer(filepath.Join(answersDir, "sf0.01", "q17.csv"))
	if err != nil {
		t.Fatal(err)
	}
	want := &Table{Header: []string{"avg_yearly"}, Rows: [][]string{{""}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v, want %#v", got, want)
	}
}

func TestReadAnswerErrors(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"short.csv", "a|b\n1|2\n3\n", "short.csv:3: 1 cells, header has 2 columns"},
		{"long.out", "a |b\n1 |2 |3\n", "long.out:2: 3 cells, header has 2 columns"},
		{"quote.csv", "a|b\n\"x|2\n", "quote.csv:2: cell 1: unterminated quoted field"},
		{"after.csv", "a|b\n\"x\"y|2\n", "after.csv:2: cell 1: text after closing quote"},
		{"empty.csv", "", "empty.csv: empty file"},
		{"blank.csv", "\n1\n", "blank.csv:1: empty header line"},
	} {
		path := writeFile(t, tc.name, tc.text)
		_, err := ReadAnswer(path)
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		// From the file name on: the temp dir varies.
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q, want it to contain %q", tc.name, err, tc.want)
		}
	}
	if _, err := ReadAnswer(filepath.Join(t.TempDir(), "missing.csv")); err == nil || !strings.Contains(err.Error(), "missing.csv") {
		t.Errorf("missing file: error %v", err)
	}
}

// TestReadAnswerOfficial parses TPC's fixed-width files in testdata and
// checks known cells, row counts and that no cell keeps its padding.
func TestReadAnswerOfficial(t *testing.T) {
	for _, tc := range []struct {
		file      string
		cols      int
		rows      int
		first     []string
		lastFirst string // first cell of the last row
	}{
		{"official_sf1_q10.out", 8, 20, []string{"57040", "Customer#000057040", "734235.25", "632.87", "JAPAN", "Eioyzjf4pp", "22-895-641-3466", "sits. slyly regular requests sleep alongside of the regular inst"}, ""},
		{"official_sf1_q13.out", 2, 42, []string{"0", "50005"}, "39"},
		{"official_sf1_q15.out", 5, 1, []string{"8449", "Supplier#000008449", "Wp34zim9qYFbVctdW", "20-469-856-8873", "1772627.21"}, "8449"},
		{"official_sf1_q20.out", 2, 186, []string{"Supplier#000000020", "iybAE,RmTymrZVYaFZva2SH,j"}, ""},
		{"official_sf1_q2_head.out", 8, 12, []string{"9938.53", "Supplier#000005359", "UNITED KINGDOM", "185358", "Manufacturer#4", "QKuHYh,vZGiwu2FWEJoLDx04", "33-429-790-6131", "uriously regular requests hag"}, "9836.93"},
	} {
		tab, err := ReadAnswer(filepath.Join(officialDir, tc.file))
		if err != nil {
			t.Errorf("%s: %v", tc.file, err)
			continue
		}
		if len(tab.Header) != tc.cols || len(tab.Rows) != tc.rows {
			t.Errorf("%s: %d columns, %d rows; want %d, %d", tc.file, len(tab.Header), len(tab.Rows), tc.cols, tc.rows)
			continue
		}
		if !reflect.DeepEqual(tab.Rows[0], tc.first) {
			t.Errorf("%s: first row %q, want %q", tc.file, tab.Rows[0], tc.first)
		}
		if tc.lastFirst != "" && tab.Rows[len(tab.Rows)-1][0] != tc.lastFirst {
			t.Errorf("%s: last row starts %q, want %q", tc.file, tab.Rows[len(tab.Rows)-1][0], tc.lastFirst)
		}
		for _, h := range tab.Header {
			if h != strings.TrimSpace(h) || h == "" {
				t.Errorf("%s: header cell %q", tc.file, h)
			}
		}
		for r, row := range tab.Rows {
			for c, cell := range row {
				if cell != strings.Trim(cell, " ") {
					t.Errorf("%s: row %d col %d %q keeps padding", tc.file, r+1, c+1, cell)
				}
			}
		}
	}
}

// TestReadAnswerAll reads every answer file AnswerPath can name.
func TestReadAnswerAll(t *testing.T) {
	for _, sf := range []float64{0.01, 1} {
		for q := 1; q <= 22; q++ {
			name := "q" + itoa(q)
			path, _, ok := AnswerPath(answersDir, officialDir, name, sf)
			if !ok {
				continue
			}
			tab, err := ReadAnswer(path)
			if err != nil {
				t.Errorf("%s sf%v: %v", name, sf, err)
				continue
			}
			if len(tab.Rows) == 0 {
				t.Errorf("%s sf%v: %s has no rows", name, sf, path)
			}
		}
	}
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return string(rune('0'+n/10)) + string(rune('0'+n%10))
}

func TestAnswerPath(t *testing.T) {
	for _, tc := range []struct {
		query  string
		sf     float64
		path   string
		prefix bool
		ok     bool
	}{
		{"q1", 0.01, "A/sf0.01/q01.csv", false, true},
		{"Q01", 1, "A/sf1/q01.csv", false, true},
		{"q22", 1, "A/sf1/q22.csv", false, true},
		{"q2", 1, "O/official_sf1_q2_head.out", true, true},
		{"q10", 1, "O/official_sf1_q10.out", false, true},
		{"q13", 1, "O/official_sf1_q13.out", false, true},
		{"q15", 1, "O/official_sf1_q15.out", false, true},
		{"q20", 1, "O/official_sf1_q20.out", false, true},
		{"q2", 0.01, "", false, false},
		{"q10", 0.01, "", false, false},
		{"q13", 0.01, "", false, false},
		{"q15", 0.01, "", false, false},
		{"q20", 0.01, "", false, false},
		{"q1", 10, "", false, false},
		{"q23", 1, "", false, false},
		{"q0", 1, "", false, false},
		{"1", 1, "", false, false},
		{"q", 1, "", false, false},
		{"q1x", 1, "", false, false},
	} {
		path, prefix, ok := AnswerPath("A", "O", tc.query, tc.sf)
		if path != filepath.FromSlash(tc.path) || prefix != tc.prefix || ok != tc.ok {
			t.Errorf("AnswerPath(%s, %v) = %q, %v, %v; want %q, %v, %v", tc.query, tc.sf, path, prefix, ok, tc.path, tc.prefix, tc.ok)
		}
	}
}

func table(header string, rows ...string) *Table {
	t := &Table{Header: strings.Split(header, "|")}
	for _, r := range rows {
		t.Rows = append(t.Rows, strings.Split(r, "|"))
	}
	return t
}

func TestCompareEqual(t *testing.T) {
	want := table("l_returnflag|sum_qty|avg_price|d|s",
		"A|380456|35785.70930693735|1995-03-11|Supplier#1",
		"N|-8971|0.0|1996-01-01| foxes",
		"R|0|25.575154611454693|1997-12-31|")
	got := table("x|y|z|w|v",
		"A|380456|35785.71|1995-03-11|Supplier#1",
		"N|-8971|0.00|1996-01-01|foxes ",
		"R|0|25.58|1997-12-31|")
	if err := Compare(got, want, false); err != nil {
		t.Fatal(err)
	}
	if err := Compare(want, want, false); err != nil {
		t.Fatal(err)
	}
}

func TestCompareMismatch(t *testing.T) {
	want := table("flag|n|price|date",
		"A|10|100.00|1995-03-11",
		"B|20|200.004|1995-03-12")
	for _, tc := range []struct {
		name   string
		got    *Table
		prefix bool
		want   []string // substrings of the error
	}{
		{"perturbed string", table("a|b|c|d", "A|10|100.00|1995-03-11", "C|20|200.00|1995-03-12"), false,
			[]string{"1 mismatches", "row 2 col 1 (flag): got C, want B"}},
		{"perturbed date", table("a|b|c|d", "A|10|100.00|1995-03-10", "B|20|200.00|1995-03-12"), false,
			[]string{"row 1 col 4 (date): got 1995-03-10, want 1995-03-11"}},
		{"integer off by one", table("a|b|c|d", "A|11|100.00|1995-03-11", "B|20|200.00|1995-03-12"), false,
			[]string{"row 1 col 2 (n): got 11, want 10"}},
		{"decimal off by 0.01", table("a|b|c|d", "A|10|100.01|1995-03-11", "B|20|200.00|1995-03-12"), false,
			[]string{"row 1 col 3 (price): got 100.01, want 100.00"}},
		{"decimal rounded wrong", table("a|b|c|d", "A|10|100.00|1995-03-11", "B|20|200.01|1995-03-12"), false,
			[]string{"row 2 col 3 (price): got 200.01, want 200.004"}},
		{"integer vs text", table("a|b|c|d", "A|10x|100.00|1995-03-11", "B|20|200.00|1995-03-12"), false,
			[]string{"row 1 col 2 (n): got 10x, want 10"}},
		{"extra row", table("a|b|c|d", "A|10|100.00|1995-03-11", "B|20|200.00|1995-03-12", "C|30|1.00|1995-03-13"), false,
			[]string{"got 3 rows, want 2", "row 3: extra row C|30|1.00|1995-03-13"}},
		{"missing row", table("a|b|c|d", "A|10|100.00|1995-03-11"), false,
			[]string{"got 1 rows, want 2", "row 2: missing row B|20|200.004|1995-03-12"}},
		{"prefix too short", table("a|b|c|d", "A|10|100.00|1995-03-11"), true,
			[]string{"got 1 rows, want at least 2"}},
		{"prefix differs", table("a|b|c|d", "B|20|200.00|1995-03-12", "A|10|100.00|1995-03-11", "C|1|1|1995-01-01"), true,
			[]string{"row 1 col 1 (flag): got B, want A", "row 2 col 2 (n): got 10, want 20"}},
		{"column count", table("a|b|c", "A|10|100.00", "B|20|200.00"), false,
			[]string{"got 3 columns"}},
		{"ragged row", &Table{Header: []string{"a", "b", "c", "d"}, Rows: [][]string{{"A", "10", "100.00", "1995-03-11"}, {"B"}}}, false,
			[]string{"row 2: got 1 cells, want 4"}},
	} {
		err := Compare(tc.got, want, tc.prefix)
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		for _, s := range tc.want {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: error %q lacks %q", tc.name, err, s)
			}
		}
	}
	// A prefix match with extra rows is fine.
	got := table("a|b|c|d", "A|10|100.00|1995-03-11", "B|20|200.00|1995-03-12", "C|30|1.00|1995-03-13")
	if err := Compare(got, want, true); err != nil {
		t.Errorf("prefix: %v", err)
	}
	if err := Compare(nil, want, false); err == nil {
		t.Error("nil got: no error")
	}
}

func TestCompareListsAtMostTen(t *testing.T) {
	var wantRows, gotRows []string
	for i := 0; i < 25; i++ {
		wantRows = append(wantRows, "x"+itoa(i))
		gotRows = append(gotRows, "y"+itoa(i))
	}
	err := Compare(table("c", gotRows...), table("c", wantRows...), false)
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if n := strings.Count(msg, "\n  row "); n != 10 {
		t.Errorf("%d mismatches listed, want 10:\n%s", n, msg)
	}
	if !strings.Contains(msg, "25 mismatches, first 10") {
		t.Errorf("error %q lacks the total", msg)
	}
}

func TestCellEqual(t *testing.T) {
	for _, tc := range []struct {
		got, want string
		eq        bool
	}{
		{"1", "1", true},
		{"1", "2", false},
		{"+1", "1", true},
		{"-0", "0", true},
		{"12.35", "12.345", true},  // rounded half away from zero
		{"12.34", "12.345", true},  // within 0.005
		{"12.33", "12.345", false}, // 0.015 off
		{"-0.05", "-0.0500001", true},
		{"0.05", "-0.05", false},
		{"526165934.00", "526165934.000839", true},
		{"526165934.01", "526165934.000839", true}, // 1e-9 relative slack: 0.53
		{"526165935.00", "526165934.000839", false},
		{"1.5e-2", "0.015", true},
		{"NaN", "NaN", true},
		{"NaN", "nan", false}, // not numbers: text
		{"inf", "+inf", false},
		{"0x10", "16", false},
		{"1995-03-15", "1995-03-15", true},
		{"1995-03-15", "1995-3-15", false},
		{" abc ", "abc", true},
		{"", "", true},
		{"", "0", false},
		{"99999999999999999999", "99999999999999999999.0", true}, // beyond int64
	} {
		if eq := CellEqual(tc.got, tc.want); eq != tc.eq {
			t.Errorf("CellEqual(%q, %q) = %v, want %v", tc.got, tc.want, eq, tc.eq)
		}
	}
}

// TestCompareOfficialVsDuckDB compares the two SF1 answer sets of Q13 and
// Q15: DuckDB's (tpch/answers, made with its own dbgen) and TPC's. They
// differ in real data, which Compare must find; each equals itself.
func TestCompareOfficialVsDuckDB(t *testing.T) {
	for _, tc := range []struct{ duck, official, want string }{
		{"q13.csv", "official_sf1_q13.out", "row 1 col 2 (custdist): got 50004, want 50005"},
		{"q15.csv", "official_sf1_q15.out", "row 1 col 3 (s_address): got 5BXWsJERA2mP5OyO4, want Wp34zim9qYFbVctdW"},
	} {
		duck, err := ReadAnswer(filepath.Join(answersDir, "sf1", tc.duck))
		if err != nil {
			t.Fatal(err)
		}
		off, err := ReadAnswer(filepath.Join(officialDir, tc.official))
		if err != nil {
			t.Fatal(err)
		}
		if err := Compare(off, off, false); err != nil {
			t.Errorf("%s vs itself: %v", tc.official, err)
		}
		err = Compare(duck, off, false)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("DuckDB's %s vs %s: error %v, want it to contain %q", tc.duck, tc.official, err, tc.want)
		}
	}
}
