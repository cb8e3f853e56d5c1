package engine

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"gostachio/tpch/queries"
)

// TestInputsCheckedBeforeWork: an empty query list is refused (it ran all
// 22 queries), output paths that cannot be written are refused before any
// query runs (they failed after it had run), and a memory budget too small
// for any query says so in its own units (it said "0 MiB", or printed the
// scheduler's topology struct).
func TestInputsCheckedBeforeWork(t *testing.T) {
	if _, err := ParseQueries("", queries.Names()); err == nil || !strings.Contains(err.Error(), "no query given") {
		t.Errorf("ParseQueries(\"\") = %v, want a refusal", err)
	}
	if _, err := ParseQueries(" ", queries.Names()); err == nil {
		t.Error("ParseQueries(\" \") accepted")
	}
	ds := testData(t, 0.01)
	missing := filepath.Join(t.TempDir(), "no-such-folder")
	for _, tc := range []struct {
		name string
		opts RunOptions
		want string
	}{
		{"trace", RunOptions{Trace: filepath.Join(missing, "t.json")}, "--trace: cannot write"},
		{"op-times", RunOptions{OpTimes: filepath.Join(missing, "ops.csv")}, "--op-times: cannot write"},
		{"mem 64KiB", RunOptions{QueryOptions: QueryOptions{Mem: 64 << 10}}, "memory budget 64KiB (--mem) below the 1MiB per device"},
		{"mem 1B", RunOptions{QueryOptions: QueryOptions{Mem: 1}}, "memory budget 1B (--mem) below"},
	} {
		o := tc.opts
		o.Catalog, o.Data, o.Query, o.Format = queries.Catalog(), ds.Dir, "q6", "csv"
		var stdout bytes.Buffer
		err := RunQueries(context.Background(), o, &stdout, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
		if stdout.Len() > 0 {
			t.Errorf("%s: a result was printed before the refusal:\n%s", tc.name, stdout.String())
		}
	}
}
