package experiments

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSQLSpec parses a spec naming SQL queries beside a TPC-H one and
// checks their text and that their run keys carry the text's hash.
func TestSQLSpec(t *testing.T) {
	s := mustSpec(t, "testdata/sql.yaml")
	if got := strings.Join(s.Queries, ","); got != "q6,shipmodes,big_orders" {
		t.Errorf("queries = %s, want q6,shipmodes,big_orders", got)
	}
	file, err := os.ReadFile("testdata/sql/revenue.sql")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.SQL) != 2 || s.SQL[0].SQL != string(file) || !strings.HasPrefix(s.SQL[1].SQL, "select o_orderpriority") {
		t.Fatalf("SQL queries = %+v", s.SQL)
	}
	sum := sha256.Sum256(file)
	hash := hex.EncodeToString(sum[:])[:12]
	for _, r := range s.Configs() {
		switch r.Query {
		case "q6":
			if strings.Contains(r.Key, "sql=") {
				t.Errorf("TPC-H run key %s carries an SQL hash", r.Key)
			}
		case "shipmodes":
			if !strings.HasPrefix(r.Key, "shipmodes|sql="+hash+"|") {
				t.Errorf("run key %s, want it to start shipmodes|sql=%s|", r.Key, hash)
			}
		}
	}
}

// TestSQLSpecKeyFollowsText: the same spec with another query text makes
// other run keys, so a stored result of the old text is never reused.
func TestSQLSpecKeyFollowsText(t *testing.T) {
	spec := func(where string) []Run {
		t.Helper()
		data := "backend: sim\nsf: 0.1\nqueries:\n  - name: n\n    sql: select count(*) as c from nation where " + where + "\npolicies: [serial]\nreps: 1\n"
		s, err := parseSpec(filepath.Join(t.TempDir(), "k.yaml"), []byte(data))
		if err != nil {
			t.Fatal(err)
		}
		return s.Configs()
	}
	a, b := spec("n_regionkey = 1"), spec("n_regionkey = 2")
	if len(a) != 1 || len(b) != 1 || a[0].Key == b[0].Key || a[0].Config == b[0].Config {
		t.Errorf("keys %v and %v: want one each, different", a, b)
	}
}

// TestSQLSpecRuns runs the SQL spec on the simulator: every query under
// both policies gives a result, and overlapping is not slower than
// running serially (the simulator is deterministic without jitter).
func TestSQLSpecRuns(t *testing.T) {
	s := mustSpec(t, "testdata/sql.yaml")
	dir := t.TempDir()
	if err := run(t, RunOptions{Spec: s, Out: dir}); err != nil {
		t.Fatal(err)
	}
	rs, err := ReadResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	secs := map[string]float64{}
	for _, r := range rs {
		if !(r.Seconds > 0) {
			t.Errorf("%s: %v s", r.Key, r.Seconds)
		}
		secs[r.Query+"/"+r.Policy] = r.Seconds
	}
	if len(rs) != 6 {
		t.Fatalf("%d results, want 6 (3 queries x 2 policies)", len(rs))
	}
	for _, q := range s.Queries {
		if secs[q+"/overlap"] > secs[q+"/serial"] {
			t.Errorf("%s: overlap %.4f s, serial %.4f s", q, secs[q+"/overlap"], secs[q+"/serial"])
		}
	}
}
