package rdma

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrNoRDMA: this build has no verbs (built without the rdma tag, or
// without cgo).
var ErrNoRDMA = errors.New("rdma: gostachio was built without the rdma tag (go build -tags rdma, needs cgo and libibverbs-dev)")

// Endpoint is what a peer needs to connect its queue pair to one of ours:
// exchanged over an existing connection before both sides move their
// queue pairs to ready-to-send.
type Endpoint struct {
	QPN uint32   // queue pair number
	PSN uint32   // first packet sequence number (24 bits)
	LID uint16   // port LID (InfiniBand; 0 on RoCE)
	GID [16]byte // port GID at the chosen index (RoCE, routed IB)
	MTU uint8    // active path MTU, ibv_mtu enumeration (1: 256 .. 5: 4096)
}

// EndpointBytes is the size of an encoded Endpoint.
const EndpointBytes = 4 + 4 + 4 + 2 + 16 + 1

// endpointMagic opens an encoded Endpoint, so that a peer speaking
// another protocol fails at once.
const endpointMagic = 0x47535251 // "GSRQ"

// MarshalBinary encodes e in EndpointBytes bytes (little endian).
func (e Endpoint) MarshalBinary() ([]byte, error) {
	b := make([]byte, EndpointBytes)
	le := binary.LittleEndian
	le.PutUint32(b[0:], endpointMagic)
	le.PutUint32(b[4:], e.QPN)
	le.PutUint32(b[8:], e.PSN)
	le.PutUint16(b[12:], e.LID)
	copy(b[14:30], e.GID[:])
	b[30] = e.MTU
	return b, nil
}

// UnmarshalBinary decodes what MarshalBinary wrote; a wrong size, magic,
// PSN or MTU is an error.
func (e *Endpoint) UnmarshalBinary(b []byte) error {
	if len(b) != EndpointBytes {
		return fmt.Errorf("rdma: queue pair address of %d bytes, want %d", len(b), EndpointBytes)
	}
	le := binary.LittleEndian
	if le.Uint32(b[0:]) != endpointMagic {
		return errors.New("rdma: peer did not send a queue pair address (does it use the rdma transport?)")
	}
	x := Endpoint{QPN: le.Uint32(b[4:]), PSN: le.Uint32(b[8:]), LID: le.Uint16(b[12:]), MTU: b[30]}
	copy(x.GID[:], b[14:30])
	if x.PSN >= 1<<24 {
		return fmt.Errorf("rdma: queue pair address with PSN %#x (24 bits)", x.PSN)
	}
	if x.MTU < 1 || x.MTU > 5 {
		return fmt.Errorf("rdma: queue pair address with MTU code %d (1..5)", x.MTU)
	}
	*e = x
	return nil
}

// PathMTU is the MTU both ends of a connection can use: the smaller
// ibv_mtu code.
func PathMTU(a, b Endpoint) uint8 { return min(a.MTU, b.MTU) }
