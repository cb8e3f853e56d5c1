// Package cluster runs the engine on several processes (workers) that
// exchange data over TCP: rank 0 listens at the rendezvous address, the
// others connect to it; rank 0 distributes the job, coordinates every
// query (the scheduler.Coordinator: which pipelines finished where) and
// gathers the result, which the plans leave on node 0, device 0.
//
// Each worker runs one node of the scheduler's topology (scheduler.RunNode
// over an engine.Backend with BackendOptions.Node/Nodes). Two planes:
//
//   - control: one connection per worker to rank 0, JSON messages. Rank 0
//     relays deliveries (the scheduler's accounting of data sent to another
//     node) and answers finished pipelines with global-done, all in order
//     on each connection, so a node learns of data before it learns that
//     the pipeline is done everywhere. Heartbeats every Timeout/5 and a
//     read deadline of Timeout detect a dead worker or a cut link.
//   - data: one connection from every worker to every other (frames of raw
//     column vectors, see wire.go). A send to another node completes when
//     that node acknowledges it stored the batches in its backend.
//
// Failure: a worker's error goes to rank 0, which aborts every worker and
// returns a *WorkerError naming the worker (rank, pid, host); a lost or
// silent connection is such an error, so no query hangs or reports a
// partial result. Every worker reads the same dataset directory (shared or
// replicated storage); each reads only the chunks its units cover.
package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"gostachio/dataset"
	"gostachio/engine"
	"gostachio/engine/storage"
	"gostachio/internal/atomicfile"
	"gostachio/kernels/cpu"
	"gostachio/plan"
	"gostachio/scheduler"
	"gostachio/traces"
)

// Job is what rank 0 runs on the cluster.
type Job struct {
	// Data is the dataset directory, the same path on every worker.
	Data string `json:"data"`
	// Queries are run in order ("q1".."q22").
	Queries []string `json:"queries"`
	Policy  string   `json:"policy"`
	Set     string   `json:"set,omitempty"`
	// Devices per worker (0: rank 0's GOMAXPROCS, for every worker: the
	// topology needs the same number on each node).
	Devices int `json:"devices"`
	// Mem is each worker's memory budget (0: engine.DefaultMem).
	Mem      int64  `json:"mem"`
	Buffered bool   `json:"buffered,omitempty"`
	IO       string `json:"io,omitempty"`
	// NoVerify: the workers skip checking read buffers against their
	// recorded checksums (engine.BackendOptions.NoVerify).
	NoVerify bool `json:"no_verify,omitempty"`
	// Trace: every worker records its tasks and sends them to rank 0 at
	// the end of each query (Options.OnTrace).
	Trace bool `json:"trace,omitempty"`
	// OpTimes: every worker times the operators its host runs
	// (engine.OpTimes) and writes them, at the end of the job, to this
	// path with "-rankK" before its extension (RankPath).
	OpTimes string `json:"op_times,omitempty"`
}

// RankPath is path with "-rankK" before its extension: where worker rank
// writes a file of its own (Job.OpTimes).
func RankPath(path string, rank int) string {
	ext := filepath.Ext(path)
	return fmt.Sprintf("%s-rank%d%s", strings.TrimSuffix(path, ext), rank, ext)
}

// Options configure one worker of a cluster run.
type Options struct {
	// Rank of this worker in [0, World); rank 0 coordinates.
	Rank, World int
	// Local is how many workers share this machine (Rendezvous.Local; 0
	// or 1: this one alone): their heaps share its memory limit
	// (engine.ShareHeapLimit).
	Local int
	// Addr is rank 0's rendezvous address (host:port).
	Addr string
	// Listener, on rank 0, is used instead of listening on Addr (tests:
	// a port chosen by the system).
	Listener net.Listener
	// Job is what to run (rank 0 only; the others receive it).
	Job Job
	// Catalog builds the plans of the job's queries, which the job names
	// (every worker: each builds its own, over its dataset).
	Catalog plan.Catalog
	// Timeout bounds how long a silent connection or an unacknowledged
	// frame is waited for before the query fails (default 5 s).
	Timeout time.Duration
	// JoinTimeout bounds the start: workers connecting to rank 0 (with
	// retries) and to each other (default 60 s).
	JoinTimeout time.Duration
	// OnResult, on rank 0, receives each query's result in Job order.
	OnResult func(*engine.QueryResult) error
	// OnTrace, on rank 0 with Job.Trace, receives each query's tasks of
	// every worker before its result (traces.Event.Node is the rank), in
	// nanoseconds since rank 0 started the query: the workers' wall clocks
	// must agree (one machine, or NTP-synchronized hosts).
	OnTrace func(query string, events []traces.Event) error
	// Log receives one-line notices; nil: discarded.
	Log io.Writer
	// Dial opens connections (nil: a net.Dialer); tests inject faults.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Transport carries the data plane: TransportTCP ("" too) or
	// TransportRDMA (a build with the rdma tag); every worker the same.
	Transport string
}

// WorkerError is a failed cluster run, blamed on one worker.
type WorkerError struct {
	Rank int
	Pid  int
	Host string
	Err  error
}

func (e *WorkerError) Error() string {
	return fmt.Sprintf("worker %d (pid %d, host %s): %v", e.Rank, e.Pid, e.Host, e.Err)
}
func (e *WorkerError) Unwrap() error { return e.Err }

// Peer is what the cluster knows of one worker.
type Peer struct {
	Pid  int    `json:"pid"`
	Host string `json:"host"`
	Data string `json:"data"` // its data-plane address
}

// nodeStats is a worker's account of one query.
type nodeStats struct {
	Sched        scheduler.Result `json:"sched"`
	IOBytes      int64            `json:"io"`
	PeakRetained int64            `json:"peak"`
	// CPUNs is the worker process's CPU time during its part of the
	// query (-1: unknown).
	CPUNs int64 `json:"cpu"`
}

// message is one control message. T is its type:
//
//	hello (worker -> 0: Rank, Pid, Host, Data), job (0 -> all: Job,
//	Peers), joined (all -> 0: data plane up), start (Q, Query), ready
//	(Q, Plan fingerprint), go (Q), deliver (Q, D), fin (Q, Pipe), gdone
//	(Q, Pipe), alldone (Q), trace (Q, Events, Origin), done (Q, Stats),
//	error (Err, Blame), abort (Err), hb, bye.
type message struct {
	T     string                  `json:"t"`
	Rank  int                     `json:"rank,omitempty"`
	Pid   int                     `json:"pid,omitempty"`
	Host  string                  `json:"host,omitempty"`
	Data  string                  `json:"data,omitempty"`
	Job   *Job                    `json:"job,omitempty"`
	Peers []Peer                  `json:"peers,omitempty"`
	Q     int                     `json:"q,omitempty"`
	Query string                  `json:"query,omitempty"`
	Plan  string                  `json:"plan,omitempty"`
	D     *scheduler.PipeDelivery `json:"d,omitempty"`
	Pipe  int32                   `json:"pipe,omitempty"`
	Err   string                  `json:"err,omitempty"`
	Blame *int                    `json:"blame,omitempty"`
	Stats *nodeStats              `json:"stats,omitempty"`
	// trace (Q, Events, Origin: the wall clock, Unix ns, at which the
	// events' times start); a worker's last ones precede its done.
	Events []traces.Event `json:"events,omitempty"`
	Origin int64          `json:"origin,omitempty"`
	// result is rank 0's own worker's result (never on the wire).
	result *engine.QueryResult
}

// link is a control channel to one peer: a TCP connection, or, between
// rank 0's coordinator and its own worker, a function call.
type link interface {
	send(m *message) error
}

type localLink func(m *message) error

func (f localLink) send(m *message) error { return f(m) }

// tcpLink is a control connection. Writes are whole messages under a
// lock, each within the timeout.
type tcpLink struct {
	conn net.Conn
	mu   sync.Mutex
	bw   *bufio.Writer
}

func newTCPLink(c net.Conn, timeout time.Duration) *tcpLink {
	return &tcpLink{conn: c, bw: bufio.NewWriterSize(&deadlineConn{c: c, timeout: timeout}, 16<<10)}
}

func (l *tcpLink) send(m *message) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return writeControl(l.bw, m)
}

// event is a control message that reached rank 0's coordinator, or the
// loss of a worker's connection (err).
type event struct {
	rank int
	m    *message
	err  error
	conn net.Conn // gather: the worker's connection
}

// session is one worker's run.
type session struct {
	o       Options
	timeout time.Duration
	dial    dialFunc
	ctx     context.Context
	cancel  context.CancelCauseFunc
	wg      sync.WaitGroup
	logMu   sync.Mutex

	pid  int
	host string
	dp   Exchange

	// worker side
	up   link          // to the coordinator
	ctrl chan *message // job, start, go, bye for the worker loop
	qmu  sync.Mutex
	cur  *query
	ds   *dataset.Dataset
	rdr  *storage.Reader
	job  Job
	// opTimes records this worker's operators (Job.OpTimes).
	opTimes *engine.OpTimes

	// coordinator side (rank 0)
	events chan event
	links  []link
	peers  []Peer
	conns  []net.Conn
	ending bool // after bye: lost connections are expected
	endMu  sync.Mutex
	// hellos are accepted connections not yet joined (closed at teardown).
	hellos map[net.Conn]bool
	// qStart is the wall clock (Unix ns) at which the running query went;
	// qTrace its tasks gathered so far.
	qStart int64
	qTrace []traces.Event
}

// query is the worker's state of the query it runs.
type query struct {
	q      int
	plan   *plan.Plan
	pol    scheduler.Policy
	b      *engine.Backend
	inbox  chan scheduler.NodeMsg
	ctx    context.Context
	cancel context.CancelFunc
	// rec records the tasks (Job.Trace), timed from origin (Unix ns).
	rec    *traces.Recorder
	origin int64

	// leases hold the memory of the frames received for the query; they
	// are released when it ends (its batches are read until then).
	leaseMu  sync.Mutex
	leases   []*recvLease
	released bool
}

// keep holds a received frame's memory until the query ends (released at
// once when it has ended).
func (qs *query) keep(l *recvLease) {
	qs.leaseMu.Lock()
	if !qs.released {
		qs.leases = append(qs.leases, l)
		l = nil
	}
	qs.leaseMu.Unlock()
	l.Release()
}

// release gives back the memory of every frame received for the query:
// called once its backend is closed and its result copied out.
func (qs *query) release() {
	qs.leaseMu.Lock()
	ls := qs.leases
	qs.leases, qs.released = nil, true
	qs.leaseMu.Unlock()
	for _, l := range ls {
		l.Release()
	}
}

// Run runs this worker's part of a cluster job and returns when the job
// is over: on rank 0 after every query's result went to OnResult (or at
// the first failure, a *WorkerError where one worker is to blame), on the
// others when rank 0 says goodbye or fails. Every goroutine and connection
// it made is gone when it returns.
func Run(ctx context.Context, o Options) error {
	if o.World < 1 || o.Rank < 0 || o.Rank >= o.World {
		return fmt.Errorf("cluster: rank %d outside a world of %d", o.Rank, o.World)
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.JoinTimeout <= 0 {
		o.JoinTimeout = 60 * time.Second
	}
	s := &session{o: o, timeout: o.Timeout, pid: os.Getpid(), ctrl: make(chan *message, 16)}
	s.host, _ = os.Hostname()
	s.dial = o.Dial
	if s.dial == nil {
		d := &net.Dialer{KeepAlive: o.Timeout}
		s.dial = d.DialContext
	}
	s.ctx, s.cancel = context.WithCancelCause(ctx)
	defer s.cancel(errors.New("cluster: run ended"))
	var err error
	if o.Rank == 0 {
		err = s.runCoordinator()
	} else {
		err = s.runWorker()
	}
	s.cancel(errors.New("cluster: run ended"))
	s.teardown()
	return err
}

func (s *session) logf(format string, args ...any) {
	if s.o.Log == nil {
		return
	}
	s.logMu.Lock()
	defer s.logMu.Unlock()
	fmt.Fprintf(s.o.Log, "[rank %d] "+format+"\n", append([]any{s.o.Rank}, args...)...)
}

// teardown closes every connection and waits for the goroutines.
func (s *session) teardown() {
	s.endMu.Lock()
	s.ending = true
	for c := range s.hellos {
		c.Close()
	}
	s.endMu.Unlock()
	for _, c := range s.conns {
		if c != nil {
			c.Close()
		}
	}
	if s.dp != nil {
		s.dp.close()
	}
	s.wg.Wait()
	s.qmu.Lock()
	if q := s.cur; q != nil {
		q.cancel()
		q.b.Close()
		q.release()
		s.cur = nil
	}
	s.qmu.Unlock()
	if s.rdr != nil {
		s.rdr.Close()
	}
}

func (s *session) isEnding() bool {
	s.endMu.Lock()
	defer s.endMu.Unlock()
	return s.ending
}

// listenData opens this worker's data listener on host (port chosen by the
// system) and its data plane.
func (s *session) listenData(host string) (string, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", fmt.Errorf("cluster: data listener on %s: %w", host, err)
	}
	s.dp, err = newExchange(s.o.Transport, s.o.Rank, s.o.World, ln, s.timeout, s.store, s.logf)
	return ln.Addr().String(), err
}

// heartbeat keeps a control connection alive until the session ends.
func (s *session) heartbeat(l link) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(s.timeout / 5)
		defer t.Stop()
		for {
			select {
			case <-s.ctx.Done():
				return
			case <-t.C:
				if l.send(&message{T: "hb"}) != nil {
					return
				}
			}
		}
	}()
}

// readLink reads control messages from c until it fails, calling handle
// for each (not for heartbeats) and lost once with the error.
func (s *session) readLink(c net.Conn, handle func(*message), lost func(error)) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		br := bufio.NewReaderSize(&deadlineConn{c: c, timeout: s.timeout}, 64<<10)
		for {
			m, err := readControl(br)
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					err = fmt.Errorf("silent for %v (no heartbeat): connection lost or process stopped", s.timeout)
				} else if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
					err = errors.New("connection closed (process exited or was killed)")
				}
				lost(err)
				return
			}
			if m.T != "hb" {
				handle(m)
			}
		}
	}()
}

// ---- worker side ----

// runWorker joins rank 0 and serves the job.
func (s *session) runWorker() error {
	deadline := time.Now().Add(s.o.JoinTimeout)
	c, err := dialRetry(s.ctx, s.dial, s.o.Addr, deadline)
	if err != nil {
		return fmt.Errorf("cluster: worker %d cannot reach rank 0 at %s: %w", s.o.Rank, s.o.Addr, err)
	}
	s.conns = append(s.conns, c)
	host, _, err := net.SplitHostPort(c.LocalAddr().String())
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	data, err := s.listenData(host)
	if err != nil {
		return err
	}
	l := newTCPLink(c, s.timeout)
	s.up = l
	if err := l.send(&message{T: "hello", Rank: s.o.Rank, Pid: s.pid, Host: s.host, Data: data}); err != nil {
		return fmt.Errorf("cluster: worker %d: hello to rank 0: %w", s.o.Rank, err)
	}
	s.heartbeat(l)
	s.readLink(c, s.dispatch, func(err error) {
		if !s.isEnding() {
			s.cancel(fmt.Errorf("cluster: worker %d lost rank 0 (%s): %w", s.o.Rank, s.o.Addr, err))
		}
	})
	return s.work()
}

// dispatch handles a control message from the coordinator.
func (s *session) dispatch(m *message) {
	switch m.T {
	case "job", "start", "go", "bye":
		select {
		case s.ctrl <- m:
		case <-s.ctx.Done():
		}
	case "deliver", "gdone", "alldone":
		var nm scheduler.NodeMsg
		switch m.T {
		case "deliver":
			if m.D == nil {
				s.cancel(fmt.Errorf("cluster: worker %d: delivery without data from rank 0", s.o.Rank))
				return
			}
			nm = scheduler.NodeMsg{Kind: scheduler.MsgDeliver, Delivery: *m.D}
		case "gdone":
			nm = scheduler.NodeMsg{Kind: scheduler.MsgGlobalDone, Pipe: m.Pipe}
		default:
			nm = scheduler.NodeMsg{Kind: scheduler.MsgAllDone}
		}
		s.qmu.Lock()
		q := s.cur
		s.qmu.Unlock()
		if q == nil || q.q != m.Q {
			// A message of a query this worker already left (alldone
			// after RunNode returned): nothing waits for it.
			return
		}
		select {
		case q.inbox <- nm:
		case <-q.ctx.Done():
		}
	case "abort":
		s.cancel(fmt.Errorf("cluster: aborted by rank 0: %s", m.Err))
	default:
		s.cancel(fmt.Errorf("cluster: worker %d: unexpected control message %q", s.o.Rank, m.T))
	}
}

// work is the worker loop (every rank, rank 0's in a goroutine): set up the
// job, then build, run and report each query as rank 0 says.
func (s *session) work() error {
	for {
		var m *message
		select {
		case m = <-s.ctrl:
		case <-s.ctx.Done():
			return context.Cause(s.ctx)
		}
		var err error
		switch m.T {
		case "job":
			err = s.setup(m)
			if err == nil {
				err = s.up.send(&message{T: "joined"})
			}
		case "start":
			err = s.startQuery(m.Q, m.Query)
		case "go":
			err = s.runQuery(m.Q)
		case "bye":
			return s.saveOpTimes()
		}
		if err != nil {
			if s.ctx.Err() != nil {
				// Aborted: the cause is the error, not what it broke.
				return context.Cause(s.ctx)
			}
			em := &message{T: "error", Err: err.Error()}
			var pe *PeerError
			if errors.As(err, &pe) {
				r := pe.Rank
				em.Blame = &r
			}
			s.up.send(em)
			return fmt.Errorf("cluster: worker %d: %w", s.o.Rank, err)
		}
	}
}

// setup opens the dataset and the data connections of the job.
func (s *session) setup(m *message) error {
	if m.Job == nil || len(m.Peers) != s.o.World {
		return fmt.Errorf("malformed job from rank 0")
	}
	s.job = *m.Job
	if s.job.OpTimes != "" {
		s.opTimes = &engine.OpTimes{}
	}
	ds, err := dataset.Open(s.job.Data)
	if err != nil {
		return err
	}
	s.ds = ds
	engine.FitHeapLimit(ds)
	engine.ShareHeapLimit(s.o.Local)
	r, err := engine.OpenSession(s.ctx, ds, s.queryOptions())
	if err != nil {
		return err
	}
	s.rdr = r
	addrs := make([]string, len(m.Peers))
	for i, p := range m.Peers {
		addrs[i] = p.Data
	}
	return s.dp.connect(s.ctx, addrs, s.dial, time.Now().Add(s.o.JoinTimeout))
}

// saveOpTimes writes this worker's operator times (Job.OpTimes), if the
// job asked for them.
func (s *session) saveOpTimes() error {
	if s.opTimes == nil {
		return nil
	}
	path := RankPath(s.job.OpTimes, s.o.Rank)
	if err := atomicfile.Write(path, s.opTimes.WriteCSV); err != nil {
		return fmt.Errorf("cluster: worker %d: operator times: %w", s.o.Rank, err)
	}
	s.logf("operator times: %s (%d operator runs)", path, len(s.opTimes.Rows()))
	return nil
}

func (s *session) queryOptions() engine.QueryOptions {
	var log io.Writer
	if s.o.Log != nil {
		log = logWriter{s}
	}
	return engine.QueryOptions{Buffered: s.job.Buffered, IO: s.job.IO, Log: log}
}

type logWriter struct{ s *session }

func (w logWriter) Write(p []byte) (int, error) {
	w.s.logf("%s", string(trimNL(p)))
	return len(p), nil
}

func trimNL(p []byte) []byte {
	for len(p) > 0 && p[len(p)-1] == '\n' {
		p = p[:len(p)-1]
	}
	return p
}

// startQuery builds query q's plan and backend, so that data of q can
// arrive, and tells rank 0 the plan's fingerprint.
func (s *session) startQuery(q int, name string) error {
	if s.opTimes != nil {
		s.opTimes.SetRun(q - 1) // the query's place in the job, as query --op-times numbers it
	}
	p, err := engine.BuildQuery(s.ds, s.o.Catalog, name)
	if err != nil {
		return err
	}
	pol, err := scheduler.NewPolicy(s.job.Policy, s.job.Set)
	if err != nil {
		return err
	}
	origin := time.Now().UnixNano() // the backend's clock starts in NewBackend
	b, err := engine.NewBackend(s.ds, p, engine.BackendOptions{Devices: s.job.Devices, Mem: s.job.Mem,
		Buffered: s.job.Buffered, IO: s.job.IO, Reader: s.rdr, Log: s.queryOptions().Log, NoVerify: s.job.NoVerify,
		Node: s.o.Rank, Nodes: s.o.World, Remote: remote{s, q}, OpTimes: s.opTimes})
	if err != nil {
		return err
	}
	qs := &query{q: q, plan: p, pol: pol, b: b, inbox: make(chan scheduler.NodeMsg, 1<<14), origin: origin}
	if s.job.Trace {
		qs.rec = &traces.Recorder{Run: name + "/" + pol.Name()}
	}
	qs.ctx, qs.cancel = context.WithCancel(s.ctx)
	s.qmu.Lock()
	if s.cur != nil {
		s.qmu.Unlock()
		qs.cancel()
		b.Close()
		return fmt.Errorf("query %d started while query %d runs", q, s.cur.q)
	}
	s.cur = qs
	s.qmu.Unlock()
	return s.up.send(&message{T: "ready", Q: q, Plan: fingerprint(p), Pipe: int32(len(p.Pipelines))})
}

// runQuery runs this node's part of the started query and reports it.
func (s *session) runQuery(q int) error {
	s.qmu.Lock()
	qs := s.cur
	s.qmu.Unlock()
	if qs == nil || qs.q != q {
		return fmt.Errorf("go for query %d, which was not started", q)
	}
	var sink scheduler.TraceSink
	if qs.rec != nil {
		sink = qs.rec
	}
	cpu0 := engine.ProcessCPUNs()
	start := time.Now()
	res, err := scheduler.RunNode(qs.ctx, qs.plan, qs.pol, qs.b, s.o.Rank, nodeNet{s, qs}, sink)
	wall := time.Since(start)
	cpuNs := engine.ProcessCPUSince(cpu0)
	if s.opTimes != nil && err == nil {
		s.opTimes.AddQuery(qs.plan.Name, wall, cpuNs)
	}
	// After the backend is closed and the result copied out of it.
	defer qs.release()
	s.qmu.Lock()
	s.cur = nil
	s.qmu.Unlock()
	qs.cancel()
	cerr := qs.b.Close()
	if err != nil {
		if errors.Is(err, scheduler.ErrStuck) {
			return fmt.Errorf("query %s does not fit the memory budget of %d MiB: %w", qs.plan.Name, s.job.Mem>>20, err)
		}
		return fmt.Errorf("query %s: %w", qs.plan.Name, err)
	}
	if cerr != nil {
		return fmt.Errorf("query %s: %w", qs.plan.Name, cerr)
	}
	if qs.rec != nil {
		// In pieces well under the control plane's message limit.
		const piece = 20000
		ev := qs.rec.Events
		for len(ev) > 0 {
			n := min(len(ev), piece)
			if err := s.up.send(&message{T: "trace", Q: q, Events: ev[:n], Origin: qs.origin}); err != nil {
				return err
			}
			ev = ev[n:]
		}
	}
	m := &message{T: "done", Q: q, Stats: &nodeStats{Sched: res, IOBytes: qs.b.IOBytes(), PeakRetained: qs.b.PeakRetained(), CPUNs: cpuNs}}
	if s.o.Rank == 0 {
		m.result = engine.NewQueryResult(qs.plan, qs.pol.Name(), qs.b, res, wall)
		// The result may be received columns, whose memory is recycled
		// when this returns.
		m.result.Batch = m.result.Batch.Clone()
	}
	return s.up.send(m)
}

// store puts batches another worker sent into the running query's backend.
func (s *session) store(q, pipe, dev int, batches []*cpu.Batch, lease *recvLease) error {
	s.qmu.Lock()
	qs := s.cur
	s.qmu.Unlock()
	if qs == nil || qs.q != q {
		return fmt.Errorf("worker %d is not running query %d", s.o.Rank, q)
	}
	if err := qs.b.Receive(pipe, dev, batches); err != nil {
		return err
	}
	qs.keep(lease)
	return nil
}

// remote is the engine's transport for query q.
type remote struct {
	s *session
	q int
}

func (r remote) Send(ctx context.Context, node, pipe, dev int, batches []*cpu.Batch) error {
	return r.s.dp.send(ctx, r.q, node, pipe, dev, batches)
}

// nodeNet is RunNode's link to the coordinator for one query.
type nodeNet struct {
	s  *session
	qs *query
}

func (n nodeNet) Deliver(d scheduler.PipeDelivery) error {
	return n.s.up.send(&message{T: "deliver", Q: n.qs.q, D: &d})
}
func (n nodeNet) Finished(p int32) error {
	return n.s.up.send(&message{T: "fin", Q: n.qs.q, Pipe: p})
}
func (n nodeNet) Inbox() <-chan scheduler.NodeMsg { return n.qs.inbox }

// fingerprint identifies a plan well enough to catch workers that built
// different plans (different datasets under the same path, or a query
// planned from different SQL text or options): its pipelines, the work of
// every operator (plan.Op.Fingerprint) and its tables' sizes.
func fingerprint(p *plan.Plan) string {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s|%d|", p.Name, len(p.Pipelines))
	for i := range p.Pipelines {
		pl := &p.Pipelines[i]
		fmt.Fprintf(h, "%s:%d:%d:%d|", pl.Name, len(pl.Ops), pl.Source.Kind, pl.Source.Table)
		for k := range pl.Ops {
			fmt.Fprintf(h, "%s,", pl.Ops[k].Fingerprint())
		}
	}
	for i := range p.Tables {
		t := &p.Tables[i]
		var rows int64
		for c := range t.Chunks {
			rows += t.Chunks[c].Rows
		}
		fmt.Fprintf(h, "%s:%d:%d|", t.Name, len(t.Chunks), rows)
	}
	return strconv.FormatUint(h.Sum64(), 16)
}

// ---- coordinator side (rank 0) ----

// runCoordinator is rank 0: it gathers the workers, runs its own worker
// loop in a goroutine, and coordinates each query.
func (s *session) runCoordinator() error {
	W := s.o.World
	job := s.o.Job
	if len(job.Queries) == 0 {
		return errors.New("cluster: the job names no query")
	}
	if job.Devices <= 0 {
		job.Devices = runtime.GOMAXPROCS(0)
	}
	if job.Mem <= 0 {
		job.Mem = engine.DefaultMem
	}
	if job.Policy == "" {
		job.Policy = "overlap"
	}
	if _, err := scheduler.NewPolicy(job.Policy, job.Set); err != nil {
		return err
	}
	ln := s.o.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", s.o.Addr); err != nil {
			return fmt.Errorf("cluster: rank 0 cannot listen on %s: %w", s.o.Addr, err)
		}
	}
	s.events = make(chan event, 1<<14)
	s.links = make([]link, W)
	s.peers = make([]Peer, W)
	s.conns = make([]net.Conn, W)
	s.hellos = map[net.Conn]bool{}
	host, _, err := net.SplitHostPort(ln.Addr().String())
	if err != nil {
		ln.Close()
		return fmt.Errorf("cluster: %w", err)
	}
	data, err := s.listenData(host)
	if err != nil {
		ln.Close()
		return err
	}
	s.peers[0] = Peer{Pid: s.pid, Host: s.host, Data: data}
	// Rank 0's own worker: its messages go straight to the coordinator,
	// the coordinator's straight to it.
	s.up = localLink(func(m *message) error {
		select {
		case s.events <- event{rank: 0, m: m}:
			return nil
		case <-s.ctx.Done():
			return context.Cause(s.ctx)
		}
	})
	s.links[0] = localLink(func(m *message) error { s.dispatch(m); return nil })
	if err := s.gather(ln); err != nil {
		return err
	}
	workErr := make(chan error, 1)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		workErr <- s.work()
	}()
	err = s.coordinate(job)
	if err != nil {
		for r := 1; r < W; r++ {
			if s.links[r] != nil {
				s.links[r].send(&message{T: "abort", Err: err.Error()})
			}
		}
		s.cancel(err)
		<-workErr
		return err
	}
	for r := 0; r < W; r++ {
		s.links[r].send(&message{T: "bye"})
	}
	err = <-workErr
	// Close only once the workers did (or after the timeout): closing a
	// socket with unread data resets it, and a worker could lose its bye.
	t := time.NewTimer(s.timeout)
	defer t.Stop()
	for left := W - 1; left > 0; {
		select {
		case ev := <-s.events:
			if ev.err != nil {
				left--
			}
		case <-t.C:
			return err
		}
	}
	return err
}

// gather accepts every other worker's control connection (hello first).
func (s *session) gather(ln net.Listener) error {
	W := s.o.World
	joined := make(chan event, W)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if tc, ok := c.(*net.TCPConn); ok {
				tc.SetNoDelay(true)
			}
			s.endMu.Lock()
			if s.ending {
				s.endMu.Unlock()
				c.Close()
				return
			}
			s.hellos[c] = true
			s.endMu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				c.SetReadDeadline(time.Now().Add(s.timeout))
				// The hello is unbuffered-read so that nothing after it is
				// lost to a reader of this goroutine's own.
				m, err := readControl(c)
				c.SetReadDeadline(time.Time{})
				if err != nil || m.T != "hello" {
					s.logf("ignoring a connection from %s: not a gostachio worker (%v)", c.RemoteAddr(), err)
					c.Close()
					return
				}
				select {
				case joined <- event{rank: m.Rank, m: m, conn: c}:
				case <-s.ctx.Done():
				}
			}()
		}
	}()
	defer ln.Close()
	t := time.NewTimer(s.o.JoinTimeout)
	defer t.Stop()
	for n := 1; n < W; {
		select {
		case ev := <-joined:
			r, m, c := ev.rank, ev.m, ev.conn
			if r <= 0 || r >= W || s.links[r] != nil {
				return fmt.Errorf("cluster: a worker at %s claims rank %d (world %d, or taken)", m.Host, r, W)
			}
			s.endMu.Lock()
			delete(s.hellos, c)
			s.conns[r] = c
			s.endMu.Unlock()
			s.peers[r] = Peer{Pid: m.Pid, Host: m.Host, Data: m.Data}
			l := newTCPLink(c, s.timeout)
			s.links[r] = l
			s.heartbeat(l)
			s.readLink(c, func(m *message) { s.post(event{rank: r, m: m}) },
				func(err error) { s.post(event{rank: r, err: err}) })
			n++
		case <-t.C:
			var missing []int
			for r := 1; r < W; r++ {
				if s.links[r] == nil {
					missing = append(missing, r)
				}
			}
			return fmt.Errorf("cluster: workers %v did not join rank 0 at %s within %v", missing, ln.Addr(), s.o.JoinTimeout)
		case <-s.ctx.Done():
			return context.Cause(s.ctx)
		}
	}
	return nil
}

func (s *session) post(ev event) {
	select {
	case s.events <- ev:
	case <-s.ctx.Done():
	}
}

// blame turns a worker's failure into a *WorkerError.
// failure decides whom a failure is blamed on. One dead worker makes
// others fail too (their exchanges with it break, then theirs with them),
// and the first report to arrive is often such a consequence: so the
// coordinator waits a moment for the direct evidence — a worker whose
// control connection itself was lost (it was killed, or its link went
// down) — and blames that worker if one shows up, else the first report.
// A worker that reported an error and then exited is no such evidence:
// it left because of the failure (blaming its exit named a healthy
// worker when a killed one's loss arrived after it).
func (s *session) failure(first event) error {
	best := first
	reported := map[int]bool{} // workers that sent their own error report
	if first.err == nil {
		reported[first.rank] = true
	}
	grace := time.NewTimer(min(s.timeout/4, 500*time.Millisecond))
	defer grace.Stop()
wait:
	for best.err == nil {
		select {
		case ev := <-s.events:
			switch {
			case ev.err != nil:
				if reported[ev.rank] {
					// A worker that reported an error and then exited
					// left as a consequence: its lost connection is no
					// evidence (a killed worker's report never comes).
					continue
				}
				best = ev
			case ev.m != nil && ev.m.T == "error":
				reported[ev.rank] = true
			}
		case <-grace.C:
			break wait
		case <-s.ctx.Done():
			break wait
		}
	}
	return s.blameEvent(best)
}

// blameEvent is the error a failure event reports, naming the worker.
func (s *session) blameEvent(ev event) error {
	if ev.err != nil {
		return s.blame(ev.rank, ev.err)
	}
	m := ev.m
	if m.Blame != nil && *m.Blame >= 0 && *m.Blame < s.o.World && *m.Blame != ev.rank {
		return s.blame(*m.Blame, fmt.Errorf("unreachable from worker %d: %s", ev.rank, m.Err))
	}
	return s.blame(ev.rank, errors.New(m.Err))
}

func (s *session) blame(r int, err error) error {
	p := s.peers[r]
	return &WorkerError{Rank: r, Pid: p.Pid, Host: p.Host, Err: err}
}

// next returns the next control message for the coordinator. Deliveries
// and finished pipelines of the running query are handled here; a lost
// worker or a worker's error ends the run.
func (s *session) next(coord **scheduler.Coordinator, q int) (event, error) {
	for {
		var ev event
		select {
		case ev = <-s.events:
		case <-s.ctx.Done():
			return ev, context.Cause(s.ctx)
		}
		if ev.err != nil {
			return ev, s.failure(ev)
		}
		m := ev.m
		switch m.T {
		case "error":
			return ev, s.failure(ev)
		case "deliver":
			if *coord == nil || m.Q != q || m.D == nil || m.D.Node < 0 || int(m.D.Node) >= s.o.World || int(m.D.Node) == ev.rank {
				return ev, s.blame(ev.rank, fmt.Errorf("protocol: unexpected delivery %+v for query %d", m.D, m.Q))
			}
			if err := s.links[m.D.Node].send(m); err != nil {
				return ev, s.blame(int(m.D.Node), err)
			}
		case "trace":
			if *coord == nil || m.Q != q {
				return ev, s.blame(ev.rank, fmt.Errorf("protocol: unexpected trace of query %d", m.Q))
			}
			shift := m.Origin - s.qStart
			for _, e := range m.Events {
				e.Node = int32(ev.rank)
				e.Start = max(e.Start+shift, 0)
				e.End = max(e.End+shift, e.Start)
				s.qTrace = append(s.qTrace, e)
			}
		case "fin":
			if *coord == nil || m.Q != q {
				return ev, s.blame(ev.rank, fmt.Errorf("protocol: unexpected finished pipeline of query %d", m.Q))
			}
			global, all, err := (*coord).Finished(ev.rank, m.Pipe)
			if err != nil {
				return ev, s.blame(ev.rank, err)
			}
			if global {
				if err := s.broadcast(&message{T: "gdone", Q: q, Pipe: m.Pipe}); err != nil {
					return ev, err
				}
			}
			if all {
				if err := s.broadcast(&message{T: "alldone", Q: q}); err != nil {
					return ev, err
				}
			}
		default:
			return ev, nil
		}
	}
}

func (s *session) broadcast(m *message) error {
	for r, l := range s.links {
		if err := l.send(m); err != nil {
			return s.blame(r, err)
		}
	}
	return nil
}

// await collects message type t of query q from every worker.
func (s *session) await(t string, q int, coord **scheduler.Coordinator, each func(r int, m *message) error) error {
	got := make([]bool, s.o.World)
	for n := 0; n < s.o.World; {
		ev, err := s.next(coord, q)
		if err != nil {
			return err
		}
		if ev.m.T != t || ev.m.Q != q || got[ev.rank] {
			return s.blame(ev.rank, fmt.Errorf("protocol: got %q (query %d), want %q of query %d", ev.m.T, ev.m.Q, t, q))
		}
		got[ev.rank] = true
		n++
		if each != nil {
			if err := each(ev.rank, ev.m); err != nil {
				return err
			}
		}
	}
	return nil
}

// coordinate distributes the job and runs its queries.
func (s *session) coordinate(job Job) error {
	var coord *scheduler.Coordinator
	if err := s.broadcast(&message{T: "job", Job: &job, Peers: s.peers}); err != nil {
		return err
	}
	if err := s.await("joined", 0, &coord, nil); err != nil {
		return err
	}
	for i, name := range job.Queries {
		q := i + 1
		if err := s.broadcast(&message{T: "start", Q: q, Query: name}); err != nil {
			return err
		}
		prints := make([]string, s.o.World)
		pipes := make([]int32, s.o.World)
		err := s.await("ready", q, &coord, func(r int, m *message) error {
			prints[r], pipes[r] = m.Plan, m.Pipe
			return nil
		})
		if err != nil {
			return err
		}
		for r := range prints {
			if prints[r] != prints[0] || pipes[r] != pipes[0] {
				return s.blame(r, fmt.Errorf("built a different plan for %s than rank 0 (is %s the same dataset on every host?)", name, job.Data))
			}
		}
		coord = scheduler.NewCoordinator(int(pipes[0]), s.o.World)
		start := time.Now()
		s.qStart, s.qTrace = start.UnixNano(), nil
		if err := s.broadcast(&message{T: "go", Q: q}); err != nil {
			return err
		}
		var result *engine.QueryResult
		var total nodeStats
		err = s.await("done", q, &coord, func(r int, m *message) error {
			if m.Stats == nil {
				return s.blame(r, errors.New("protocol: done without statistics"))
			}
			st := m.Stats.Sched
			total.Sched.Tasks += st.Tasks
			for k := range st.ByKind {
				total.Sched.ByKind[k] += st.ByKind[k]
				total.Sched.BytesByKind[k] += st.BytesByKind[k]
			}
			total.Sched.Makespan = max(total.Sched.Makespan, st.Makespan)
			total.Sched.PeakPinned = max(total.Sched.PeakPinned, st.PeakPinned)
			total.Sched.PeakDevice = max(total.Sched.PeakDevice, st.PeakDevice)
			total.Sched.ResultRows += st.ResultRows
			total.Sched.ResultBytes += st.ResultBytes
			total.IOBytes += m.Stats.IOBytes
			total.PeakRetained = max(total.PeakRetained, m.Stats.PeakRetained)
			if total.CPUNs >= 0 && m.Stats.CPUNs >= 0 {
				total.CPUNs += m.Stats.CPUNs
			} else {
				total.CPUNs = -1
			}
			if r == 0 {
				result = m.result
			}
			return nil
		})
		if err != nil {
			return err
		}
		coord = nil
		if result == nil {
			return s.blame(0, errors.New("no result"))
		}
		result.Wall = time.Since(start)
		if job.Trace && s.o.OnTrace != nil {
			err := s.o.OnTrace(name, s.qTrace)
			s.qTrace = nil
			if err != nil {
				return err
			}
		}
		result.Sched = total.Sched
		result.IOBytes, result.PeakRetained, result.CPUNs = total.IOBytes, total.PeakRetained, total.CPUNs
		if s.o.OnResult != nil {
			if err := s.o.OnResult(result); err != nil {
				return err
			}
		}
	}
	return nil
}
