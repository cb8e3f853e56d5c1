package traces

import (
	"bytes"
	"encoding/csv"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestCSVRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	events := randomEvents(rng, 500, []string{"", "q1/overlap", `a "quoted", run`, "multi\nline"})
	var b bytes.Buffer
	if err := WriteCSV(&b, events); err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(b.String(), "\n"); first != strings.Join(CSVColumns, ",") {
		t.Fatalf("header %q", first)
	}
	got, err := ReadCSV(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, events) {
		t.Fatalf("round trip differs (%d vs %d events)", len(got), len(events))
	}
	// Columns in another order plus a pandas index column read the same.
	recs, err := csv.NewReader(bytes.NewReader(b.Bytes())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var b2 bytes.Buffer
	w := csv.NewWriter(&b2)
	for i, r := range recs {
		r = slices.Clone(r)
		slices.Reverse(r)
		idx := ""
		if i > 0 {
			idx = string(rune('0' + i%10))
		}
		w.Write(append([]string{idx}, r...))
	}
	w.Flush()
	got, err = ReadCSV(&b2)
	if err != nil || !reflect.DeepEqual(got, events) {
		t.Fatalf("reordered columns: %v", err)
	}
	// No events: a header only.
	b.Reset()
	if err := WriteCSV(&b, nil); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadCSV(&b); err != nil || len(got) != 0 {
		t.Fatalf("empty: %v %v", got, err)
	}
}

func TestCSVErrors(t *testing.T) {
	var b bytes.Buffer
	if err := WriteCSV(&b, slowReads()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	with := func(line int, f func(string) string) string {
		l := slices.Clone(lines)
		l[line-1] = f(l[line-1])
		return strings.Join(l, "\n")
	}
	dropLast := func(s string) string { return s[:strings.LastIndexByte(s, ',')] }
	for _, c := range []struct{ name, in, want string }{
		{"empty", "", "empty input"},
		{"missing column in row", with(3, dropLast), "line 3"},
		{"bad start", with(2, func(s string) string {
			f := strings.Split(s, ",")
			f[15] = "12x"
			return strings.Join(f, ",")
		}), `line 2, column start_ns: "12x" is not an integer`},
		{"bad kind", with(4, func(s string) string { return strings.Replace(s, ",read,", ",reed,", 1) }), "line 4, column kind"},
		{"bad meta", with(2, func(s string) string { return strings.Replace(s, ",false,", ",maybe,", 1) }), "line 2, column meta"},
		{"resource mismatch", with(2, func(s string) string { return strings.Replace(s, "nvme[0.0]", "nvme[0.3]", 1) }), "line 2, column resource"},
		{"header lacks column", with(1, func(s string) string { return strings.Replace(s, "rows", "rowz", 1) }), `header lacks column "rows"`},
		{"bad quote", with(2, func(s string) string { return `"` + s }), "line 2"},
	} {
		_, err := ReadCSV(strings.NewReader(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

func TestParquetRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{0, 1, 70000} {
		events := randomEvents(rng, n, []string{"", "q1/overlap", "é"})
		meta := Meta{Title: "pq", Backend: "engine", Machine: "box"}
		var b bytes.Buffer
		if err := WriteParquet(&b, events, meta); err != nil {
			t.Fatal(err)
		}
		got, gotMeta, err := ReadParquet(bytes.NewReader(b.Bytes()), int64(b.Len()))
		if err != nil {
			t.Fatal(err)
		}
		if gotMeta != meta || len(got) != n || n > 0 && !reflect.DeepEqual(got, events) {
			t.Fatalf("n %d: round trip differs: meta %+v, %d events", n, gotMeta, len(got))
		}
	}
	// A row the reader rejects is named.
	bad := randomEvents(rng, 3, []string{""})
	bad[2].Kind = 0
	var b bytes.Buffer
	if err := WriteParquet(&b, bad, Meta{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadParquet(bytes.NewReader(b.Bytes()), int64(b.Len())); err == nil || !strings.Contains(err.Error(), `row 2, column kind: unknown task kind "invalid"`) {
		t.Fatalf("bad kind: %v", err)
	}
	if _, _, err := ReadParquet(strings.NewReader("not parquet"), 11); err == nil || !strings.Contains(err.Error(), "traces: parquet") {
		t.Fatalf("garbage: %v", err)
	}
}
