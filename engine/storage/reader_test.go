package storage

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gostachio/engine/storage/alloc"

	"github.com/pawelgaczynski/giouring"
	"golang.org/x/sys/unix"
)

// Test files go to t.TempDir(). Where that directory is on a filesystem refusing O_DIRECT (an old
// tmpfs), Open falls back to buffered reads and logs it once; the tests then still check bytes,
// and report the fallback with t.Log so a run on such a machine says what it measured.

// writeRandom writes n random bytes (fixed seed) to a new file and returns its path and content.
func writeRandom(t testing.TB, n int, seed uint64) (string, []byte) {
	t.Helper()
	data := make([]byte, n)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for i := 0; i+8 <= n; i += 8 {
		v := rng.Uint64()
		for k := 0; k < 8; k++ {
			data[i+k] = byte(v >> (8 * k))
		}
	}
	path := filepath.Join(t.TempDir(), "data.bin")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	// Compare with what a plain read returns, not with our own buffer.
	back, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, back
}

// stepClock advances by one microsecond per reading: deterministic timestamps.
type stepClock struct {
	mu sync.Mutex
	t  time.Duration
}

func (c *stepClock) Now() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t += time.Microsecond
	return c.t
}

var _ Clock = (*stepClock)(nil)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newTestReader makes a reader on a checked allocator; cleanup closes it and asserts no leaks.
func newTestReader(t *testing.T, opts Options) (*Reader, *alloc.Checked) {
	t.Helper()
	pool, err := alloc.NewPool(alloc.Options{ArenaBytes: 32 << 20})
	if err != nil {
		t.Fatal(err)
	}
	checked := alloc.NewChecked(pool)
	opts.Allocator = checked
	r, err := NewReader(opts)
	if err != nil {
		if opts.IO == IOUring {
			t.Skipf("io_uring unavailable here: %v", err)
		}
		t.Fatal(err)
	}
	if r.Backend() != opts.IO && opts.IO != IOAuto {
		t.Fatalf("backend %s, want %s", r.Backend(), opts.IO)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
		if err := checked.Check(); err != nil {
			t.Error(err)
		}
		if st := pool.Stats(); st.OutstandingBuffers != 0 || st.OutstandingBytes != 0 {
			t.Errorf("pool still has %d buffers (%d bytes) out", st.OutstandingBuffers, st.OutstandingBytes)
		}
		pool.Close()
	})
	return r, checked
}

// collect waits for n completions.
func collect(t *testing.T, r *Reader, n int) []Completion {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []Completion
	for len(out) < n {
		var err error
		if out, err = r.Wait(ctx, out); err != nil {
			t.Fatalf("after %d of %d completions: %v", len(out), n, err)
		}
	}
	return out
}

var backends = []struct {
	name string
	opts Options
}{
	{"uring", Options{IO: IOUring, QueueDepth: 8, Combine: CombineOptions{Combine: true, MaxGap: 16 << 10, MaxRequest: 256 << 10}, FixedBuffers: true, RegisteredFiles: 16}},
	{"uring-plain", Options{IO: IOUring, QueueDepth: 4, Combine: CombineOptions{MaxRequest: 64 << 10}}},
	{"uring-sqpoll", Options{IO: IOUring, QueueDepth: 8, Combine: CombineOptions{Combine: true, MaxRequest: 128 << 10}, SQPoll: true, FixedBuffers: true}},
	{"pread", Options{IO: IOPread, QueueDepth: 8, Combine: CombineOptions{Combine: true, MaxGap: 16 << 10, MaxRequest: 256 << 10}}},
}

// TestReadBackMatchesPlainRead is the integration test: a few MB of random bytes read back through
// every backend, as one whole-file request and as many multi-range requests, byte for byte equal to
// os.ReadFile.
func TestReadBackMatchesPlainRead(t *testing.T) {
	const size = 6<<20 + 1234 // not a multiple of the block size: the last read ends at EOF
	path, want := writeRandom(t, size, 1)
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			log := &syncBuf{}
			be.opts.Log = log
			r, checked := newTestReader(t, be.opts)
			f, err := r.Open(path, Expect{Size: size})
			if err != nil {
				t.Fatal(err)
			}
			if !f.Direct {
				t.Logf("O_DIRECT refused here, buffered reads: %s", log.String())
			} else if strings.Contains(log.String(), "failed") {
				t.Errorf("registration fell back: %s", log.String())
			}
			// Whole file in one request: split into ⌈size/MaxRequest⌉ device requests.
			if err := r.Submit(Request{Tag: 1, Ranges: []Range{{File: f, Offset: 0, Length: size}}}); err != nil {
				t.Fatal(err)
			}
			c := collect(t, r, 1)[0]
			if c.Err != nil {
				t.Fatal(c.Err)
			}
			maxReq := r.Options().Combine.MaxRequest
			if wantIOs := int((int64(size) + maxReq - 1) / maxReq); c.IOs != wantIOs {
				t.Errorf("whole file: %d device requests, want %d", c.IOs, wantIOs)
			}
			if !bytes.Equal(c.Ranges[0], want) {
				t.Fatal("whole file: bytes differ from os.ReadFile")
			}
			c.Buffer.Release()

			// 200 requests of 1–5 random ranges each (by path), every range compared.
			rng := rand.New(rand.NewPCG(7, 8))
			type rg struct{ off, n int64 }
			asked := map[uint64][]rg{}
			var reqs []Request
			for tag := uint64(0); tag < 200; tag++ {
				var rs []Range
				for k := rng.IntN(5) + 1; k > 0; k-- {
					off := rng.Int64N(size)
					n := min(rng.Int64N(40000), size-off)
					if k%2 == 0 && len(rs) > 0 { // make some ranges adjacent to the previous one
						prev := rs[len(rs)-1]
						off = prev.Offset + prev.Length
						n = min(n, size-off)
					}
					rs = append(rs, Range{Path: path, Offset: off, Length: n})
					asked[tag] = append(asked[tag], rg{off, n})
				}
				reqs = append(reqs, Request{Tag: tag, Ranges: rs})
			}
			if err := r.Submit(reqs...); err != nil {
				t.Fatal(err)
			}
			for _, c := range collect(t, r, len(reqs)) {
				if c.Err != nil {
					t.Fatalf("request %d: %v", c.Tag, c.Err)
				}
				for i, a := range asked[c.Tag] {
					if !bytes.Equal(c.Ranges[i], want[a.off:a.off+a.n]) {
						t.Fatalf("request %d range %d (off %d len %d): bytes differ", c.Tag, i, a.off, a.n)
					}
				}
				if c.Submit > c.Start || c.Start > c.End {
					t.Errorf("request %d: times submit %v start %v end %v out of order", c.Tag, c.Submit, c.Start, c.End)
				}
				c.Buffer.Release()
			}
			if n, _ := checked.Outstanding(); n != 0 {
				t.Errorf("%d buffers outstanding after releasing all", n)
			}
			if _, err := r.Next(context.Background()); !errors.Is(err, ErrNothingPending) {
				t.Errorf("Next when idle: %v, want ErrNothingPending", err)
			}
		})
	}
}

func TestTruncatedFileAndShortRead(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			path, _ := writeRandom(t, 64<<10, 2)
			r, _ := newTestReader(t, be.opts)
			f, err := r.Open(path, Expect{})
			if err != nil {
				t.Fatal(err)
			}
			// Past the end of an intact file: ErrShortRead naming the range's device request.
			if err := r.Submit(Request{Tag: 1, Ranges: []Range{{File: f, Offset: 60 << 10, Length: 8 << 10}}}); err != nil {
				t.Fatal(err)
			}
			c := collect(t, r, 1)[0]
			var re *ReadError
			if !errors.As(c.Err, &re) || !errors.Is(c.Err, ErrShortRead) || c.Buffer != nil {
				t.Fatalf("read past EOF: err %v buffer %v", c.Err, c.Buffer)
			}
			if re.Path != path || re.Offset != 60<<10 || re.Length != 8<<10 {
				t.Errorf("ReadError names %s %d %d", re.Path, re.Offset, re.Length)
			}
			// Truncated after open: ErrChanged.
			if err := os.Truncate(path, 10000); err != nil {
				t.Fatal(err)
			}
			if err := r.Submit(Request{Tag: 2, Ranges: []Range{{File: f, Offset: 8192, Length: 16384}}}); err != nil {
				t.Fatal(err)
			}
			c = collect(t, r, 1)[0]
			if !errors.As(c.Err, &re) || !errors.Is(c.Err, ErrChanged) || !strings.Contains(c.Err.Error(), "truncated from 65536 to 10000") {
				t.Fatalf("truncated: err %v", c.Err)
			}
			if re.Offset != 8192 || re.Length != 16384 {
				t.Errorf("ReadError names offset %d length %d", re.Offset, re.Length)
			}
			// Bytes still present before the new end read fine.
			if err := r.Submit(Request{Tag: 3, Ranges: []Range{{File: f, Offset: 100, Length: 9900}}}); err != nil {
				t.Fatal(err)
			}
			if c = collect(t, r, 1)[0]; c.Err != nil || len(c.Ranges[0]) != 9900 {
				t.Fatalf("read before the new end: %v", c.Err)
			}
			c.Buffer.Release()
		})
	}
}

// TestFailingRead makes the kernel fail the read: the file's descriptor is replaced (dup2) by one
// of a directory, so read returns EISDIR.
func TestFailingRead(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			path, _ := writeRandom(t, 16<<10, 3)
			r, _ := newTestReader(t, be.opts)
			f, err := r.Open(path, Expect{})
			if err != nil {
				t.Fatal(err)
			}
			dir, err := unix.Open(filepath.Dir(path), unix.O_RDONLY|unix.O_DIRECTORY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(dir)
			if err := unix.Dup2(dir, f.fd); err != nil {
				t.Fatal(err)
			}
			if err := r.Submit(Request{Tag: 9, Ranges: []Range{{File: f, Offset: 4096, Length: 4096}, {File: f, Offset: 12288, Length: 100}}}); err != nil {
				t.Fatal(err)
			}
			c := collect(t, r, 1)[0]
			var re *ReadError
			if !errors.As(c.Err, &re) || !errors.Is(c.Err, syscall.EISDIR) || c.Buffer != nil || c.Tag != 9 {
				t.Fatalf("err %v buffer %v tag %d", c.Err, c.Buffer, c.Tag)
			}
			if re.Path != path || !strings.Contains(c.Err.Error(), path) {
				t.Errorf("error does not name the file: %v", c.Err)
			}
		})
	}
}

func TestExpectations(t *testing.T) {
	path, data := writeRandom(t, 8192, 4)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	ino := st.Sys().(*syscall.Stat_t).Ino
	for _, tc := range []struct {
		name string
		exp  Expect
		want error
	}{
		{"none", Expect{}, nil},
		{"all match", Expect{Size: int64(len(data)), Inode: ino, ModTime: st.ModTime()}, nil},
		{"size", Expect{Size: 4096}, ErrChanged},
		{"inode", Expect{Inode: ino + 1}, ErrChanged},
		{"mtime", Expect{ModTime: st.ModTime().Add(time.Second)}, ErrChanged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := newTestReader(t, Options{IO: IOPread})
			_, err := r.Open(path, tc.exp)
			if !errors.Is(err, tc.want) || (err != nil && !strings.Contains(err.Error(), path)) {
				t.Fatalf("Open: %v, want %v", err, tc.want)
			}
		})
	}
	r, _ := newTestReader(t, Options{IO: IOPread})
	if _, err := r.Open(filepath.Dir(path), Expect{}); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("Open(dir): %v", err)
	}
}

func TestBadRequests(t *testing.T) {
	path, _ := writeRandom(t, 8192, 5)
	r, _ := newTestReader(t, Options{IO: IOPread})
	f, _ := r.Open(path, Expect{})
	for _, tc := range []struct {
		name string
		req  Request
	}{
		{"negative offset", Request{Ranges: []Range{{File: f, Offset: -1, Length: 1}}}},
		{"negative length", Request{Ranges: []Range{{File: f, Offset: 0, Length: -1}}}},
		{"no file", Request{Ranges: []Range{{Offset: 0, Length: 1}}}},
		{"device too large", Request{Device: MaxDevices, Ranges: []Range{{File: f, Length: 1}}}},
		{"negative device", Request{Device: -1, Ranges: []Range{{File: f, Length: 1}}}},
	} {
		if err := r.Submit(tc.req); !errors.Is(err, ErrBadRange) {
			t.Errorf("%s: %v, want ErrBadRange", tc.name, err)
		}
	}
	if r.Pending() != 0 {
		t.Fatalf("rejected requests left %d pending", r.Pending())
	}
	// An empty request completes at once, with an empty buffer.
	if err := r.Submit(Request{Tag: 5}); err != nil {
		t.Fatal(err)
	}
	c := collect(t, r, 1)[0]
	if c.Err != nil || c.Tag != 5 || len(c.Ranges) != 0 || c.IOs != 0 {
		t.Fatalf("empty request: %+v", c)
	}
	c.Buffer.Release()
}

func TestFallbackToPreadWhenRingSetupFails(t *testing.T) {
	saved := setupRing
	defer func() { setupRing = saved }()
	calls := 0
	setupRing = func(uint32, uint32) (*giouring.Ring, error) {
		calls++
		return nil, unix.ENOSYS
	}
	if _, err := NewReader(Options{IO: IOUring}); !errors.Is(err, unix.ENOSYS) {
		t.Fatalf("explicit uring: %v, want ENOSYS", err)
	}
	log := &syncBuf{}
	r, _ := newTestReader(t, Options{IO: IOAuto, Log: log})
	if r.Backend() != IOPread {
		t.Fatalf("backend %s, want pread", r.Backend())
	}
	if n := strings.Count(log.String(), "io_uring unavailable"); n != 1 {
		t.Fatalf("log %q: %d notices, want 1", log.String(), n)
	}
	if calls != 2*len(ringFlagChoices(false)) {
		t.Errorf("setup tried %d times, want every flag choice twice (%d)", calls, 2*len(ringFlagChoices(false)))
	}
	path, want := writeRandom(t, 100000, 6)
	if err := r.Submit(Request{Ranges: []Range{{Path: path, Offset: 5, Length: 99995}}}); err != nil {
		t.Fatal(err)
	}
	c := collect(t, r, 1)[0]
	if c.Err != nil || !bytes.Equal(c.Ranges[0], want[5:]) {
		t.Fatalf("read through fallback: %v", c.Err)
	}
	c.Buffer.Release()
}

// TestInjectedClockTimestamps: one request with one device request reads the clock exactly three
// times (submit, issue, completion), so with a step clock the stamps are 1µs, 2µs, 3µs.
func TestInjectedClockTimestamps(t *testing.T) {
	path, _ := writeRandom(t, 8192, 7)
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			be.opts.Clock = &stepClock{}
			r, _ := newTestReader(t, be.opts)
			if err := r.Submit(Request{Ranges: []Range{{Path: path, Offset: 0, Length: 4096}}}); err != nil {
				t.Fatal(err)
			}
			c := collect(t, r, 1)[0]
			if c.Err != nil {
				t.Fatal(c.Err)
			}
			c.Buffer.Release()
			if c.Submit != 1*time.Microsecond || c.Start != 2*time.Microsecond || c.End != 3*time.Microsecond {
				t.Fatalf("times %v %v %v, want 1µs 2µs 3µs", c.Submit, c.Start, c.End)
			}
		})
	}
}

// TestMultiDevice spreads requests over three device queues (three rings) and checks every byte.
func TestMultiDevice(t *testing.T) {
	path, want := writeRandom(t, 1<<20, 8)
	dm := NewDeviceMap()
	d0, err := dm.Device(path)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := dm.Device(filepath.Dir(path)); d != d0 || dm.Len() != 1 {
		t.Fatalf("same filesystem got device %d (first %d), %d devices", d, d0, dm.Len())
	}
	if d, err := dm.Device("/proc"); err != nil || d != 1 || dm.Len() != 2 {
		t.Fatalf("/proc: device %d err %v, %d devices", d, err, dm.Len())
	}
	for _, be := range backends[:1] {
		r, _ := newTestReader(t, be.opts)
		var reqs []Request
		for i := 0; i < 30; i++ {
			reqs = append(reqs, Request{Tag: uint64(i), Device: i % 3, Ranges: []Range{{Path: path, Offset: int64(i) * 30000, Length: 30000}}})
		}
		if err := r.Submit(reqs...); err != nil {
			t.Fatal(err)
		}
		for _, c := range collect(t, r, len(reqs)) {
			off := int64(c.Tag) * 30000
			if c.Err != nil || c.Device != int(c.Tag%3) || !bytes.Equal(c.Ranges[0], want[off:off+30000]) {
				t.Fatalf("request %d on device %d: %v", c.Tag, c.Device, c.Err)
			}
			c.Buffer.Release()
		}
	}
}

func TestWaitHonoursContext(t *testing.T) {
	r, _ := newTestReader(t, Options{IO: IOPread})
	if _, err := r.Wait(context.Background(), nil); !errors.Is(err, ErrNothingPending) {
		t.Fatalf("idle Wait: %v", err)
	}
	r.pending.Add(1) // pretend one request is in flight that never completes
	defer r.pending.Add(-1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Wait(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait with cancelled context: %v", err)
	}
}
