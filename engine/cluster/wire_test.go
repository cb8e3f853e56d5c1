package cluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gostachio/kernels/cpu"
)

// testBatch has one column of every type; n rows.
func testBatch(n int) *cpu.Batch {
	b := &cpu.Batch{Rows: n, Names: []string{"i64", "i32", "date", "dec", "f64", "str", "bool"}}
	i64, i32, date, dec, f64 := make([]int64, n), make([]int32, n), make([]int32, n), make([]int64, n), make([]float64, n)
	off := []int32{0}
	var str []byte
	bs := make([]bool, n)
	for i := range n {
		i64[i], i32[i], date[i], dec[i], f64[i] = int64(i)*7-3, int32(i), int32(9000+i), int64(i)*101, float64(i)/3
		str = append(str, fmt.Sprintf("value-%d", i*i)...)
		off = append(off, int32(len(str)))
		bs[i] = i%3 == 0
	}
	b.Cols = []cpu.Vec{{Type: cpu.TInt64, I64: i64}, {Type: cpu.TInt32, I32: i32}, {Type: cpu.TDate, I32: date},
		{Type: cpu.TDecimal, Scale: 2, I64: dec}, {Type: cpu.TFloat64, F64: f64}, {Type: cpu.TString, Off: off, Str: str},
		{Type: cpu.TBool, B: bs}}
	return b
}

// sliceRows is a view of rows [lo, hi) sharing the vectors (string
// offsets not rebased), as a kernel's sub-slice would be.
func sliceRows(b *cpu.Batch, lo, hi int) *cpu.Batch {
	out := &cpu.Batch{Rows: hi - lo, Names: b.Names, Cols: make([]cpu.Vec, len(b.Cols))}
	for i, v := range b.Cols {
		w := cpu.Vec{Type: v.Type, Scale: v.Scale}
		switch v.Type {
		case cpu.TInt64, cpu.TDecimal:
			w.I64 = v.I64[lo:hi]
		case cpu.TInt32, cpu.TDate:
			w.I32 = v.I32[lo:hi]
		case cpu.TFloat64:
			w.F64 = v.F64[lo:hi]
		case cpu.TBool:
			w.B = v.B[lo:hi]
		case cpu.TString:
			w.Off, w.Str = v.Off[lo:hi+1], v.Str
		}
		out.Cols[i] = w
	}
	return out
}

// sameRows compares batches cell by cell (formatted).
func sameRows(a, b *cpu.Batch) error {
	if a.Rows != b.Rows || !reflect.DeepEqual(a.Names, b.Names) {
		return fmt.Errorf("shape %d %v vs %d %v", a.Rows, a.Names, b.Rows, b.Names)
	}
	for c := range a.Cols {
		if a.Cols[c].Type != b.Cols[c].Type || a.Cols[c].Scale != b.Cols[c].Scale {
			return fmt.Errorf("column %s: type %s/%d vs %s/%d", a.Names[c], a.Cols[c].Type, a.Cols[c].Scale, b.Cols[c].Type, b.Cols[c].Scale)
		}
		for i := range a.Rows {
			if x, y := a.Cols[c].Format(i), b.Cols[c].Format(i); x != y {
				return fmt.Errorf("column %s row %d: %s vs %s", a.Names[c], i, x, y)
			}
		}
	}
	return nil
}

func TestFrameRoundTrip(t *testing.T) {
	full := testBatch(1000)
	ins := []*cpu.Batch{testBatch(0), testBatch(1), full, sliceRows(full, 10, 700), cpu.Empty(full)}
	var buf bytes.Buffer
	bw := bufio.NewWriter(&buf)
	if err := writeFrame(bw, bw, frameHeader{query: 3, seq: 99, pipe: 5, dev: 1}, ins); err != nil {
		t.Fatal(err)
	}
	h, err := readFrameHeader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if h.query != 3 || h.seq != 99 || h.pipe != 5 || h.dev != 1 || h.batches != uint32(len(ins)) {
		t.Fatalf("header %+v", h)
	}
	outs, _, err := readBatches(&buf, h, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ins {
		if err := sameRows(ins[i], outs[i]); err != nil {
			t.Errorf("batch %d: %v", i, err)
		}
		if err := outs[i].Validate(); err != nil {
			t.Errorf("batch %d: %v", i, err)
		}
	}
	if buf.Len() != 0 {
		t.Errorf("%d bytes left after the frame", buf.Len())
	}
}

// TestFrameCorrupt: damaged frames are errors, never panics.
func TestFrameCorrupt(t *testing.T) {
	var buf bytes.Buffer
	bw := bufio.NewWriter(&buf)
	if err := writeFrame(bw, bw, frameHeader{seq: 1}, []*cpu.Batch{testBatch(50)}); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	// Every single-byte change and every truncation after the header.
	for i := 28; i < len(good); i++ { // the payload length and the batches
		for _, mut := range []func([]byte) []byte{
			func(b []byte) []byte { b[i] ^= 0xff; return b },
			func(b []byte) []byte { return b[:i] },
		} {
			b := mut(append([]byte(nil), good...))
			r := bytes.NewReader(b)
			h, err := readFrameHeader(r)
			if err != nil {
				continue
			}
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("byte %d: panic %v", i, p)
					}
				}()
				outs, _, err := readBatches(r, h, nil)
				if err == nil {
					// A changed value byte is still a valid batch.
					for _, o := range outs {
						if o.Validate() != nil {
							t.Fatalf("byte %d: invalid batch accepted", i)
						}
					}
				}
			}()
		}
	}
	// A huge batch count in the header is refused before allocating.
	bad := append([]byte(nil), good...)
	binary.LittleEndian.PutUint32(bad[24:], 1<<30)
	if _, err := readFrameHeader(bytes.NewReader(bad)); err == nil {
		t.Error("2^30 batches accepted")
	}
}

// planePair is two data planes on loopback (ranks 0 and 1).
func planePair(t testing.TB, timeout time.Duration, store storeFunc) (*dataPlane, *dataPlane) {
	var dps [2]*dataPlane
	var addrs [2]string
	for r := range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs[r] = ln.Addr().String()
		dps[r] = newDataPlane(r, 2, ln, timeout, store, func(string, ...any) {})
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	var d net.Dialer
	for r := range 2 {
		wg.Go(func() {
			errs[r] = dps[r].connect(context.Background(), addrs[:], d.DialContext, time.Now().Add(5*time.Second))
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return dps[0], dps[1]
}

func TestDataPlaneSendAndReject(t *testing.T) {
	var got atomic.Pointer[cpu.Batch]
	store := func(q, pipe, dev int, bs []*cpu.Batch, _ *recvLease) error {
		if q != 7 || pipe != 2 || dev != 1 || len(bs) != 1 {
			return fmt.Errorf("q %d pipe %d dev %d: %d batches", q, pipe, dev, len(bs))
		}
		got.Store(bs[0])
		return nil
	}
	a, b := planePair(t, 2*time.Second, store)
	defer a.close()
	defer b.close()
	in := testBatch(300)
	if err := a.send(context.Background(), 7, 1, 2, 1, []*cpu.Batch{in}); err != nil {
		t.Fatal(err)
	}
	if err := sameRows(in, got.Load()); err != nil {
		t.Fatal(err)
	}
	err := a.send(context.Background(), 8, 1, 2, 1, []*cpu.Batch{in})
	var pe *PeerError
	if !errors.As(err, &pe) || pe.Rank != 1 {
		t.Fatalf("rejected frame: err = %v, want a PeerError of worker 1", err)
	}
	// The link survives a rejected frame.
	if err := b.send(context.Background(), 7, 0, 2, 1, []*cpu.Batch{in}); err != nil {
		t.Fatal(err)
	}
	b.close()
	if err := a.send(context.Background(), 7, 1, 2, 1, []*cpu.Batch{in}); !errors.As(err, &pe) {
		t.Fatalf("send to a closed plane: err = %v, want a PeerError", err)
	}
}

// BenchmarkExchange moves lineitem-like batches (8 MiB: four 8-byte
// columns and a 25-byte string) from one data plane to another over
// loopback TCP, with 1 or 4 sends in flight, as the engine's send tasks
// do. b.SetBytes makes `go test -bench` print the throughput.
func BenchmarkExchange(b *testing.B) {
	const rows = 8 << 20 / 57
	batch := &cpu.Batch{Rows: rows, Names: []string{"a", "b", "c", "d", "s"}}
	off := make([]int32, rows+1)
	str := bytes.Repeat([]byte("x"), rows*25)
	for i := range off {
		off[i] = int32(25 * i)
	}
	for range 4 {
		batch.Cols = append(batch.Cols, cpu.Vec{Type: cpu.TInt64, I64: make([]int64, rows)})
	}
	batch.Cols = append(batch.Cols, cpu.Vec{Type: cpu.TString, Off: off, Str: str})
	for _, inflight := range []int{1, 4} {
		b.Run(fmt.Sprintf("inflight=%d", inflight), func(b *testing.B) { sendInFlight(b, batch, inflight) })
	}
}

// sendInFlight sends batch b.N times from one data plane to another over
// loopback TCP, inflight sends at once (the receiver releases each frame
// at once), with b.SetBytes for the throughput.
func sendInFlight(b *testing.B, batch *cpu.Batch, inflight int) {
	store := func(_, _, _ int, _ []*cpu.Batch, l *recvLease) error { l.Release(); return nil }
	x, y := planePair(b, 10*time.Second, store)
	defer x.close()
	defer y.close()
	b.SetBytes(batch.Bytes())
	b.ResetTimer()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range inflight {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				if err := x.send(context.Background(), 0, 1, 0, 0, []*cpu.Batch{batch}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestFrameRoundTripVectored sends frames through the vectored path over
// a TCP connection: columns below and above inlineMax (inline and as
// their own segments) and a frame over ioPiece (split across writev
// calls, a segment cut in two), read back through the receiver's small
// buffer.
func TestFrameRoundTripVectored(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback TCP: %v", err)
	}
	defer ln.Close()
	big := testBatch(700_000) // > ioPiece in all
	frames := [][]*cpu.Batch{{testBatch(3), testBatch(1000)}, {testBatch(5000), sliceRows(big, 1, 6000)}, {big}}
	if total := payloadBytes(frames[2]); total <= ioPiece {
		t.Fatalf("the large frame is %d bytes, not over ioPiece", total)
	}
	errc := make(chan error, 1)
	go func() {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			errc <- err
			return
		}
		defer c.Close()
		w := &deadlineConn{c: c, timeout: 10 * time.Second}
		for i, f := range frames {
			if err := writeFrame(w, nil, frameHeader{seq: uint64(i + 1)}, f); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReaderSize(&deadlineConn{c: c, timeout: 10 * time.Second}, inlineMax)
	for i, f := range frames {
		h, err := readFrameHeader(br)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		outs, _, err := readBatches(br, h, nil)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if h.seq != uint64(i+1) || len(outs) != len(f) {
			t.Fatalf("frame %d: seq %d, %d batches", i, h.seq, len(outs))
		}
		for j := range f {
			if err := sameRows(f[j], outs[j]); err != nil {
				t.Fatalf("frame %d batch %d: %v", i, j, err)
			}
		}
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}
