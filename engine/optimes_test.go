package engine

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gostachio/plan"
	"gostachio/tpch/queries"
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
	r, err := runQuery(context.Background(), ds, "q3", QueryOptions{Devices: 2, OpTimes: &ot})
	if err != nil {
		t.Fatal(err)
	}
	p, err := BuildQuery(ds, queries.Catalog(), "q3")
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
	var customerRows, opsCPU int64
	var whole []OpTime
	for _, o := range rows {
		if o.Kind == OpQuery {
			whole = append(whole, o)
			continue
		}
		opsCPU += o.CPUNs
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
		if o.CPUNs < 0 {
			t.Errorf("row %+v: no CPU time", o)
		}
		if op.Kind == plan.OpFilter && o.OutRows > o.InRows {
			t.Errorf("row %+v: a filter kept more rows than it saw", o)
		}
		if op.Kind == plan.OpFilter && pl.Source.Kind == plan.SourceScan && p.Tables[pl.Source.Table].Name == "customer" {
			customerRows += o.InRows
		}
		kinds[o.Kind]++
	}
	// The run's process CPU time holds every operator's thread time.
	if len(whole) != 1 || whole[0].Query != "q3" || whole[0].Run != 3 || whole[0].Pipeline != -1 || whole[0].Op != -1 {
		t.Fatalf("query rows %+v: want one of q3, run 3, pipeline and op -1", whole)
	}
	if w := whole[0]; w.Ns != r.Wall.Nanoseconds() || w.CPUNs < opsCPU {
		t.Errorf("query row %+v: want the run's wall time %d ns and at least its operators' %d ns of CPU", w, r.Wall.Nanoseconds(), opsCPU)
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
		{"query,run\n", "line 1: 2 columns"},
		{strings.Replace(head, ",ns,", ",ms,", 1), `column 11 is "ms"`},
		{head + "q1,0,0,1,filter,0,10,100,5,50,1000,900\nq1,0,0,1,filter,0,ten,100,5,50,1000,900\n", "line 3"},
		{head + "q1,0,0,1,filtre,0,10,100,5,50,1000,900\n", "line 2"},
		{head + "q1,0,0,1,filter,-1,10,100,5,50,1000,900\n", `"-1" is not a count`},
		{head + "q1,0,0,1,filter,0,10,100,5,50,1000,-2\n", `"-2" is not a count`},
		{head + "q1,0,0,1,filter,0,10,100,5,50,1000\n", "line 2: 11 fields, want 12"},
		{head + "q1,0,-1,1,filter,0,10,100,5,50,1000,900\n", `"-1" is not a count`},
		{"query,run,pipeline,op,kind,device,in_rows\n", "line 1: 7 columns"},
	} {
		_, err := ReadOpTimes(strings.NewReader(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one naming %q", c.in, err, c.want)
		}
	}
}

// A query's row (no pipeline) reads back.
func TestReadOpTimesQueryRow(t *testing.T) {
	var ot OpTimes
	ot.SetRun(4)
	ot.AddQuery("q9", 2*time.Second, 3e9)
	ot.AddQuery("q9", time.Second, -5)
	var buf bytes.Buffer
	if err := ot.WriteCSV(&buf); err != nil {
		t.Fatal(err)
	}
	got, err := ReadOpTimes(&buf)
	if err != nil {
		t.Fatal(err)
	}
	want := []OpTime{{Query: "q9", Run: 4, Pipeline: -1, Op: -1, Kind: OpQuery, Ns: 2e9, CPUNs: 3e9}, {Query: "q9", Run: 4, Pipeline: -1, Op: -1, Kind: OpQuery, Ns: 1e9, CPUNs: -1}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("read %+v, want %+v", got, want)
	}
}

// A file written before the cpu_ns column reads with CPUNs -1.
func TestReadOpTimesWithoutCPU(t *testing.T) {
	in := strings.Join(opTimesHeader[:len(opTimesHeader)-1], ",") + "\nq1,2,0,1,filter,1,10,100,5,50,1000\n"
	got, err := ReadOpTimes(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := OpTime{Query: "q1", Run: 2, Pipeline: 0, Op: 1, Kind: "filter", Device: 1, InRows: 10, InBytes: 100, OutRows: 5, OutBytes: 50, Ns: 1000, CPUNs: -1}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("read %+v, want %+v", got, want)
	}
}

// An operator's CPU time is its thread's alone: a timed operator that
// waits 50 ms while another goroutine spins is charged its wall time but
// next to no CPU. With one P, the spinning goroutine would run on the
// waiting operator's thread if the clock did not lock it.
func TestOpClockCountsOnlyItsThread(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var ot OpTimes
	d := &runData{opTimes: &ot, plan: &plan.Plan{Name: "q0", Pipelines: []plan.Pipeline{{Ops: []plan.Op{{Kind: plan.OpFilter}}}}}}
	var stop atomic.Bool
	spun := make(chan struct{})
	go func() {
		defer close(spun)
		for !stop.Load() {
			runtime.Gosched()
		}
	}()
	c := d.opClock()
	time.Sleep(50 * time.Millisecond)
	d.timeOp(0, &d.plan.Pipelines[0].Ops[0], "filter", 0, nil, nil, c)
	stop.Store(true)
	<-spun
	c.stop() // after timeOp: does nothing
	rows := ot.Rows()
	if len(rows) != 1 {
		t.Fatalf("recorded %d rows, want 1", len(rows))
	}
	if r := rows[0]; r.Ns < 50e6 || r.CPUNs < 0 || r.CPUNs > 20e6 {
		t.Fatalf("wall %v, CPU %v: want at least 50ms of wall time and under 20ms of CPU", time.Duration(r.Ns), time.Duration(r.CPUNs))
	}
}
