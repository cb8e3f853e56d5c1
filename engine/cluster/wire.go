package cluster

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"time"
	"unsafe"

	"gostachio/kernels/cpu"
)

// Data frames: the exchange's wire format. A frame is a fixed header and
// the batches' columns as raw vectors, in the host's byte order (checked
// once per connection by the hello's order mark), so a column is written
// from and read into its Go slice without conversion:
//
//	header  magic u32, query u32, seq u64, pipe u32, dev u32, batches u32,
//	        payload u64 (the bytes of the batches that follow)
//	batch   rows u64, cols u32, then per column:
//	        name len u16, name, type u8, scale i8, data len u64, data,
//	        str len u64, str (strings only: data = offsets, str = bytes)
//
// An ack answers each frame: seq u64, error len u32, error text. The
// receiver allocates no section larger than what is left of the payload,
// so a damaged length fails instead of exhausting memory.
const (
	frameMagic = 0x47535444 // "GSTD"
	helloMagic = 0x47535448 // "GSTH"
	orderMark  = 0x01020304
	// maxFrameBatches and maxName bound what a corrupt header can make a
	// receiver allocate before it fails.
	maxFrameBatches = 1 << 20
	maxCols         = 1 << 12
	// ioPiece is the most bytes one read or write moves between two
	// deadline refreshes: a stalled link fails within the timeout, a slow
	// but moving one does not.
	ioPiece = 4 << 20
)

// deadlineConn refreshes the connection's deadline before every read or
// write of at most ioPiece bytes, unless idle reads are allowed.
type deadlineConn struct {
	c       net.Conn
	timeout time.Duration
	// idle: the next reads wait for a frame to begin (no deadline).
	idle bool
}

func (d *deadlineConn) Read(p []byte) (int, error) {
	if len(p) > ioPiece {
		p = p[:ioPiece]
	}
	var dl time.Time
	if !d.idle {
		dl = time.Now().Add(d.timeout)
	}
	d.c.SetReadDeadline(dl)
	return d.c.Read(p)
}

// WriteBuffers writes bufs with vectored writes of at most ioPiece bytes,
// refreshing the deadline before each (as Write does).
func (d *deadlineConn) WriteBuffers(bufs net.Buffers) (int64, error) {
	var total int64
	for len(bufs) > 0 {
		var piece net.Buffers
		n := 0
		for len(bufs) > 0 && n < ioPiece {
			p := bufs[0]
			if n+len(p) > ioPiece {
				k := ioPiece - n
				piece = append(piece, p[:k])
				bufs[0] = p[k:]
				n += k
				break
			}
			piece = append(piece, p)
			n += len(p)
			bufs = bufs[1:]
		}
		d.c.SetWriteDeadline(time.Now().Add(d.timeout))
		k, err := piece.WriteTo(d.c)
		total += k
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

func (d *deadlineConn) Write(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		q := p[n:]
		if len(q) > ioPiece {
			q = q[:ioPiece]
		}
		d.c.SetWriteDeadline(time.Now().Add(d.timeout))
		k, err := d.c.Write(q)
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// bytesOf views a slice's elements as bytes (no copy).
func bytesOf[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(z)))
}

func nativeU32(v uint32) []byte {
	b := make([]byte, 4)
	*(*uint32)(unsafe.Pointer(&b[0])) = v
	return b
}

// writeHello opens a data connection: magic, order mark, sender's rank.
func writeHello(w io.Writer, rank int) error {
	var b [12]byte
	binary.LittleEndian.PutUint32(b[0:], helloMagic)
	copy(b[4:8], nativeU32(orderMark))
	binary.LittleEndian.PutUint32(b[8:], uint32(rank))
	_, err := w.Write(b[:])
	return err
}

// readHello reads a data connection's opening and returns the sender's rank.
func readHello(r io.Reader) (int, error) {
	var b [12]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, err
	}
	if binary.LittleEndian.Uint32(b[0:]) != helloMagic {
		return 0, errors.New("not a gostachio data connection")
	}
	if *(*uint32)(unsafe.Pointer(&b[4])) != orderMark {
		return 0, errors.New("peer has a different byte order (mixed-endian clusters are not supported)")
	}
	return int(binary.LittleEndian.Uint32(b[8:])), nil
}

const headerBytes = 36

type frameHeader struct {
	query     uint32
	seq       uint64
	pipe, dev uint32
	batches   uint32
	payload   uint64
}

// payloadBytes is what writeFrame writes after the header.
func payloadBytes(batches []*cpu.Batch) uint64 {
	var n uint64
	for _, b := range batches {
		n += 12
		for i := range b.Cols {
			data, str := columnSections(&b.Cols[i], b.Rows)
			n += uint64(2 + len(b.Names[i]) + 2 + 8 + len(data) + 8 + len(str))
		}
	}
	return n
}

// frameSegments encodes one frame of batches as the byte slices to send,
// in order: headers, names and short sections are packed together; a
// column section of at least inlineMax bytes is its own segment, a view of
// the column (not a copy), valid while the batch is.
func frameSegments(h frameHeader, batches []*cpu.Batch) net.Buffers {
	le := binary.LittleEndian
	meta := make([]byte, 0, 256)
	var segs net.Buffers
	section := func(p []byte) {
		meta = le.AppendUint64(meta, uint64(len(p)))
		if len(p) < inlineMax {
			meta = append(meta, p...)
			return
		}
		segs = append(segs, meta, p)
		meta = make([]byte, 0, 256)
	}
	meta = le.AppendUint32(meta, frameMagic)
	meta = le.AppendUint32(meta, h.query)
	meta = le.AppendUint64(meta, h.seq)
	meta = le.AppendUint32(meta, h.pipe)
	meta = le.AppendUint32(meta, h.dev)
	meta = le.AppendUint32(meta, uint32(len(batches)))
	meta = le.AppendUint64(meta, payloadBytes(batches))
	for _, b := range batches {
		meta = le.AppendUint64(meta, uint64(b.Rows))
		meta = le.AppendUint32(meta, uint32(len(b.Cols)))
		for i := range b.Cols {
			v := &b.Cols[i]
			name := b.Names[i]
			meta = le.AppendUint16(meta, uint16(len(name)))
			meta = append(meta, name...)
			meta = append(meta, byte(v.Type), byte(v.Scale))
			data, str := columnSections(v, b.Rows)
			section(data)
			section(str)
		}
	}
	if len(meta) > 0 {
		segs = append(segs, meta)
	}
	return segs
}

// inlineMax is the size from which a column section is sent from the
// column itself rather than copied next to the headers.
const inlineMax = 16 << 10

// buffersWriter writes several slices in one vectored write (writev).
type buffersWriter interface {
	WriteBuffers(bufs net.Buffers) (int64, error)
}

// writeFrame writes one frame of batches to w: in vectored writes when w
// is a buffersWriter (a TCP data connection: the columns go to the socket
// without a copy in user space), otherwise through bw (which is flushed),
// the large sections bypassing its buffer.
func writeFrame(w io.Writer, bw *bufio.Writer, h frameHeader, batches []*cpu.Batch) error {
	segs := frameSegments(h, batches)
	if vw, ok := w.(buffersWriter); ok {
		if bw != nil && bw.Buffered() > 0 {
			if err := bw.Flush(); err != nil {
				return err
			}
		}
		_, err := vw.WriteBuffers(segs)
		return err
	}
	for _, p := range segs {
		if _, err := writeLarge(bw, p); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// writeLarge writes p through bw without copying it into bw's buffer when
// p is at least a buffer long: the buffered headers go first, then p goes
// straight to the connection (bufio writes a large slice through when its
// buffer is empty).
func writeLarge(bw *bufio.Writer, p []byte) (int, error) {
	if len(p) >= bw.Size() && bw.Buffered() > 0 {
		if err := bw.Flush(); err != nil {
			return 0, err
		}
	}
	return bw.Write(p)
}

// columnSections returns the bytes a column sends: its values (offsets for
// strings, rebased to start at 0) and, for strings, the string bytes.
func columnSections(v *cpu.Vec, rows int) (data, str []byte) {
	switch v.Type {
	case cpu.TInt64, cpu.TDecimal:
		return bytesOf(v.I64[:rows]), nil
	case cpu.TInt32, cpu.TDate:
		return bytesOf(v.I32[:rows]), nil
	case cpu.TFloat64:
		return bytesOf(v.F64[:rows]), nil
	case cpu.TBool:
		return bytesOf(v.B[:rows]), nil
	case cpu.TString:
		if rows == 0 {
			return bytesOf([]int32{0}), nil
		}
		off := v.Off[:rows+1]
		if base := off[0]; base != 0 {
			// A view into a larger vector: rebase (rare; kernels output
			// fresh vectors).
			re := make([]int32, len(off))
			for i, o := range off {
				re[i] = o - base
			}
			return bytesOf(re), v.Str[base:off[rows]]
		}
		return bytesOf(off), v.Str[:off[rows]]
	}
	return nil, nil
}

// readFrameHeader reads a frame's header.
func readFrameHeader(r io.Reader) (frameHeader, error) {
	var hb [headerBytes]byte
	if _, err := io.ReadFull(r, hb[:]); err != nil {
		return frameHeader{}, err
	}
	le := binary.LittleEndian
	if le.Uint32(hb[0:]) != frameMagic {
		return frameHeader{}, errors.New("corrupt data frame (bad magic)")
	}
	h := frameHeader{query: le.Uint32(hb[4:]), seq: le.Uint64(hb[8:]), pipe: le.Uint32(hb[16:]),
		dev: le.Uint32(hb[20:]), batches: le.Uint32(hb[24:]), payload: le.Uint64(hb[28:])}
	if h.batches > maxFrameBatches {
		return h, fmt.Errorf("corrupt data frame: %d batches", h.batches)
	}
	return h, nil
}

// readBatches reads the batches of frame h and validates them, their large
// column sections into lease's memory (nil: fresh allocations). An error
// in the data (as opposed to the connection) is a *dataError.
func readBatches(r io.Reader, h frameHeader, lease *recvLease) ([]*cpu.Batch, int64, error) {
	n := h.batches
	lr := &limitReader{r: r, left: h.payload}
	r = lr
	le := binary.LittleEndian
	out := make([]*cpu.Batch, 0, n)
	var total int64
	var scratch [12]byte
	for range n {
		if _, err := io.ReadFull(r, scratch[:12]); err != nil {
			return nil, total, err
		}
		rows64, ncols := le.Uint64(scratch[0:]), le.Uint32(scratch[8:])
		if rows64 >= math.MaxInt32 || ncols > maxCols {
			return nil, total, &dataError{fmt.Sprintf("batch of %d rows, %d columns", rows64, ncols)}
		}
		rows := int(rows64)
		b := &cpu.Batch{Rows: rows, Names: make([]string, ncols), Cols: make([]cpu.Vec, ncols)}
		for c := range b.Cols {
			if _, err := io.ReadFull(r, scratch[:2]); err != nil {
				return nil, total, err
			}
			name := make([]byte, le.Uint16(scratch[0:]))
			if _, err := io.ReadFull(r, name); err != nil {
				return nil, total, err
			}
			b.Names[c] = string(name)
			if _, err := io.ReadFull(r, scratch[:10]); err != nil {
				return nil, total, err
			}
			v := &b.Cols[c]
			v.Type, v.Scale = cpu.Type(scratch[0]), int8(scratch[1])
			dlen := le.Uint64(scratch[2:])
			if dlen > lr.left {
				return nil, total, &dataError{fmt.Sprintf("column %s: %d bytes, %d left in the frame", b.Names[c], dlen, lr.left)}
			}
			if err := readColumn(r, v, rows, dlen, lease); err != nil {
				return nil, total, err
			}
			if _, err := io.ReadFull(r, scratch[:8]); err != nil {
				return nil, total, err
			}
			slen := le.Uint64(scratch[0:])
			if v.Type != cpu.TString && slen != 0 {
				return nil, total, &dataError{fmt.Sprintf("column %s (%s) has %d string bytes", b.Names[c], v.Type, slen)}
			}
			if slen > lr.left {
				return nil, total, &dataError{fmt.Sprintf("column %s: %d string bytes, %d left in the frame", b.Names[c], slen, lr.left)}
			}
			if v.Type == cpu.TString {
				if slen != uint64(v.Off[rows]) {
					return nil, total, &dataError{fmt.Sprintf("column %s: offsets end at %d, %d string bytes sent", b.Names[c], v.Off[rows], slen)}
				}
				v.Str = lease.bytes(int(slen))
				if _, err := io.ReadFull(r, v.Str); err != nil {
					return nil, total, err
				}
			}
			total += int64(dlen + slen)
		}
		if err := b.Validate(); err != nil {
			return nil, total, &dataError{err.Error()}
		}
		out = append(out, b)
	}
	if lr.left != 0 {
		return nil, total, &dataError{fmt.Sprintf("%d bytes of the frame left after its batches", lr.left)}
	}
	return out, total, nil
}

// limitReader reads at most left bytes (a frame's payload); reading past
// it is a *dataError.
type limitReader struct {
	r    io.Reader
	left uint64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.left == 0 {
		return 0, &dataError{"batches run past the frame's payload"}
	}
	if uint64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= uint64(n)
	return n, err
}

// readColumn reads a column's value section of dlen bytes for rows rows.
func readColumn(r io.Reader, v *cpu.Vec, rows int, dlen uint64, lease *recvLease) error {
	want := func(size int, n int) error {
		if dlen != uint64(size)*uint64(n) {
			return &dataError{fmt.Sprintf("%s column of %d rows sends %d bytes", v.Type, rows, dlen)}
		}
		return nil
	}
	var dst []byte
	switch v.Type {
	case cpu.TInt64, cpu.TDecimal:
		if err := want(8, rows); err != nil {
			return err
		}
		dst = lease.bytes(8 * rows)
		v.I64 = viewAs[int64](dst, rows)
	case cpu.TInt32, cpu.TDate:
		if err := want(4, rows); err != nil {
			return err
		}
		dst = lease.bytes(4 * rows)
		v.I32 = viewAs[int32](dst, rows)
	case cpu.TFloat64:
		if err := want(8, rows); err != nil {
			return err
		}
		dst = lease.bytes(8 * rows)
		v.F64 = viewAs[float64](dst, rows)
	case cpu.TBool:
		if err := want(1, rows); err != nil {
			return err
		}
		raw := make([]byte, rows)
		if _, err := io.ReadFull(r, raw); err != nil {
			return err
		}
		v.B = make([]bool, rows)
		for i, x := range raw {
			if x > 1 {
				return &dataError{fmt.Sprintf("bool column holds byte %d", x)}
			}
			v.B[i] = x == 1
		}
		return nil
	case cpu.TString:
		if err := want(4, rows+1); err != nil {
			return err
		}
		dst = lease.bytes(4 * (rows + 1))
		v.Off = viewAs[int32](dst, rows+1)
	default:
		return &dataError{fmt.Sprintf("unknown column type %d", v.Type)}
	}
	if _, err := io.ReadFull(r, dst); err != nil {
		return err
	}
	if v.Type == cpu.TString {
		if v.Off[0] != 0 {
			return &dataError{"string offsets do not start at 0"}
		}
		for i := 1; i < len(v.Off); i++ {
			if v.Off[i] < v.Off[i-1] {
				return &dataError{"string offsets decrease"}
			}
		}
	}
	return nil
}

// dataError is a malformed frame (the connection itself is fine).
type dataError struct{ msg string }

func (e *dataError) Error() string { return "corrupt data frame: " + e.msg }

// writeAck answers frame seq (msg empty: stored).
func writeAck(w *bufio.Writer, seq uint64, msg string) error {
	var b [12]byte
	binary.LittleEndian.PutUint64(b[0:], seq)
	binary.LittleEndian.PutUint32(b[8:], uint32(len(msg)))
	w.Write(b[:])
	w.WriteString(msg)
	return w.Flush()
}

const maxAckText = 1 << 16

func readAck(r io.Reader) (uint64, string, error) {
	var b [12]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, "", err
	}
	n := binary.LittleEndian.Uint32(b[8:])
	if n > maxAckText {
		return 0, "", fmt.Errorf("corrupt acknowledgement (%d bytes of text)", n)
	}
	msg := make([]byte, n)
	if _, err := io.ReadFull(r, msg); err != nil {
		return 0, "", err
	}
	return binary.LittleEndian.Uint64(b[0:]), string(msg), nil
}

// Control messages: one JSON object per frame, after a u32 length.
const maxControl = 64 << 20

func writeControl(w *bufio.Writer, m *message) error {
	body, err := json.Marshal(m)
	if err != nil {
		return err
	}
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(len(body)))
	w.Write(b[:])
	w.Write(body)
	return w.Flush()
}

func readControl(r io.Reader) (*message, error) {
	var b [4]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint32(b[:])
	if n > maxControl {
		return nil, fmt.Errorf("corrupt control message (%d bytes)", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	m := &message{}
	if err := json.Unmarshal(body, m); err != nil {
		return nil, fmt.Errorf("corrupt control message: %w", err)
	}
	return m, nil
}
