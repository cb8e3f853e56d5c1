package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"gostachio/internal/testfixture"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"gostachio/dataset"
	"gostachio/engine"
	"gostachio/plan"
	"gostachio/scheduler"
	"gostachio/tpch/queries"
	"gostachio/tpch/verify"
)

const (
	answersDir  = "../../tpch/answers"
	officialDir = "../../tpch/dbgen/testdata"
)

// fixture is the test binary's SF0.01 dataset, in small chunks (lineitem:
// about 15) so that every table spreads over the workers, and its
// gostachio binary.
var fixture = &testfixture.Fixture{Prefix: "gostachio-cluster-test-", ChunkRows: 4096}

func testData(t testing.TB) string { return fixture.TPCH(t) }

func TestMain(m *testing.M) {
	// Received memory is poisoned when released: a result or kernel that
	// read a frame after its query released it gives wrong answers.
	os.Setenv("GOSTACHIO_POISON_RECV", "1")
	code := m.Run()
	fixture.Cleanup()
	os.Exit(code)
}

// cluster is an in-process cluster: one goroutine per worker, each with
// its own backend, talking over loopback TCP.
type testCluster struct {
	errs    []error
	results []*engine.QueryResult
	elapsed time.Duration
}

// runCluster runs job on `world` in-process workers. opts, when set,
// adjusts each worker's options (fault injection).
func runCluster(t *testing.T, world int, job Job, timeout time.Duration, opts func(*Options)) *testCluster {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tc := &testCluster{errs: make([]error, world)}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for r := range world {
		o := Options{Rank: r, World: world, Addr: ln.Addr().String(), Timeout: timeout, JoinTimeout: 20 * time.Second, Catalog: queries.Catalog()}
		if r == 0 {
			o.Listener, o.Job = ln, job
			o.OnResult = func(res *engine.QueryResult) error {
				mu.Lock()
				tc.results = append(tc.results, res)
				mu.Unlock()
				return nil
			}
		}
		if opts != nil {
			opts(&o)
		}
		wg.Go(func() { tc.errs[r] = Run(context.Background(), o) })
	}
	wg.Wait()
	tc.elapsed = time.Since(start)
	return tc
}

// rowsOf formats a result as sorted lines (tie order may differ between
// runs with different workers; the official comparison checks order).
func rowsOf(r *engine.QueryResult) []string {
	var out []string
	for _, row := range r.Rows() {
		out = append(out, strings.Join(row, "|"))
	}
	sort.Strings(out)
	return out
}

// TestClusterTPCH runs all 22 queries on 2 and 4 workers of one device
// and 2 workers of two devices and compares each result with the
// single-process engine's and, where trustworthy, the official answer.
func TestClusterTPCH(t *testing.T) {
	dir := testData(t)
	ds, err := dataset.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := queries.Names()
	want := map[string][]string{}
	for _, q := range names {
		p, err := engine.BuildQuery(ds, queries.Catalog(), q)
		if err != nil {
			t.Fatal(err)
		}
		r, err := engine.Query(context.Background(), ds, p, engine.QueryOptions{Devices: 2, Set: "chunk=64KiB"})
		if err != nil {
			t.Fatalf("single-process %s: %v", q, err)
		}
		want[q] = rowsOf(r)
	}
	// Frames of 16 KiB+ are read into pooled memory (at SF0.01 mostly on
	// 2 workers): the answers are checked while it is recycled.
	reused := recvReused.Load()
	defer func() {
		if recvReused.Load() == reused {
			t.Error("no received frame was read into recycled memory: the poisoned pool was not exercised")
		}
	}()
	for _, shape := range []struct{ workers, devices int }{{2, 1}, {4, 1}, {2, 2}} {
		t.Run(fmt.Sprintf("%dx%d", shape.workers, shape.devices), func(t *testing.T) {
			job := Job{Data: dir, Queries: names, Policy: "overlap", Set: "chunk=64KiB", Devices: shape.devices, Mem: 1 << 30}
			tc := runCluster(t, shape.workers, job, 10*time.Second, nil)
			for r, err := range tc.errs {
				if err != nil {
					t.Fatalf("worker %d: %v", r, err)
				}
			}
			if len(tc.results) != len(names) {
				t.Fatalf("%d results for %d queries", len(tc.results), len(names))
			}
			official := 0
			for i, r := range tc.results {
				q := names[i]
				if r.Query != q {
					t.Errorf("result %d is %s, want %s", i, r.Query, q)
					continue
				}
				if got := rowsOf(r); strings.Join(got, "\n") != strings.Join(want[q], "\n") {
					t.Errorf("%s: cluster result differs from the single-process engine:\ncluster:\n%s\nengine:\n%s",
						q, strings.Join(got, "\n"), strings.Join(want[q], "\n"))
				}
				// Every plan gathers its result on worker 0: with several
				// workers, data crossed nodes (but Q17 at SF0.01 selects
				// no part, so nothing is left to send).
				if r.Sched.ByKind[scheduler.TaskSend] == 0 && q != "q17" {
					t.Errorf("%s: no sends on %d workers", q, shape.workers)
				}
				path, prefix, ok := verify.AnswerPath(answersDir, officialDir, q, 0.01)
				if !ok {
					continue
				}
				ans, err := verify.ReadAnswer(path)
				if err != nil {
					t.Fatal(err)
				}
				if err := verify.Compare(&verify.Table{Header: r.Columns, Rows: r.Rows()}, ans, prefix); err != nil {
					t.Errorf("%s differs from %s:\n%v", q, path, err)
				}
				official++
			}
			t.Logf("%d workers x %d devices: 22 queries in %v, %d checked against official answers", shape.workers, shape.devices, tc.elapsed, official)
		})
	}
}

// faultConn wraps the connections one worker opens: once cut, its writes
// vanish and reads never return data (a cut link: no FIN, no RST), or,
// with closeIt, it is closed (a killed process).
type faultNet struct {
	mu    sync.Mutex
	conns []*faultConn
}

type faultConn struct {
	net.Conn
	mu  sync.Mutex
	cut bool
}

func (c *faultConn) isCut() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cut
}

func (c *faultConn) Write(p []byte) (int, error) {
	if c.isCut() {
		return len(p), nil
	}
	return c.Conn.Write(p)
}

func (c *faultConn) Read(p []byte) (int, error) {
	for {
		n, err := c.Conn.Read(p)
		if err != nil || !c.isCut() {
			return n, err
		}
	}
}

func (f *faultNet) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	fc := &faultConn{Conn: c}
	f.mu.Lock()
	f.conns = append(f.conns, fc)
	f.mu.Unlock()
	return fc, nil
}

func (f *faultNet) fault(closeIt bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.conns {
		if closeIt {
			c.Conn.Close()
		} else {
			c.mu.Lock()
			c.cut = true
			c.mu.Unlock()
		}
	}
}

// TestClusterWorkerFault: a worker whose connections close (killed) or
// go silent (link cut) mid-run fails the run within the timeout, with an
// error naming that worker; every worker returns, no result after the
// fault is reported, and no goroutine is left behind.
func TestClusterWorkerFault(t *testing.T) {
	dir := testData(t)
	for _, mode := range []string{"closed", "cut"} {
		t.Run(mode, func(t *testing.T) {
			before := runtime.NumGoroutine()
			const timeout = time.Second
			const victim = 2
			fn := &faultNet{}
			var faultAt time.Time
			// Many rounds of all queries: the fault lands mid-query.
			var qs []string
			for range 20 {
				qs = append(qs, queries.Names()...)
			}
			job := Job{Data: dir, Queries: qs, Policy: "overlap", Set: "chunk=64KiB", Devices: 1, Mem: 1 << 30}
			var firstResult sync.Once
			tc := runCluster(t, 3, job, timeout, func(o *Options) {
				if o.Rank == victim {
					o.Dial = fn.dial
				}
				if o.Rank == 0 {
					inner := o.OnResult
					o.OnResult = func(r *engine.QueryResult) error {
						firstResult.Do(func() {
							time.AfterFunc(150*time.Millisecond, func() {
								faultAt = time.Now()
								fn.fault(mode == "closed")
							})
						})
						return inner(r)
					}
				}
			})
			if faultAt.IsZero() {
				t.Fatal("the run ended before the fault")
			}
			err := tc.errs[0]
			var we *WorkerError
			if !errors.As(err, &we) || we.Rank != victim {
				t.Fatalf("rank 0: err = %v, want a *WorkerError naming worker %d", err, victim)
			}
			if !strings.Contains(err.Error(), fmt.Sprintf("worker %d (pid %d, host ", victim, os.Getpid())) {
				t.Errorf("error %q does not name the worker with pid and host", err)
			}
			for r, e := range tc.errs {
				if e == nil {
					t.Errorf("worker %d: no error after the fault", r)
				}
			}
			if len(tc.results) >= len(qs) {
				t.Errorf("all %d results reported despite the fault", len(tc.results))
			}
			// Fault to the end of the run: the timeout (detection) plus
			// aborting the others.
			elapsed := time.Since(faultAt)
			if elapsed > 3*timeout+time.Second {
				t.Errorf("the run ended %v after the fault (timeout %v)", elapsed, timeout)
			}
			t.Logf("%s: %v after the fault: %v", mode, elapsed.Round(time.Millisecond), err)
			deadline := time.Now().Add(3 * time.Second)
			for runtime.NumGoroutine() > before+2 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if g := runtime.NumGoroutine(); g > before+2 {
				buf := make([]byte, 1<<20)
				n := runtime.Stack(buf, true)
				t.Errorf("%d goroutines after the run, %d before:\n%s", g, before, buf[:n])
			}
		})
	}
}

// TestClusterJobErrors: a worker that cannot run the job (missing
// dataset) is named; a worker that never joins is reported after the join
// timeout.
func TestClusterJobErrors(t *testing.T) {
	job := Job{Data: filepath.Join(t.TempDir(), "nope"), Queries: []string{"q6"}, Devices: 1, Mem: 1 << 30}
	tc := runCluster(t, 2, job, time.Second, nil)
	if tc.errs[0] == nil || !strings.Contains(tc.errs[0].Error(), "worker ") {
		t.Errorf("missing dataset: err = %v, want an error naming a worker", tc.errs[0])
	}
	if tc.errs[1] == nil {
		t.Errorf("worker 1 returned no error")
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = Run(context.Background(), Options{Rank: 0, World: 3, Listener: ln, JoinTimeout: 300 * time.Millisecond,
		Job: Job{Data: testData(t), Queries: []string{"q6"}, Devices: 1}})
	if err == nil || !strings.Contains(err.Error(), "did not join") {
		t.Errorf("no workers: err = %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("join timeout of 300ms took %v", d)
	}
}

// soloWorker is the options of a worker of a world of one on the SF0.01
// test data, rank 0 at a free loopback port, running queries with JSON
// output.
func soloWorker(t *testing.T, qs string) WorkerOptions {
	t.Helper()
	return WorkerOptions{RunOptions: engine.RunOptions{Catalog: queries.Catalog(), Data: testData(t), Query: qs, Format: "json", QueryOptions: engine.QueryOptions{Devices: 1, Mem: 1 << 30}},
		Timeout: 5 * time.Second, Getenv: testfixture.SoloEnv(t)}
}

// TestWorkerBetweenQueries: rank 0 calls the hook once per query, in
// order, with the query's name and index; its measurements go with that
// query's JSON result under their names and their notes on stderr, and an
// error from it, or a measurement it names badly, fails the run before
// anything is printed.
func TestWorkerBetweenQueries(t *testing.T) {
	o := soloWorker(t, "q6,q14,q6")
	var calls []string
	o.BetweenQueries = func(_ context.Context, query string, index int) ([]Measurement, error) {
		calls = append(calls, fmt.Sprintf("%s/%d", query, index))
		if index != 1 {
			return nil, nil
		}
		return []Measurement{{Name: "probe_ns", Value: 1234567, Note: "probe: 1.235 ms"}, {Name: "probe_bytes", Value: 4096}}, nil
	}
	var out, log bytes.Buffer
	if err := RunWorker(context.Background(), o, &out, &log); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if want := []string{"q6/0", "q14/1", "q6/2"}; !slices.Equal(calls, want) {
		t.Errorf("calls %v, want %v", calls, want)
	}
	var res []map[string]any
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || len(res) != 3 {
		t.Fatalf("%d results (%v): %s", len(res), err, out.String())
	}
	if res[1]["probe_ns"] != 1234567.0 || res[1]["probe_bytes"] != 4096.0 || res[1]["query"] != "q14" {
		t.Errorf("second result %v: want probe_ns 1234567 and probe_bytes 4096", res[1])
	}
	if _, ok := res[0]["probe_ns"]; ok {
		t.Errorf("first result %v carries the second's measurement", res[0])
	}
	if !bytes.Contains(out.Bytes(), []byte(`"probe_ns": 1234567`)) {
		t.Errorf("probe_ns not written as an integer: %s", out.String())
	}
	if got := strings.Count(log.String(), "probe: 1.235 ms\n"); got != 1 || strings.Contains(log.String(), "probe_bytes") {
		t.Errorf("%d probe notes on stderr, want 1 and none for probe_bytes:\n%s", got, log.String())
	}
	for _, c := range []struct {
		hook BetweenQueries
		want string
	}{
		{func(context.Context, string, int) ([]Measurement, error) { return nil, errors.New("probe failed") }, "probe failed"},
		{func(context.Context, string, int) ([]Measurement, error) { return []Measurement{{Value: 1}}, nil }, "without a name"},
		{func(context.Context, string, int) ([]Measurement, error) {
			return []Measurement{{Name: "seconds"}}, nil
		}, `"seconds"`},
		{func(context.Context, string, int) ([]Measurement, error) {
			return []Measurement{{Name: "x"}, {Name: "x"}}, nil
		}, "twice"},
	} {
		bad := o
		bad.BetweenQueries = c.hook
		var out bytes.Buffer
		if err := RunWorker(context.Background(), bad, &out, io.Discard); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("err %v, want it to name %q", err, c.want)
		} else if out.Len() > 0 {
			t.Errorf("%q: printed results before failing: %s", c.want, out.String())
		}
	}
}

// With Job.OpTimes every worker writes the operators its host ran, in a
// file of its own; between them the workers' customer filters saw every
// stored customer row once.
func TestClusterOpTimes(t *testing.T) {
	dir := testData(t)
	path := filepath.Join(t.TempDir(), "ops.csv")
	job := Job{Data: dir, Queries: []string{"q3"}, Policy: "overlap", Devices: 1, Mem: 1 << 30, OpTimes: path}
	tc := runCluster(t, 2, job, 20*time.Second, nil)
	for r, err := range tc.errs {
		if err != nil {
			t.Fatalf("worker %d: %v", r, err)
		}
	}
	ds, err := dataset.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := engine.BuildQuery(ds, queries.Catalog(), "q3")
	if err != nil {
		t.Fatal(err)
	}
	customer, err := ds.Table("customer")
	if err != nil {
		t.Fatal(err)
	}
	var customerRows int64
	for r := range 2 {
		f, err := os.Open(RankPath(path, r))
		if err != nil {
			t.Fatalf("worker %d wrote no operator times: %v", r, err)
		}
		rows, err := engine.ReadOpTimes(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) == 0 {
			t.Fatalf("worker %d timed no operator", r)
		}
		queryRows := 0
		for _, o := range rows {
			if o.Query != "q3" || o.Run != 0 {
				t.Fatalf("worker %d: row %+v, want q3's first run", r, o)
			}
			if o.Kind == engine.OpQuery {
				if queryRows++; o.Ns <= 0 || o.CPUNs <= 0 {
					t.Errorf("worker %d: query row %+v without its wall or CPU time", r, o)
				}
				continue
			}
			pl := &p.Pipelines[o.Pipeline]
			if pl.Ops[o.Op].Kind == plan.OpFilter && pl.Source.Kind == plan.SourceScan && p.Tables[pl.Source.Table].Name == "customer" {
				customerRows += o.InRows
			}
		}
		if queryRows != 1 {
			t.Errorf("worker %d recorded %d runs of the query, want 1", r, queryRows)
		}
	}
	if customerRows != customer.Rows {
		t.Errorf("the workers' customer filters saw %d rows, the table has %d", customerRows, customer.Rows)
	}
	if got := RankPath("out/ops.csv", 3); got != "out/ops-rank3.csv" {
		t.Errorf("RankPath: %s", got)
	}
}
