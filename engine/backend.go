package engine

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"gostachio/dataset"
	"gostachio/engine/gpu"
	"gostachio/engine/storage"
	"gostachio/engine/storage/alloc"
	"gostachio/internal/units"
	"gostachio/kernels/cpu"
	"gostachio/plan"
	"gostachio/scheduler"
)

// Backend executes scheduler tasks for real on this machine: reads through
// the storage reader (io_uring, O_DIRECT), copies and kernels on the CPU
// (each device is a worker group; kernels of all devices share a pool of
// GOMAXPROCS slots), exchanges between devices in memory. It implements
// scheduler.Backend for one run of one plan: make a new one per run.
//
// Concurrency: Start is called from the scheduler's goroutine only; work
// runs on goroutines that report back through the completion queue, which
// Next drains; Start may be called while Next blocks (scheduler.RunNode).
//
// In a cluster (BackendOptions.Nodes > 1) a backend runs the tasks of one
// node: its sends to other nodes go through BackendOptions.Remote, and
// what other nodes send here arrives through Receive. Data of the run (unit buffers, per-device outputs, partial
// aggregate states, hash tables) lives in a runData guarded per pipeline.
type Backend struct {
	ds     *dataset.Dataset
	plan   *plan.Plan
	topo   scheduler.Topology
	node   int32
	clock  *storage.MonotonicClock
	reader *storage.Reader
	// ownReader: the backend made the reader and closes it.
	ownReader bool
	alloc     alloc.Allocator
	slots     chan struct{} // CPU slots for copies, kernels and merges
	data      *runData

	mu      sync.Mutex
	queue   []scheduler.Completion
	notify  chan struct{}
	started int // tasks started and not yet returned by Next
	reads   map[uint64]pendingRead
	readTag uint64
	readErr error
	pumping bool
	ctx     context.Context
	cancel  context.CancelFunc
}

var (
	_ scheduler.Backend        = (*Backend)(nil)
	_ scheduler.OutputReleaser = (*Backend)(nil)
)

// ReleaseOutput implements scheduler.OutputReleaser: pipeline p's output
// (exchange deliveries, hash tables, retained results) is dropped once no
// pipeline reads it, so the memory budget counts live data only.
func (b *Backend) ReleaseOutput(node, p int32) {
	if int(node) == b.data.node {
		b.data.releaseOutput(p)
	}
}

// BackendOptions configure a Backend.
type BackendOptions struct {
	// Devices is the number of worker groups (scheduler devices); 0: GOMAXPROCS.
	Devices int
	// Mem is the memory budget in bytes: a quarter for I/O buffers (the
	// scheduler's pinned budget), the rest split over the devices; the
	// engine also fails a query whose retained data exceeds it.
	Mem int64
	// Buffered reads through the page cache instead of O_DIRECT.
	Buffered bool
	// IO picks the storage backend (storage.IOAuto, IOUring, IOPread).
	IO string
	// Allocator provides I/O buffers (tests pass a checked one); nil: Go
	// heap buffers (alloc.Heap), which the kernels read in place.
	Allocator alloc.Allocator
	// Log receives one-line notices (storage fallbacks).
	Log interface{ Write([]byte) (int, error) }
	// Reader, when set, is used instead of a reader of the backend's own
	// (and is not closed with it): a session reuses one reader, whose
	// io_uring setup and buffer registration cost a few hundred ms once.
	Reader *storage.Reader
	// Nodes is the number of nodes of the cluster (0 or 1: this process
	// alone) and Node the one this backend runs (0 <= Node < Nodes). Every
	// node has Devices devices; exchanges span all Nodes x Devices workers.
	Node, Nodes int
	// Remote moves exchange data to other nodes; required when Nodes > 1.
	Remote Remote
	// GPU, when set, runs the scan pipelines on this GPU (engine/gpu):
	// h2d tasks upload a unit's columns, kernel tasks run its filters,
	// projections and partial aggregate there; the aggregate states, and
	// the pipelines that read them, stay with the host. A plan with a scan
	// pipeline the GPU path cannot run is refused, naming the operator,
	// unless GPUHybrid runs such pipelines on the host (PlaceGPU).
	GPU       *gpu.Device
	GPUHybrid bool
	// Rates is what the caller knows of the machine's resources (from a
	// calibration profile), handed to policies in the topology; zero
	// (the default): unknown, and rate-aware policies go by the rates
	// they observe.
	Rates [scheduler.NumResourceKinds]scheduler.Rate
	// NoVerify skips checking every read buffer against the CRC-32C its
	// dataset's manifest recorded (datasets without checksums are never
	// checked). With the check, a file changed behind the manifest fails
	// the query naming the file, chunk and column, where it could
	// otherwise give a wrong answer that looks right.
	NoVerify bool
	// OpTimes, when set, records the time and sizes of every operator the
	// host runs (OpTimes); nil: none are timed.
	OpTimes *OpTimes
}

// Remote moves exchange data to the other nodes of a cluster (package
// engine/cluster implements it over TCP).
type Remote interface {
	// Send hands batches of pipeline pipe to device dev of node node and
	// returns once that node's backend has stored them (Backend.Receive),
	// or with an error naming the node. It is called concurrently, with at
	// least one batch; the batches are read-only (they may be shared).
	Send(ctx context.Context, node, pipe, dev int, batches []*cpu.Batch) error
}

// MinMem is the least memory budget per device: a quarter of it for I/O
// buffers must hold at least one aligned read of a column.
const MinMem = 1 << 20

// NewBackend prepares a run of p over dataset ds.
func NewBackend(ds *dataset.Dataset, p *plan.Plan, opts BackendOptions) (*Backend, error) {
	if opts.Devices <= 0 {
		opts.Devices = runtime.GOMAXPROCS(0)
	}
	if opts.Mem < MinMem*int64(max(opts.Devices, 1)) {
		return nil, fmt.Errorf("engine: memory budget %s (--mem) below the %s per device a query needs at the least (%d devices)",
			units.FormatBytes(opts.Mem), units.FormatBytes(MinMem), max(opts.Devices, 1))
	}
	if opts.Nodes <= 0 {
		opts.Nodes = 1
	}
	if opts.Node < 0 || opts.Node >= opts.Nodes {
		return nil, fmt.Errorf("engine: node %d outside a %d-node cluster", opts.Node, opts.Nodes)
	}
	if opts.Nodes > 1 && opts.Remote == nil {
		return nil, fmt.Errorf("engine: a %d-node cluster needs a transport for its exchanges (BackendOptions.Remote)", opts.Nodes)
	}
	if err := checkExecutable(p); err != nil {
		return nil, err
	}
	pinned := opts.Mem / 4
	b := &Backend{ds: ds, plan: p, clock: storage.NewMonotonicClock(), node: int32(opts.Node),
		topo: scheduler.Topology{Nodes: opts.Nodes, Devices: opts.Devices, SSDs: 1, NICs: 1,
			DeviceMem: (opts.Mem - pinned) / int64(opts.Devices), PinnedMem: pinned, Rates: opts.Rates},
		slots: make(chan struct{}, runtime.GOMAXPROCS(0)), notify: make(chan struct{}, 1),
		reads: map[uint64]pendingRead{}}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	if opts.Reader != nil {
		b.reader = opts.Reader
	} else {
		r, err := NewReader(opts.IO, opts.Buffered, opts.Allocator, opts.Log)
		if err != nil {
			return nil, err
		}
		b.reader, b.ownReader = r, true
	}
	b.alloc = b.reader.Allocator()
	b.data = newRunData(ds, p, opts.Devices, opts.Mem)
	b.data.verify = !opts.NoVerify && ds.Checksummed()
	b.data.opTimes = opts.OpTimes
	if opts.GPU != nil {
		if err := b.data.useGPU(opts.GPU, opts.GPUHybrid); err != nil {
			b.Close()
			return nil, err
		}
	}
	b.data.node, b.data.nodes, b.data.remote = opts.Node, opts.Nodes, opts.Remote
	if opts.Nodes > 1 {
		b.data.resizePending()
	}
	return b, nil
}

// Close releases the reader and every buffer the run still holds.
func (b *Backend) Close() error {
	b.cancel()
	b.data.releaseAll()
	b.data.closeGPU()
	if b.ownReader {
		return b.reader.Close()
	}
	return nil
}

// NewReader makes a storage reader for engine runs (see BackendOptions).
func NewReader(io string, buffered bool, a alloc.Allocator, log interface{ Write([]byte) (int, error) }) (*storage.Reader, error) {
	sopts := storage.DefaultOptions()
	if io != "" {
		sopts.IO = io
	}
	sopts.Buffered = buffered
	if a == nil {
		// Heap buffers let the copy to the "device" be a view (decodeUnit).
		a = alloc.NewHeap()
	}
	sopts.Allocator = a
	if log != nil {
		sopts.Log = log
	}
	r, err := storage.NewReader(sopts)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	return r, nil
}

// pendingRead is a submitted read: its task and when it was submitted.
type pendingRead struct {
	task   *scheduler.Task
	submit scheduler.Time
}

// Topology implements scheduler.Backend.
func (b *Backend) Topology() scheduler.Topology { return b.topo }

// Now implements scheduler.Backend: time since the backend was made.
func (b *Backend) Now() scheduler.Time { return scheduler.Time(b.clock.Now()) }

// Result is the query result once the run's result merge completed (nil
// before, or for a plan whose result is empty).
func (b *Backend) Result() *cpu.Batch { return b.data.result }

// IOBytes is what the storage devices transferred during the run.
func (b *Backend) IOBytes() int64 { return b.data.ioBytes.Load() }

// PeakRetained is the most data the run held at once outside I/O buffers.
func (b *Backend) PeakRetained() int64 { return b.data.peak.Load() }

// Start implements scheduler.Backend.
func (b *Backend) Start(t *scheduler.Task) error {
	if t.Node != b.node {
		return fmt.Errorf("engine: node %d backend asked to run %s task %d of node %d", b.node, t.Kind, t.ID, t.Node)
	}
	b.mu.Lock()
	b.started++
	b.mu.Unlock()
	switch t.Kind {
	case scheduler.TaskRead:
		return b.startRead(t)
	case scheduler.TaskSync:
		// The CPU has no device queue to drain: the round trip is free.
		now := b.Now()
		b.complete(scheduler.Completion{Task: t, Start: now})
		return nil
	case scheduler.TaskSend:
		if t.Peer.Node != b.node {
			// A send to another node waits for the network, not a core:
			// it holds no CPU slot.
			go b.runRemoteSend(t)
			return nil
		}
		go b.runCPU(t)
		return nil
	case scheduler.TaskH2D, scheduler.TaskKernel, scheduler.TaskD2H, scheduler.TaskMerge:
		go b.runCPU(t)
		return nil
	}
	return fmt.Errorf("engine: task kind %s not supported by the CPU engine", t.Kind)
}

// runCPU runs one task that occupies a CPU slot.
func (b *Backend) runCPU(t *scheduler.Task) {
	select {
	case b.slots <- struct{}{}:
	case <-b.ctx.Done():
		b.complete(scheduler.Completion{Task: t, Start: b.Now(), Err: b.ctx.Err()})
		return
	}
	c := scheduler.Completion{Task: t, Start: b.Now()}
	var err error
	switch t.Kind {
	case scheduler.TaskH2D:
		err = b.data.copyIn(t)
	case scheduler.TaskKernel:
		c.OutRows, c.OutBytes, c.PartBytes, err = b.data.kernel(t)
	case scheduler.TaskD2H:
		err = b.data.copyOut(t)
	case scheduler.TaskSend:
		err = b.data.send(b.ctx, t)
	case scheduler.TaskMerge:
		c.OutRows, c.OutBytes, err = b.data.merge(t)
	}
	<-b.slots
	c.Err = err
	b.complete(c)
}

// runRemoteSend runs a send to another node (see Start).
func (b *Backend) runRemoteSend(t *scheduler.Task) {
	c := scheduler.Completion{Task: t, Start: b.Now()}
	c.Err = b.data.send(b.ctx, t)
	b.complete(c)
}

// Receive stores exchange batches of pipeline pipe that another node sent
// to device dev of this node: they join what the pipeline left on dev, as
// a local send's do. The cluster transport calls it, concurrently with the
// run; the backend owns the batches from then on.
func (b *Backend) Receive(pipe, dev int, batches []*cpu.Batch) error {
	return b.data.receive(pipe, dev, batches)
}

// startRead submits a data or metadata read to the storage reader.
func (b *Backend) startRead(t *scheduler.Task) error {
	path, err := b.data.filePath(t)
	if err != nil {
		return err
	}
	length := t.Bytes
	if t.Meta {
		// A metadata read fetches up to MetaBytes of the chunk's header:
		// never past the end of a small file.
		size, err := b.data.fileSize(path)
		if err != nil {
			return err
		}
		length = min(length, size-t.Offset)
		if length <= 0 {
			b.complete(scheduler.Completion{Task: t, Start: b.Now()})
			return nil
		}
	}
	b.mu.Lock()
	b.readTag++
	tag := b.readTag
	b.reads[tag] = pendingRead{task: t, submit: b.Now()}
	pump := !b.pumping
	b.pumping = true
	b.mu.Unlock()
	req := storage.Request{Tag: tag, Device: int(t.Res.Index), Ranges: []storage.Range{{Path: path, Offset: t.Offset, Length: length}}}
	if err := b.reader.Submit(req); err != nil {
		b.mu.Lock()
		delete(b.reads, tag)
		b.mu.Unlock()
		return fmt.Errorf("engine: read %s [%d, +%d): %w", path, t.Offset, length, err)
	}
	if pump {
		go b.pumpReads()
	}
	return nil
}

// pumpReads turns storage completions into task completions until no read
// is pending; startRead restarts it.
func (b *Backend) pumpReads() {
	var cs []storage.Completion
	for {
		var err error
		cs, err = b.reader.Wait(b.ctx, cs[:0])
		for i := range cs {
			sc := &cs[i]
			b.mu.Lock()
			pr := b.reads[sc.Tag]
			delete(b.reads, sc.Tag)
			b.mu.Unlock()
			t := pr.task
			// The reader has its own clock (it may outlive this backend):
			// the read started its queueing delay after submission.
			start := pr.submit + scheduler.Time(max(sc.Start-sc.Submit, 0))
			c := scheduler.Completion{Task: t, Start: start, Err: sc.Err}
			if sc.Err == nil {
				b.data.ioBytes.Add(sc.IOBytes)
				if t.Meta {
					sc.Buffer.Release()
				} else {
					b.data.addRead(t, sc.Ranges[0], sc.Buffer)
				}
			}
			b.complete(c)
		}
		if err != nil {
			b.mu.Lock()
			if len(b.reads) == 0 || b.ctx.Err() != nil {
				b.pumping = false
				b.mu.Unlock()
				return
			}
			b.mu.Unlock()
			// A read was registered but not yet submitted: try again.
			time.Sleep(50 * time.Microsecond)
		}
	}
}

// complete queues a completion, stamping its End under the queue lock so
// completions come out of Next in End order.
func (b *Backend) complete(c scheduler.Completion) {
	b.mu.Lock()
	c.End = b.Now()
	if c.End < c.Start {
		c.End = c.Start
	}
	b.queue = append(b.queue, c)
	b.mu.Unlock()
	select {
	case b.notify <- struct{}{}:
	default:
	}
}

// Next implements scheduler.Backend.
func (b *Backend) Next(ctx context.Context) (scheduler.Completion, error) {
	for {
		b.mu.Lock()
		if len(b.queue) > 0 {
			c := b.queue[0]
			b.queue = b.queue[1:]
			b.started--
			b.mu.Unlock()
			return c, nil
		}
		idle := b.started == 0
		b.mu.Unlock()
		if idle {
			return scheduler.Completion{}, scheduler.ErrIdle
		}
		select {
		case <-b.notify:
		case <-ctx.Done():
			b.cancel()
			return scheduler.Completion{}, ctx.Err()
		}
	}
}
