package engine

import (
	"encoding/csv"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"gostachio/kernels/cpu"
	"gostachio/plan"
)

// OpTimes collects the time of every operator the host runs in a query's
// kernels, with its input and output sizes (QueryOptions.OpTimes): what
// `gostachio query --op-times` writes and `gostachio validate-ops` prices
// against a profile one operator at a time, to find where a model errs
// inside a query rather than in its makespan. Safe for concurrent use;
// the zero value is ready.
//
// Each operator run gets two clocks: its wall time, which counts the
// time its goroutine waited for a core (preempted by the other device's
// kernel, the reader, another worker process of an emulated cluster),
// and the CPU time of its thread, which does not: while timed, the
// operator's goroutine is locked to its OS thread (runtime.LockOSThread),
// so nothing else runs on that thread between the two reads. Timing
// costs two wall and two thread-CPU clock reads (system calls) an
// operator run, and a thread hand-off where a timed operator blocks.
type OpTimes struct {
	mu   sync.Mutex
	run  int
	rows []OpTime
}

// OpTime is one run of one operator over one batch (or, for a partial
// aggregate's emit, over its device's state).
type OpTime struct {
	Query string
	// Run is the query's place in its session (SetRun): q1,q1 gives 0, 1.
	Run int
	// Pipeline and Op index the plan (Plan.Pipelines[Pipeline].Ops[Op]).
	Pipeline, Op int
	// Kind is Op's plan.OpKind name, or OpEmit.
	Kind   string
	Device int
	// In* are what entered the operator, Out* what left it (0 where
	// nothing leaves: a fold into a state, a hash build).
	InRows, InBytes, OutRows, OutBytes int64
	// Ns is the wall time; CPUNs the CPU time of the operator's thread
	// (-1: not recorded, a file written before the column existed).
	Ns, CPUNs int64
}

// OpEmit is the Kind of a partial aggregate's state turned into rows and
// routed to its consumers (Op: the partial aggregate; In: its groups).
const OpEmit = "emit"

// OpQuery is the Kind of a whole run of a query on this process
// (AddQuery): Pipeline and Op are -1, Ns its wall time, CPUNs the CPU
// time every thread of the process used meanwhile (user and system: the
// operators, and what runs beside them — reads, decoding, exchange, the
// network stack's system calls, page faults, the collector).
const OpQuery = "query"

// SetRun stamps the operators timed from now on with run.
func (o *OpTimes) SetRun(run int) {
	o.mu.Lock()
	o.run = run
	o.mu.Unlock()
}

// Add records t, stamped with the current run.
func (o *OpTimes) Add(t OpTime) {
	o.mu.Lock()
	t.Run = o.run
	o.rows = append(o.rows, t)
	o.mu.Unlock()
}

// AddQuery records a run of query that took wall, during which the
// process used cpuNs of CPU time (ProcessCPUNs after minus before; a
// negative one is recorded as -1, unknown).
func (o *OpTimes) AddQuery(query string, wall time.Duration, cpuNs int64) {
	o.Add(OpTime{Query: query, Pipeline: -1, Op: -1, Kind: OpQuery, Ns: wall.Nanoseconds(), CPUNs: max(cpuNs, -1)})
}

// ProcessCPUNs is the CPU time, user and system, all threads of this
// process have used (-1 where getrusage fails).
func ProcessCPUNs() int64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// ProcessCPUSince is the process CPU time used since before (a ProcessCPUNs
// reading), -1 where either reading failed.
func ProcessCPUSince(before int64) int64 {
	now := ProcessCPUNs()
	if before < 0 || now < 0 {
		return -1
	}
	return now - before
}

// Rows returns a copy of what was recorded, in order.
func (o *OpTimes) Rows() []OpTime {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]OpTime(nil), o.rows...)
}

// opTimesHeader is the CSV's header, in OpTime's order.
var opTimesHeader = []string{"query", "run", "pipeline", "op", "kind", "device", "in_rows", "in_bytes", "out_rows", "out_bytes", "ns", "cpu_ns"}

// WriteCSV writes the recorded operators as CSV with a header.
func (o *OpTimes) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(opTimesHeader); err != nil {
		return err
	}
	for _, t := range o.Rows() {
		rec := []string{t.Query, strconv.Itoa(t.Run), strconv.Itoa(t.Pipeline), strconv.Itoa(t.Op), t.Kind, strconv.Itoa(t.Device)}
		for _, v := range []int64{t.InRows, t.InBytes, t.OutRows, t.OutBytes, t.Ns, t.CPUNs} {
			rec = append(rec, strconv.FormatInt(v, 10))
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// ReadOpTimes reads what WriteCSV wrote, and the files written before
// the cpu_ns column existed (their CPUNs is -1); an error names the line
// and field at fault.
func ReadOpTimes(r io.Reader) ([]OpTime, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("operator times: header: %w", err)
	}
	cols := len(opTimesHeader)
	if len(head) == cols-1 {
		cols-- // no cpu_ns
	}
	if len(head) != cols {
		return nil, fmt.Errorf("operator times: line 1: %d columns, want %d (not a file of query --op-times)", len(head), len(opTimesHeader))
	}
	for i, h := range head {
		if h != opTimesHeader[i] {
			return nil, fmt.Errorf("operator times: line 1: column %d is %q, want %q (not a file of query --op-times)", i+1, h, opTimesHeader[i])
		}
	}
	var out []OpTime
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("operator times: %w", err)
		}
		if len(rec) != cols {
			return nil, fmt.Errorf("operator times: line %d: %d fields, want %d", line, len(rec), cols)
		}
		n := [10]int64{9: -1}
		for i, f := range append([]string{rec[1], rec[2], rec[3]}, rec[5:]...) {
			v, err := strconv.ParseInt(f, 10, 64)
			negative := i == 2 || i == 1 && rec[4] == OpQuery || i == 9 && v == -1
			if err != nil || v < 0 && !negative {
				return nil, fmt.Errorf("operator times: line %d: %q is not a count", line, f)
			}
			n[i] = v
		}
		if rec[4] != OpEmit && rec[4] != OpQuery {
			if _, err := plan.ParseOpKind(rec[4]); err != nil {
				return nil, fmt.Errorf("operator times: line %d: %w", line, err)
			}
		}
		out = append(out, OpTime{Query: rec[0], Run: int(n[0]), Pipeline: int(n[1]), Op: int(n[2]), Kind: rec[4], Device: int(n[3]),
			InRows: n[4], InBytes: n[5], OutRows: n[6], OutBytes: n[7], Ns: n[8], CPUNs: n[9]})
	}
}

// opClock is an operator run being timed (runData.opClock): nil when
// nothing records.
type opClock struct {
	wall time.Time
	cpu  int64
	// locked: the goroutine holds its thread until stop.
	locked bool
}

// opClock starts timing an operator: it locks the goroutine to its thread
// and reads both clocks. Every clock it returns must reach timeOp or stop.
func (d *runData) opClock() *opClock {
	if d.opTimes == nil {
		return nil
	}
	runtime.LockOSThread()
	return &opClock{cpu: threadCPUNs(), wall: time.Now(), locked: true}
}

// stop releases c's thread without recording; a second call, or one
// after timeOp, does nothing.
func (c *opClock) stop() {
	if c != nil && c.locked {
		c.locked = false
		runtime.UnlockOSThread()
	}
}

// threadCPUNs is the CPU time the calling thread has used.
func threadCPUNs() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return -1
	}
	return ts.Nano()
}

// timeOp records op of pipeline p on dev, timed by c (opClock), over in,
// leaving out (nil: nothing leaves), and stops c.
func (d *runData) timeOp(p int32, op *plan.Op, kind string, dev int, in, out *cpu.Batch, c *opClock) {
	if c == nil || !c.locked {
		return
	}
	ns := time.Since(c.wall).Nanoseconds()
	cpuNs := int64(-1)
	if end := threadCPUNs(); end >= 0 && c.cpu >= 0 {
		cpuNs = end - c.cpu
	}
	c.stop()
	oi := -1
	ops := d.plan.Pipelines[p].Ops
	for i := range ops {
		if &ops[i] == op {
			oi = i
		}
	}
	t := OpTime{Query: d.plan.Name, Pipeline: int(p), Op: oi, Kind: kind, Device: dev, Ns: ns, CPUNs: cpuNs}
	if in != nil {
		t.InRows, t.InBytes = int64(in.Rows), batchBytes(in)
	}
	if out != nil {
		t.OutRows, t.OutBytes = int64(out.Rows), batchBytes(out)
	}
	d.opTimes.Add(t)
}
