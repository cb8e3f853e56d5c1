package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"gostachio/engine"
	"gostachio/internal/units"
	"gostachio/scheduler"
	"gostachio/traces"
)

// WorkerOptions are the options of `gostachio worker`.
type WorkerOptions struct {
	// RunOptions are the query options; only rank 0's count (Data is
	// every worker's too: it must name the same dataset everywhere).
	engine.RunOptions
	// Timeout is the failure-detection timeout (Options.Timeout).
	Timeout time.Duration
	// Transport is the exchange transport, TransportTCP (default) or
	// TransportRDMA (a binary built with -tags rdma); every worker must use
	// the same.
	Transport string
	// Getenv reads the launcher's environment (nil: os.Getenv).
	Getenv func(string) string
	// BetweenQueries, when set, is called on rank 0 between the queries
	// (BetweenQueries' contract); nil: nothing runs between them.
	BetweenQueries BetweenQueries
}

// BetweenQueries is a hook that rank 0 of `gostachio worker` runs after
// each query: a measurement taken beside the queries on the same machine
// and in the same minutes (calibrate/cluster's CPU and disk references
// are such hooks).
//
// RunWorker calls it on rank 0 alone, once per query, in the job's order
// and never concurrently: after the query's result has arrived and its
// summary line is on stderr, before the result is printed and before the
// next query starts, so that every other worker waits, idle, while it
// runs. query is the query's name as run (the job's list may name a
// query several times) and index its place in that list, from 0. The
// measurements it returns go with that query's result: under their names
// in --format json (no key when it returns none) and their notes on
// stderr. An error ends the run: the workers are stopped, nothing more is
// printed, and RunWorker returns the error; so does a measurement without
// a name, named twice, or named as one of the result's own keys.
type BetweenQueries func(ctx context.Context, query string, index int) ([]Measurement, error)

// Measurement is one named figure a BetweenQueries hook took.
type Measurement struct {
	// Name is its key in the query's JSON result, e.g. cpu_reference_ns.
	Name string
	// Value is written as a JSON number (an integral value without a
	// fraction or exponent, below 1e21).
	Value float64
	// Note, when not empty, is printed on stderr as a line of its own
	// (e.g. "cpu reference: 12.345 ms"); a measurement without one is in
	// the JSON result alone.
	Note string
}

// RunWorker is `gostachio worker`: it finds its rank and rank 0 in the
// environment (FromEnv) and runs its part of the job; rank 0 prints each
// result on stdout as `gostachio query` does (table, csv or json) and a
// summary line per query on stderr.
func RunWorker(ctx context.Context, o WorkerOptions, stdout, stderr io.Writer) error {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	rv, err := FromEnv(getenv)
	if err != nil {
		return err
	}
	if err := engine.CheckFormat(o.Format); err != nil {
		return err
	}
	names, err := engine.ParseQueries(o.Query, o.Catalog.Names)
	if err != nil {
		return err
	}
	defer engine.TuneGC()()
	co := Options{Rank: rv.Rank, World: rv.World, Local: rv.Local, Addr: rv.Addr, Timeout: o.Timeout, Log: stderr, Transport: o.Transport,
		Catalog: o.Catalog,
		Job: Job{Data: o.Data, Queries: names, Policy: o.Policy, Set: o.Set, Devices: o.Devices, Mem: o.Mem,
			Buffered: o.Buffered, IO: o.IO, NoVerify: o.NoVerify, Trace: o.Trace != "", OpTimes: o.OpTimes}}
	if o.Trace != "" {
		paths := traces.NewQueryPaths(o.Trace, names)
		co.OnTrace = func(name string, events []traces.Event) error {
			return saveTrace(paths.Next(name), name, rv.World, o.Data, events)
		}
	}
	var results []*engine.QueryResult
	var measured [][]Measurement
	co.OnResult = func(r *engine.QueryResult) error {
		fmt.Fprintf(stderr, "%s: %d rows in %.3f s on %d workers (policy %s, %d tasks, %d sends moving %s, read %s, peak intermediate %s per worker)\n",
			r.Query, r.Batch.Rows, r.Wall.Seconds(), rv.World, r.Policy, r.Sched.Tasks, r.Sched.ByKind[scheduler.TaskSend],
			units.FormatBytes(r.Sched.BytesByKind[scheduler.TaskSend]), units.FormatBytes(r.IOBytes), units.FormatBytes(r.PeakRetained))
		var ms []Measurement
		if o.BetweenQueries != nil {
			var err error
			if ms, err = o.BetweenQueries(ctx, r.Query, len(measured)); err != nil {
				return err
			}
			if err := checkMeasurements(ms); err != nil {
				return fmt.Errorf("cluster: worker: between queries, after %s: %w", r.Query, err)
			}
			for _, m := range ms {
				if m.Note != "" {
					fmt.Fprintln(stderr, m.Note)
				}
			}
		}
		measured = append(measured, ms)
		if o.Format == "json" {
			results = append(results, r)
			return nil
		}
		if len(names) > 1 {
			fmt.Fprintf(stdout, "-- %s\n", r.Query)
		}
		return engine.WriteResult(stdout, r, o.Format)
	}
	if err := Run(ctx, co); err != nil {
		return err
	}
	if o.Format == "json" && rv.Rank == 0 {
		return writeJSON(stdout, results, measured)
	}
	return nil
}

// saveTrace writes query name's tasks of every worker as one Chrome trace
// (one process per worker) at path (traces.QueryPaths names it, as for
// `gostachio query`).
func saveTrace(path, name string, world int, data string, events []traces.Event) error {
	host, _ := os.Hostname()
	policy := ""
	if len(events) > 0 {
		_, policy, _ = strings.Cut(events[0].Run, "/")
	}
	meta := traces.Meta{Title: fmt.Sprintf("engine %s %s on %d workers, %s", name, policy, world, data),
		Backend: "engine", Machine: host}
	if err := traces.Save(path, events, meta); err != nil {
		return fmt.Errorf("cluster: trace of %s: %w", name, err)
	}
	return nil
}

type jsonResult struct {
	Query     string     `json:"query"`
	Policy    string     `json:"policy"`
	Columns   []string   `json:"columns"`
	Rows      [][]string `json:"rows"`
	Seconds   float64    `json:"seconds"`
	Tasks     int64      `json:"tasks"`
	IOBytes   int64      `json:"io_bytes"`
	PeakData  int64      `json:"peak_intermediate_bytes"`
	SentBytes int64      `json:"sent_bytes"`
	// CPUNs is the CPU time every worker's process used during the run,
	// summed (engine.QueryResult.CPUNs; omitted when a worker's is
	// unknown).
	CPUNs int64 `json:"cpu_ns,omitempty"`
	// Measurements are what WorkerOptions.BetweenQueries took after this
	// query, written after the fields above under their own names.
	Measurements []Measurement `json:"-"`
}

// resultKeys are jsonResult's own keys, which no measurement may take.
var resultKeys = map[string]bool{"query": true, "policy": true, "columns": true, "rows": true, "seconds": true,
	"tasks": true, "io_bytes": true, "peak_intermediate_bytes": true, "sent_bytes": true, "cpu_ns": true}

// checkMeasurements says what is wrong with a hook's measurements' names.
func checkMeasurements(ms []Measurement) error {
	seen := make(map[string]bool, len(ms))
	for _, m := range ms {
		switch {
		case m.Name == "":
			return errors.New("a measurement without a name")
		case resultKeys[m.Name]:
			return fmt.Errorf("measurement %q: a key of the query's own result", m.Name)
		case seen[m.Name]:
			return fmt.Errorf("measurement %q given twice", m.Name)
		}
		seen[m.Name] = true
	}
	return nil
}

// MarshalJSON writes the result's fields, then its measurements.
func (r jsonResult) MarshalJSON() ([]byte, error) {
	type plain jsonResult // without this method
	b, err := json.Marshal(plain(r))
	if err != nil || len(r.Measurements) == 0 {
		return b, err
	}
	b = b[:len(b)-1] // the closing brace
	for _, m := range r.Measurements {
		name, err := json.Marshal(m.Name)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(m.Value)
		if err != nil {
			return nil, fmt.Errorf("measurement %s: %w", m.Name, err)
		}
		b = append(append(append(append(b, ','), name...), ':'), v...)
	}
	return append(b, '}'), nil
}

var _ json.Marshaler = jsonResult{}

// writeJSON prints the results, each with the measurements taken after it
// (measured is as long as rs, or nil).
func writeJSON(w io.Writer, rs []*engine.QueryResult, measured [][]Measurement) error {
	out := make([]jsonResult, len(rs))
	for i, r := range rs {
		out[i] = jsonResult{Query: r.Query, Policy: r.Policy, Columns: r.Columns, Rows: r.Rows(),
			Seconds: r.Wall.Seconds(), Tasks: r.Sched.Tasks, IOBytes: r.IOBytes, PeakData: r.PeakRetained,
			SentBytes: r.Sched.BytesByKind[scheduler.TaskSend], CPUNs: max(r.CPUNs, 0)}
		if i < len(measured) {
			out[i].Measurements = measured[i]
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// LaunchOptions are the options of `gostachio cluster`.
type LaunchOptions struct {
	// Nodes is the number of worker processes.
	Nodes int
	// Exe is the gostachio binary to start (os.Executable()); each worker
	// runs `Exe worker Args...`.
	Exe  string
	Args []string
	// Grace is how long the other workers may take to exit on their own
	// once one exited (rank 0 aborts them after a failure) before they are
	// killed (default 15 s).
	Grace time.Duration
	// Netns runs each worker in a network namespace of its own (NewNetns:
	// root and iproute2 needed), rank 0 at its namespace's address, port
	// DefaultPort; Link shapes every worker's link (only with Netns).
	Netns bool
	Link  Link
	// NetnsID names the network's resources (default: NewNetnsID).
	NetnsID string
}

// Launch is `gostachio cluster`: it starts Nodes workers of this binary on
// this machine (torchrun environment, rank 0 at 127.0.0.1 on a free
// port), copies rank 0's stdout and stderr, and the others' output to
// stderr prefixed with "[rank k] ". The workers share one process group,
// which is killed when ctx ends, when a worker outlives the grace period
// after another exited, or when this process dies (Linux: parent-death
// signal); Launch returns only once every worker has been waited for. The
// error is the interruption (wrapping ctx.Err()), rank 0's failure, or the
// first other worker's.
//
// With Netns, Launch first removes the leftovers of crashed launchers
// (CleanupNetns), makes the network, says so on stderr ("cluster: netns
// run ID: ..."), starts worker k with `ip netns exec` in namespace k, and
// removes the network before it returns, whatever happened (an interrupt
// ends ctx; a killed launcher leaves it to `gostachio cluster --cleanup`
// or the next launch).
func Launch(ctx context.Context, o LaunchOptions, stdout, stderr io.Writer) (err error) {
	if o.Nodes < 1 {
		return fmt.Errorf("cluster: --nodes %d: need at least one worker", o.Nodes)
	}
	if o.Grace <= 0 {
		o.Grace = 15 * time.Second
	}
	master, port := "127.0.0.1", DefaultPort
	var nn *Netns
	if o.Netns {
		if err := CheckNetns(); err != nil {
			return fmt.Errorf("cluster: %w", err)
		}
		if removed, err := CleanupNetns(false); err != nil {
			fmt.Fprintf(stderr, "cluster: warning: removing leftovers of earlier runs: %v\n", err)
		} else if len(removed) > 0 {
			fmt.Fprintf(stderr, "cluster: removed leftovers of crashed runs: %s\n", strings.Join(removed, " "))
		}
		id := o.NetnsID
		if id == "" {
			if id, err = NewNetnsID(); err != nil {
				return err
			}
		}
		if nn, err = NewNetns(id, o.Nodes, o.Link); err != nil {
			return err
		}
		defer func() {
			if cerr := nn.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("cluster: removing the network of run %s: %w", nn.ID, cerr)
			}
		}()
		nn.describe(stderr)
		master = nn.Addrs[0]
	} else if o.Link != (Link{}) {
		return errors.New("cluster: --link shapes the links of --netns namespaces: add --netns")
	} else if port, err = freePort(); err != nil {
		return err
	}
	var outMu sync.Mutex
	type exit struct {
		rank int
		err  error
	}
	exits := make(chan exit, o.Nodes)
	pgid := 0
	kill := func(sig syscall.Signal) {
		if pgid > 0 {
			syscall.Kill(-pgid, sig)
		}
	}
	started := 0
	var startErr error
	for r := range o.Nodes {
		wargs := append([]string{"worker"}, o.Args...)
		cmd := exec.Command(o.Exe, wargs...)
		if nn != nil {
			// ip execs the worker in the namespace: the pid, process group
			// and parent-death signal are the worker's.
			cmd = nn.Exec(r, o.Exe, wargs...)
		}
		cmd.Env = append(os.Environ(), "RANK="+strconv.Itoa(r), "LOCAL_RANK="+strconv.Itoa(r),
			"WORLD_SIZE="+strconv.Itoa(o.Nodes), "LOCAL_WORLD_SIZE="+strconv.Itoa(o.Nodes),
			"MASTER_ADDR="+master, "MASTER_PORT="+strconv.Itoa(port))
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: pgid, Pdeathsig: syscall.SIGKILL}
		var outR, errR io.ReadCloser
		if outR, err = cmd.StdoutPipe(); err == nil {
			errR, err = cmd.StderrPipe()
		}
		if err == nil {
			err = cmd.Start()
		}
		if err != nil {
			startErr = fmt.Errorf("cluster: start worker %d: %w", r, err)
			break
		}
		if pgid == 0 {
			pgid = cmd.Process.Pid
		}
		started++
		var copiers sync.WaitGroup
		copyOut := func(src io.Reader, dst io.Writer, prefix string) {
			defer copiers.Done()
			sc := bufio.NewScanner(src)
			sc.Buffer(make([]byte, 64<<10), 16<<20)
			for sc.Scan() {
				outMu.Lock()
				fmt.Fprintf(dst, "%s%s\n", prefix, sc.Bytes())
				outMu.Unlock()
			}
			io.Copy(io.Discard, src)
		}
		copiers.Add(2)
		if r == 0 {
			go copyOut(outR, stdout, "")
			go copyOut(errR, stderr, "")
		} else {
			p := fmt.Sprintf("[rank %d] ", r)
			go copyOut(outR, stderr, p)
			go copyOut(errR, stderr, p)
		}
		// Wait for the worker only after its output is copied (exec's
		// rule: Wait closes the pipes).
		go func() {
			copiers.Wait()
			exits <- exit{r, cmd.Wait()}
		}()
	}
	if startErr != nil {
		kill(syscall.SIGKILL)
	}
	var rank0Err, firstErr, ctxErr error
	var grace <-chan time.Time
	ctxDone := ctx.Done()
	for left := started; left > 0; {
		select {
		case e := <-exits:
			left--
			if e.err != nil {
				werr := fmt.Errorf("cluster: worker %d: %w", e.rank, e.err)
				if e.rank == 0 {
					rank0Err = werr
				} else if firstErr == nil {
					firstErr = werr
				}
			}
			if grace == nil && left > 0 {
				grace = time.After(o.Grace)
			}
		case <-grace:
			kill(syscall.SIGKILL)
			grace = nil
			if firstErr == nil {
				firstErr = fmt.Errorf("cluster: workers still running %v after another exited: killed", o.Grace)
			}
		case <-ctxDone:
			kill(syscall.SIGTERM)
			ctxDone = nil
			grace = time.After(2 * time.Second)
			ctxErr = fmt.Errorf("cluster: interrupted, workers stopped: %w", ctx.Err())
		}
	}
	switch {
	case startErr != nil:
		return startErr
	case ctxErr != nil:
		return ctxErr
	case rank0Err != nil:
		return rank0Err
	}
	return firstErr
}

// freePort returns a TCP port free on the loopback interface now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("cluster: find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
