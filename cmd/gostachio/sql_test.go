package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gostachio/internal/testfixture"
	"gostachio/tpch/verify"
)

// fixture is the test binary's SF0.01 dataset and gostachio binary.
var fixture = &testfixture.Fixture{Prefix: "gostachio-cmd-test-", ChunkRows: 4096}

func TestMain(m *testing.M) {
	code := m.Run()
	fixture.Cleanup()
	os.Exit(code)
}

// runCmd runs the command tree on args in this process.
func runCmd(t *testing.T, args ...string) (stdout string, err error) {
	t.Helper()
	root := newRoot()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err = root.ExecuteContext(context.Background())
	return out.String(), err
}

// TestSQLFlagsRejected checks the refusals of SQL queries given wrongly,
// before any planning or reading of data.
func TestSQLFlagsRejected(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.sql")
	if err := os.WriteFile(empty, []byte("\n  \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.sql")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"explain", "--query", "q1", "--sql", "select 1"}, "give --query or an SQL query"},
		{[]string{"explain", "--sql", ""}, "is empty"},
		{[]string{"explain", "--sql-file", empty}, empty + " is empty"},
		{[]string{"explain", "--sql-file", missing}, "read query " + missing},
		{[]string{"explain", "--sql", "select 1", "--sql-file", empty}, "not both"},
		{[]string{"explain", "--sql", "select 1", "--name", "Big"}, `query name "Big"`},
		{[]string{"explain"}, "give --query, --sql or --sql-file"},
		{[]string{"explain", "--query", "q6", "--data", "/nonexistent", "--sf", "2"}, "give one"},
		{[]string{"query", "--data", "/nonexistent", "--query", "q6", "--sql", "select 1"}, "not both"},
		{[]string{"query", "--data", "/nonexistent", "--sql-file", missing}, missing},
		{[]string{"sim", "--query", "q6", "--sql", "select 1"}, "not both"},
		{[]string{"worker", "--data", "/nonexistent", "--query", "q6", "--sql", "select 1"}, "not both"},
		{[]string{"query", "--data", "/nonexistent", "--sql", "select 1", "--name", "q06"}, `query name "q06"`},
		{[]string{"sim", "--sql", "   "}, "is empty"},
		{[]string{"cluster", "--nodes", "2", "--", "query", "--data", "/nonexistent", "--sql-file", missing}, missing},
	} {
		out, err := runCmd(t, tc.args...)
		if err == nil {
			t.Errorf("%s: accepted (stdout %q)", strings.Join(tc.args, " "), out)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q, want it to contain %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}

// TestExplainCommand explains Q6 at SF1 in chunks of 1,000,000 rows:
// lineitem's 6,001,215 rows (the specification's count) in 7 chunks.
func TestExplainCommand(t *testing.T) {
	out, err := runCmd(t, "--json", "explain", "--query", "q6", "--sf", "1", "--chunk-rows", "1000000")
	if err != nil {
		t.Fatal(err)
	}
	var e struct {
		Query      string `json:"query"`
		PlanningNs int64  `json:"planning_ns"`
		Pipelines  []struct {
			Source struct {
				Table  string `json:"table"`
				Chunks int    `json:"chunks"`
				Rows   int64  `json:"rows"`
			} `json:"source"`
		} `json:"pipelines"`
	}
	if err := json.Unmarshal([]byte(out), &e); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if e.Query != "q6" || e.PlanningNs <= 0 || len(e.Pipelines) != 2 || e.Pipelines[0].Source.Table != "lineitem" ||
		e.Pipelines[0].Source.Chunks != 7 || e.Pipelines[0].Source.Rows != 6_001_215 {
		t.Errorf("explain --json:\n%s", out)
	}
	text, err := runCmd(t, "explain", "--query", "q6", "--sf", "1", "--chunk-rows", "1000000")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "planned in") || !strings.Contains(text, "scan lineitem, 7 of 7 chunks (0 pruned), 6,001,215 rows") {
		t.Errorf("explain:\n%s", text)
	}
}

// TestInlineSQLFile: the cluster launcher hands the workers the text of
// a --sql-file, so every worker plans the same query.
func TestInlineSQLFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "q.sql")
	if err := os.WriteFile(file, []byte("select 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--data", "d", "--sql-file", file}, {"--data", "d", "--sql-file=" + file}} {
		got, err := inlineSQLFile(args)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"--data", "d", "--sql", "select 1\n"}; strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("inlineSQLFile(%q) = %q, want %q", args, got, want)
		}
	}
}

// TestSQLPlanningErrorShown checks a planning error is shown as
// sql:LINE:COL: message, the line of the text, and a caret under COL.
func TestSQLPlanningErrorShown(t *testing.T) {
	_, err := runCmd(t, "explain", "--sf", "0.01", "--sql", "select\n  l_nosuchcolumn\nfrom lineitem")
	if err == nil {
		t.Fatal("a query of an unknown column planned")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "sql:2:3: ") || lines[1] != "  l_nosuchcolumn" || lines[2] != "  ^" {
		t.Errorf("planning error:\n%s\nwant sql:2:3: ..., the line, a caret under l_nosuchcolumn", err)
	}
}

// q6Answer is Q6's answer at SF0.01 (tpch/answers, DuckDB's answer set).
func q6Answer(t *testing.T) *verify.Table {
	t.Helper()
	want, err := verify.ReadAnswer("../../tpch/answers/sf0.01/q06.csv")
	if err != nil {
		t.Fatal(err)
	}
	return want
}

// csvTable reads a result printed with --format csv.
func csvTable(t *testing.T, out string) *verify.Table {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	tab := &verify.Table{Header: strings.Split(lines[0], ",")}
	for _, l := range lines[1:] {
		tab.Rows = append(tab.Rows, strings.Split(l, ","))
	}
	return tab
}

// TestQuerySQL runs Q6 as SQL on the engine and checks the result, and
// its header (the select list's name), against the official answer.
func TestQuerySQL(t *testing.T) {
	data := fixture.TPCH(t)
	out, err := runCmd(t, "query", "--data", data, "--sql-file", "testdata/q6.sql", "--name", "q6sql",
		"--format", "csv", "--devices", "2", "--buffered")
	if err != nil {
		t.Fatal(err)
	}
	if err := verify.Compare(csvTable(t, out), q6Answer(t), false); err != nil {
		t.Errorf("query --sql q6: %v\n%s", err, out)
	}
}

// TestClusterSQL runs Q6 as SQL on an emulated cluster of two worker
// processes (loopback TCP): the launcher reads the file and every worker
// plans its text; the result must be the official answer.
func TestClusterSQL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts two workers")
	}
	data, bin := fixture.TPCH(t), fixture.Binary(t)
	cmd := exec.Command(bin, "cluster", "--nodes", "2", "--", "query", "--data", data, "--sql-file", "testdata/q6.sql",
		"--name", "q6sql", "--format", "csv", "--devices", "1", "--buffered")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("cluster: %v\n%s", err, errOut.String())
	}
	if err := verify.Compare(csvTable(t, out.String()), q6Answer(t), false); err != nil {
		t.Errorf("cluster q6 as SQL: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
	}
}

// TestSimPlansSQL simulates a TPC-H query planned from its SQL text
// (sim --plans sql). Q6's SQL plan has the hand-built plan's shape, so
// both read the same bytes and the makespans agree within 2% (they differ
// only by the estimates each plan carries).
func TestSimPlansSQL(t *testing.T) {
	type simOut struct {
		Makespan  int64 `json:"makespan_ns"`
		Resources []struct {
			Kind string  `json:"kind"`
			Work float64 `json:"work"`
		} `json:"resources"`
	}
	run := func(query, plans string) (ms int64, nvme float64) {
		out, err := runCmd(t, "--json", "sim", "--query", query, "--sf", "10", "--nodes", "2", "--plans", plans)
		if err != nil {
			t.Fatalf("sim %s --plans %s: %v", query, plans, err)
		}
		var o simOut
		if err := json.Unmarshal([]byte(out), &o); err != nil {
			t.Fatalf("sim %s --plans %s: %v\n%s", query, plans, err, out)
		}
		for _, r := range o.Resources {
			if r.Kind == "nvme" {
				nvme = r.Work
			}
		}
		return o.Makespan, nvme
	}
	hand, handIO := run("q6", "hand-built")
	sql, sqlIO := run("q6", "sql")
	if r := float64(sql) / float64(hand); r < 0.98 || r > 1.02 || sqlIO != handIO {
		t.Errorf("q6: SQL plan's makespan %d ns and %g bytes read, hand-built %d ns and %g bytes", sql, sqlIO, hand, handIO)
	}
	if _, err := runCmd(t, "sim", "--query", "q6", "--plans", "mine"); err == nil || !strings.Contains(err.Error(), "want hand-built or sql") {
		t.Errorf("--plans mine: %v", err)
	}
}
