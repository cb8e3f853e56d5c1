package arrowipc

import (
	"encoding/binary"
	"fmt"
)

// fbTable is a bounds-checked view of one flatbuffer table: every accessor
// checks offsets against the buffer and returns an error wrapping
// ErrMalformed instead of panicking.
type fbTable struct {
	buf   []byte
	pos   int // start of the table (its soffset to the vtable)
	vt    int // start of the vtable
	vtLen int // vtable size in bytes
}

func malformed(format string, args ...any) error {
	return fmt.Errorf("arrowipc: %w: "+format, append([]any{ErrMalformed}, args...)...)
}

func fbU32(buf []byte, p int) (uint32, error) {
	if p < 0 || p > len(buf)-4 {
		return 0, malformed("read of 4 bytes at %d outside %d-byte flatbuffer", p, len(buf))
	}
	return binary.LittleEndian.Uint32(buf[p:]), nil
}

// fbRoot returns the root table of a finished flatbuffer.
func fbRoot(buf []byte) (fbTable, error) {
	off, err := fbU32(buf, 0)
	if err != nil {
		return fbTable{}, err
	}
	return fbTableAt(buf, int64(off))
}

func fbTableAt(buf []byte, pos int64) (fbTable, error) {
	if pos < 0 || pos > int64(len(buf))-4 {
		return fbTable{}, malformed("table at %d outside %d-byte flatbuffer", pos, len(buf))
	}
	p := int(pos)
	soff := int64(int32(binary.LittleEndian.Uint32(buf[p:])))
	vt := int64(p) - soff
	if vt < 0 || vt > int64(len(buf))-4 {
		return fbTable{}, malformed("vtable at %d outside %d-byte flatbuffer", vt, len(buf))
	}
	vtLen := int(binary.LittleEndian.Uint16(buf[vt:]))
	if vtLen < 4 || vtLen%2 != 0 || int(vt)+vtLen > len(buf) {
		return fbTable{}, malformed("vtable at %d has bad size %d", vt, vtLen)
	}
	return fbTable{buf: buf, pos: p, vt: int(vt), vtLen: vtLen}, nil
}

// field returns the absolute position of slot's value and whether the slot
// is present; size is the number of bytes the caller will read there.
func (t fbTable) field(slot, size int) (int, bool, error) {
	o := 4 + 2*slot
	if o+2 > t.vtLen {
		return 0, false, nil
	}
	rel := int(binary.LittleEndian.Uint16(t.buf[t.vt+o:]))
	if rel == 0 {
		return 0, false, nil
	}
	p := t.pos + rel
	if p+size > len(t.buf) {
		return 0, false, malformed("field %d at %d (+%d) outside %d-byte flatbuffer", slot, p, size, len(t.buf))
	}
	return p, true, nil
}

func (t fbTable) u8(slot int, def uint8) (uint8, error) {
	p, ok, err := t.field(slot, 1)
	if err != nil || !ok {
		return def, err
	}
	return t.buf[p], nil
}

func (t fbTable) i16(slot int, def int16) (int16, error) {
	p, ok, err := t.field(slot, 2)
	if err != nil || !ok {
		return def, err
	}
	return int16(binary.LittleEndian.Uint16(t.buf[p:])), nil
}

func (t fbTable) i32(slot int, def int32) (int32, error) {
	p, ok, err := t.field(slot, 4)
	if err != nil || !ok {
		return def, err
	}
	return int32(binary.LittleEndian.Uint32(t.buf[p:])), nil
}

func (t fbTable) i64(slot int, def int64) (int64, error) {
	p, ok, err := t.field(slot, 8)
	if err != nil || !ok {
		return def, err
	}
	return int64(binary.LittleEndian.Uint64(t.buf[p:])), nil
}

// ref follows the uoffset stored in slot and returns the absolute target.
func (t fbTable) ref(slot int) (int64, bool, error) {
	p, ok, err := t.field(slot, 4)
	if err != nil || !ok {
		return 0, ok, err
	}
	return int64(p) + int64(binary.LittleEndian.Uint32(t.buf[p:])), true, nil
}

func (t fbTable) table(slot int) (fbTable, bool, error) {
	p, ok, err := t.ref(slot)
	if err != nil || !ok {
		return fbTable{}, ok, err
	}
	sub, err := fbTableAt(t.buf, p)
	return sub, err == nil, err
}

// vector returns the position of the first element and the element count of
// the vector in slot, checking that n elements of elemSize bytes fit.
func (t fbTable) vector(slot, elemSize int) (int, int, error) {
	p, ok, err := t.ref(slot)
	if err != nil || !ok {
		return 0, 0, err
	}
	if p > int64(len(t.buf))-4 {
		return 0, 0, malformed("vector at %d outside %d-byte flatbuffer", p, len(t.buf))
	}
	n := int64(binary.LittleEndian.Uint32(t.buf[p:]))
	start := p + 4
	if n*int64(elemSize) > int64(len(t.buf))-start {
		return 0, 0, malformed("vector at %d of %d x %d bytes outside %d-byte flatbuffer", p, n, elemSize, len(t.buf))
	}
	return int(start), int(n), nil
}

// tableElem returns element i of a vector of tables starting at start.
func (t fbTable) tableElem(start, i int) (fbTable, error) {
	p := start + 4*i
	off, err := fbU32(t.buf, p)
	if err != nil {
		return fbTable{}, err
	}
	return fbTableAt(t.buf, int64(p)+int64(off))
}

func (t fbTable) str(slot int) (string, error) {
	start, n, err := t.vector(slot, 1)
	if err != nil {
		return "", err
	}
	return string(t.buf[start : start+n]), nil
}
