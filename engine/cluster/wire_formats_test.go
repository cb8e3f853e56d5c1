package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"gostachio/kernels/cpu"
)

// The TCP data plane could frame batches as an Arrow IPC stream or send
// them over Arrow Flight (arrow-go), to be chosen by measurement. These
// are the two alternatives, wired as the engine would need them (its
// batches are cpu.Batch, converted to Arrow records and back without
// copying the column buffers), against the data plane it has
// (BenchmarkWireFormats); TestArrowWireRoundTrip checks that the three
// move the same data.

// toRecord returns b as an Arrow record whose buffers are b's vectors
// (no copy): int64 and decimals as int64, int32 and dates as int32,
// strings as utf8 with b's offsets.
func toRecord(b *cpu.Batch) (arrow.RecordBatch, error) {
	fields := make([]arrow.Field, len(b.Cols))
	cols := make([]arrow.Array, len(b.Cols))
	n := b.Rows
	for i := range b.Cols {
		v := &b.Cols[i]
		var d arrow.ArrayData
		switch v.Type {
		case cpu.TInt64, cpu.TDecimal:
			fields[i] = arrow.Field{Name: b.Names[i], Type: arrow.PrimitiveTypes.Int64}
			d = array.NewData(fields[i].Type, n, []*memory.Buffer{nil, memory.NewBufferBytes(asBytes(v.I64[:n]))}, nil, 0, 0)
		case cpu.TInt32, cpu.TDate:
			fields[i] = arrow.Field{Name: b.Names[i], Type: arrow.PrimitiveTypes.Int32}
			d = array.NewData(fields[i].Type, n, []*memory.Buffer{nil, memory.NewBufferBytes(asBytes(v.I32[:n]))}, nil, 0, 0)
		case cpu.TString:
			fields[i] = arrow.Field{Name: b.Names[i], Type: arrow.BinaryTypes.String}
			d = array.NewData(fields[i].Type, n, []*memory.Buffer{nil, memory.NewBufferBytes(asBytes(v.Off[:n+1])), memory.NewBufferBytes(v.Str)}, nil, 0, 0)
		default:
			return nil, fmt.Errorf("column %s: type %v not carried", b.Names[i], v.Type)
		}
		cols[i] = array.MakeFromData(d)
		d.Release()
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, int64(n))
	for _, c := range cols {
		c.Release()
	}
	return rec, nil
}

// fromRecord returns rec as a cpu.Batch whose vectors are views of rec's
// buffers (valid while rec is retained).
func fromRecord(rec arrow.RecordBatch) (*cpu.Batch, error) {
	n := int(rec.NumRows())
	b := &cpu.Batch{Rows: n, Names: make([]string, rec.NumCols()), Cols: make([]cpu.Vec, rec.NumCols())}
	for i, c := range rec.Columns() {
		b.Names[i] = rec.ColumnName(i)
		switch a := c.(type) {
		case *array.Int64:
			b.Cols[i] = cpu.Vec{Type: cpu.TInt64, I64: a.Int64Values()}
		case *array.Int32:
			b.Cols[i] = cpu.Vec{Type: cpu.TInt32, I32: a.Int32Values()}
		case *array.String:
			off := a.ValueOffsets()
			data := a.ValueBytes()
			if len(off) > 0 && off[0] != 0 { // a slice: rebase
				base := off[0]
				rebased := make([]int32, len(off))
				for j, o := range off {
					rebased[j] = o - base
				}
				off, data = rebased, data[base:]
			}
			b.Cols[i] = cpu.Vec{Type: cpu.TString, Off: off, Str: data}
		default:
			return nil, fmt.Errorf("column %s: arrow type %s not carried", b.Names[i], c.DataType())
		}
	}
	return b, nil
}

func asBytes[T int32 | int64](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(z)))
}

// wireBatch is a lineitem-like batch of about size bytes: four 8-byte
// columns and a 25-byte string, with distinct values.
func wireBatch(size int) *cpu.Batch {
	rows := size / 57
	b := &cpu.Batch{Rows: rows, Names: []string{"a", "b", "c", "d", "s"}}
	off := make([]int32, rows+1)
	var str bytes.Buffer
	for i := range rows {
		fmt.Fprintf(&str, "%025d", i)
		off[i+1] = int32(str.Len())
	}
	for c := range 4 {
		v := make([]int64, rows)
		for i := range v {
			v[i] = int64(i*4 + c)
		}
		b.Cols = append(b.Cols, cpu.Vec{Type: cpu.TInt64, I64: v})
	}
	b.Cols = append(b.Cols, cpu.Vec{Type: cpu.TString, Off: off, Str: str.Bytes()})
	return b
}

// ipcPair sends batches as one Arrow IPC stream over a loopback TCP
// connection: send writes one record; the receiver converts each record it
// reads back to a cpu.Batch and hands it to got. close ends the stream and
// waits for the receiver.
type ipcPair struct {
	w     *ipc.Writer
	conn  net.Conn
	done  chan error
	count atomic.Int64
}

func newIPCPair(t testing.TB, schema *arrow.Schema, got func(*cpu.Batch)) *ipcPair {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback TCP: %v", err)
	}
	p := &ipcPair{done: make(chan error, 1)}
	go func() {
		defer ln.Close()
		c, err := ln.Accept()
		if err != nil {
			p.done <- err
			return
		}
		defer c.Close()
		r, err := ipc.NewReader(c, ipc.WithAllocator(memory.DefaultAllocator))
		if err != nil {
			p.done <- err
			return
		}
		defer r.Release()
		for r.Next() {
			b, err := fromRecord(r.RecordBatch())
			if err != nil {
				p.done <- err
				return
			}
			got(b)
			p.count.Add(1)
		}
		p.done <- r.Err()
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	p.conn = c
	p.w = ipc.NewWriter(c, ipc.WithSchema(schema))
	return p
}

func (p *ipcPair) send(b *cpu.Batch) error { return writeBatch(p.w, b) }

func (p *ipcPair) close() error {
	err := p.w.Close()
	if cerr := p.conn.(*net.TCPConn).CloseWrite(); err == nil {
		err = cerr
	}
	if rerr := <-p.done; err == nil {
		err = rerr
	}
	p.conn.Close()
	return err
}

// putServer is an Arrow Flight service whose DoPut converts every record
// it receives to a cpu.Batch and hands it to got.
type putServer struct {
	flight.BaseFlightServer
	got func(*cpu.Batch)
}

func (s *putServer) DoPut(stream flight.FlightService_DoPutServer) error {
	r, err := flight.NewRecordReader(stream, ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		return err
	}
	defer r.Release()
	for r.Next() {
		b, err := fromRecord(r.RecordBatch())
		if err != nil {
			return err
		}
		s.got(b)
	}
	if err := r.Err(); err != nil {
		return err
	}
	return stream.Send(&flight.PutResult{})
}

// flightPair sends batches to a Flight server on loopback with one DoPut
// stream.
type flightPair struct {
	srv    flight.Server
	client flight.Client
	stream flight.FlightService_DoPutClient
	w      *flight.Writer
}

func newFlightPair(t testing.TB, schema *arrow.Schema, got func(*cpu.Batch)) *flightPair {
	// gRPC refuses messages over 4 MiB by default; a record is one message.
	srv := flight.NewServerWithMiddleware(nil, grpc.MaxRecvMsgSize(1<<30))
	if err := srv.Init("127.0.0.1:0"); err != nil {
		t.Skipf("no loopback TCP: %v", err)
	}
	srv.RegisterFlightService(&putServer{got: got})
	go srv.Serve()
	client, err := flight.NewClientWithMiddleware(srv.Addr().String(), nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		srv.Shutdown()
		t.Fatal(err)
	}
	stream, err := client.DoPut(context.Background())
	if err != nil {
		client.Close()
		srv.Shutdown()
		t.Fatal(err)
	}
	w := flight.NewRecordWriter(stream, ipc.WithSchema(schema))
	w.SetFlightDescriptor(&flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{"exchange"}})
	return &flightPair{srv: srv, client: client, stream: stream, w: w}
}

func (p *flightPair) send(b *cpu.Batch) error { return writeBatch(p.w, b) }

// writeBatch writes b as one Arrow record (ipc.Writer, flight.Writer).
func writeBatch(w interface{ Write(arrow.RecordBatch) error }, b *cpu.Batch) error {
	rec, err := toRecord(b)
	if err != nil {
		return err
	}
	defer rec.Release()
	return w.Write(rec)
}

// recordPair is one of the Arrow paths: send a batch, then close (every
// record received).
type recordPair interface {
	send(*cpu.Batch) error
	close() error
}

// sendRecords sends batch b.N times through p and closes it.
func sendRecords(b *testing.B, p recordPair, batch *cpu.Batch) {
	b.SetBytes(batch.Bytes())
	b.ResetTimer()
	for range b.N {
		if err := p.send(batch); err != nil {
			b.Fatal(err)
		}
	}
	if err := p.close(); err != nil {
		b.Fatal(err)
	}
}

// close ends the stream and waits for the server's PutResult (every
// record read and converted).
func (p *flightPair) close() error {
	err := p.w.Close()
	if cerr := p.stream.CloseSend(); err == nil {
		err = cerr
	}
	if _, rerr := p.stream.Recv(); err == nil && rerr != nil && !errors.Is(rerr, io.EOF) {
		err = rerr
	}
	p.client.Close()
	p.srv.Shutdown()
	return err
}

// TestArrowWireRoundTrip: a batch sent through each of the three wire
// formats arrives with the same values (so BenchmarkWireFormats compares
// like with like), and a column type Arrow's path does not carry is an
// error, not a silent loss.
func TestArrowWireRoundTrip(t *testing.T) {
	want := wireBatch(64 << 10)
	check := func(name string, got *cpu.Batch) {
		t.Helper()
		if got == nil || got.Rows != want.Rows || len(got.Cols) != len(want.Cols) {
			t.Fatalf("%s: got %v", name, got)
		}
		for c := range want.Cols {
			for _, i := range []int{0, 1, want.Rows / 2, want.Rows - 1} {
				if g, w := got.Cols[c].Format(i), want.Cols[c].Format(i); g != w {
					t.Fatalf("%s: column %d row %d is %q, want %q", name, c, i, g, w)
				}
			}
		}
	}
	rec, err := toRecord(want)
	if err != nil {
		t.Fatal(err)
	}
	schema := rec.Schema()
	rec.Release()

	var mu sync.Mutex
	var last *cpu.Batch
	keep := func(b *cpu.Batch) { mu.Lock(); last = b; mu.Unlock() }

	p := newIPCPair(t, schema, keep)
	if err := p.send(want); err != nil {
		t.Fatal(err)
	}
	if err := p.close(); err != nil {
		t.Fatal(err)
	}
	check("arrow ipc", last)

	last = nil
	f := newFlightPair(t, schema, keep)
	if err := f.send(want); err != nil {
		t.Fatal(err)
	}
	if err := f.close(); err != nil {
		t.Fatal(err)
	}
	check("arrow flight", last)

	var ours atomic.Pointer[cpu.Batch]
	x, y := planePair(t, 10*time.Second, func(_, _, _ int, bs []*cpu.Batch, l *recvLease) error {
		c := bs[0].Clone() // the lease's memory is recycled after Release
		l.Release()
		ours.Store(c)
		return nil
	})
	defer x.close()
	defer y.close()
	if err := x.send(context.Background(), 0, 1, 0, 0, []*cpu.Batch{want}); err != nil {
		t.Fatal(err)
	}
	check("data plane", ours.Load())

	bad := &cpu.Batch{Rows: 1, Names: []string{"f"}, Cols: []cpu.Vec{{Type: cpu.TFloat64, F64: []float64{1}}}}
	if _, err := toRecord(bad); err == nil {
		t.Error("a float column went through toRecord without an error")
	}
}

// BenchmarkWireFormats moves the same lineitem-like batches from one side
// to another over loopback TCP in three ways, per frame size (384 KiB:
// the engine's byte-weighted median frame; 8 MiB): the data plane as the
// engine runs it (4 sends in flight, each acknowledged after the receiver
// stored it), one Arrow IPC stream, and one Arrow Flight DoPut stream
// (neither acknowledges records: their best case). The Arrow paths convert
// cpu.Batch to records and back without copying column buffers. b.SetBytes
// makes `go test -bench` print the throughput.
func BenchmarkWireFormats(b *testing.B) {
	for _, size := range []int{384 << 10, 8 << 20} {
		batch := wireBatch(size)
		rec, err := toRecord(batch)
		if err != nil {
			b.Fatal(err)
		}
		schema := rec.Schema()
		rec.Release()
		got := func(*cpu.Batch) {}
		b.Run(fmt.Sprintf("frame=%dKiB/format=dataplane", size>>10), func(b *testing.B) {
			sendInFlight(b, batch, 4)
		})
		b.Run(fmt.Sprintf("frame=%dKiB/format=arrow-ipc", size>>10), func(b *testing.B) {
			p := newIPCPair(b, schema, got)
			sendRecords(b, p, batch)
			if n := p.count.Load(); n != int64(b.N) {
				b.Fatalf("received %d records of %d", n, b.N)
			}
		})
		b.Run(fmt.Sprintf("frame=%dKiB/format=arrow-flight", size>>10), func(b *testing.B) {
			sendRecords(b, newFlightPair(b, schema, got), batch)
		})
	}
}
