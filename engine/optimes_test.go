package engine

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"gostachio/plan"
)

// Every operator the host runs in q3 is recorded once per batch, at its
// plan place and kind: the customer scan's filter sees every stored
// customer row (the manifest's count), each filter keeps at most what it
// sees, the partial aggregate's state is emitted, the builds and probes
// are there; and the CSV reads back as written.
func TestOpTimes(t *testing.T) {
	ds := testData(t, 0.01)
	var ot OpTimes
	ot.SetRun(3)
	r, err := Query(context.Background(), ds, "q3", QueryOptions{Devices: 2, OpTimes: &ot})
	if err != nil {
		t.Fatal(err)
	}
	p, err := BuildQuery(ds, "q3")
	if err != nil {
		t.Fatal(err)
	}
	rows := ot.Rows()
	if len(rows) == 0 {
		t.Fatal("no operator recorded")
	}
	customer, err := ds.Table("customer")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	var customerRows int64
	for _, o := range rows {
		if o.Query != "q3" || o.Run != 3 {
			t.Fatalf("row %+v: want query q3, run 3", o)
		}
		if o.Pipeline < 0 || o.Pipeline >= len(p.Pipelines) || o.Op < 0 || o.Op >= len(p.Pipelines[o.Pipeline].Ops) {
			t.Fatalf("row %+v: no such plan operator", o)
		}
		pl := &p.Pipelines[o.Pipeline]
		op := &pl.Ops[o.Op]
		want := op.Kind.String()
		if op.Kind == plan.OpAggPartial && o.Kind == OpEmit {
			want = OpEmit
		}
		if o.Kind != want {
			t.Errorf("row %+v: the plan's op is a %s", o, op.Kind)
		}
		if o.Ns <= 0 && o.InRows > 0 {
			t.Errorf("row %+v: no time", o)
		}
		if op.Kind == plan.OpFilter && o.OutRows > o.InRows {
			t.Errorf("row %+v: a filter kept more rows than it saw", o)
		}
		if op.Kind == plan.OpFilter && pl.Source.Kind == plan.SourceScan && p.Tables[pl.Source.Table].Name == "customer" {
			customerRows += o.InRows
		}
		kinds[o.Kind]++
	}
	if customerRows != customer.Rows {
		t.Errorf("customer filter saw %d rows, the table has %d", customerRows, customer.Rows)
	}
	for _, k := range []string{"filter", "hash-build", "hash-probe", "agg-partial", OpEmit, "agg-final", "top-k", "shuffle"} {
		if kinds[k] == 0 {
			t.Errorf("no %s recorded (recorded: %v)", k, kinds)
		}
	}
	if r.Batch.Rows == 0 {
		t.Error("q3 returned no rows")
	}

	var buf bytes.Buffer
	if err := ot.WriteCSV(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := ReadOpTimes(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != len(rows) {
		t.Fatalf("read back %d rows, wrote %d", len(back), len(rows))
	}
	for i := range back {
		if back[i] != rows[i] {
			t.Fatalf("row %d read back as %+v, written %+v", i, back[i], rows[i])
		}
	}
}

// A file that is not operator times, or a bad count, is refused naming
// the line.
func TestReadOpTimesBadInput(t *testing.T) {
	head := strings.Join(opTimesHeader, ",") + "\n"
	for _, c := range []struct{ in, want string }{
		{"query,run\n", "header"},
		{strings.Replace(head, "ns", "ms", 1), `column 11 is "ms"`},
		{head + "q1,0,0,1,filter,0,10,100,5,50,1000\nq1,0,0,1,filter,0,ten,100,5,50,1000\n", "line 3"},
		{head + "q1,0,0,1,filtre,0,10,100,5,50,1000\n", "line 2"},
		{head + "q1,0,0,1,filter,-1,10,100,5,50,1000\n", `"-1" is not a count`},
	} {
		_, err := ReadOpTimes(strings.NewReader(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one naming %q", c.in, err, c.want)
		}
	}
}
