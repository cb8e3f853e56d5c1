package sim

import (
	"fmt"
	"slices"

	"gostachio/costmodel"
)

// PortSpec is a NIC egress port that drops what it cannot hold, as a
// Linux qdisc of bounded length does on an emulated link (tc tbf), with
// TCP connections pushing into it.
//
// A connection starting a transfer, with nothing of its own in flight,
// pushes up to Window bytes into the port at once. If the bytes the
// port's other transfers have pushed and not yet sent,
//
//	pushed = Σ min(remaining_i, Window)
//
// over the transfers already moving through the port, reach Buffer, its
// first segment finds the port full and is dropped; with nothing else in
// flight nothing signals the loss, and the connection waits out its
// retransmission (or probe) timer, Stall, before it moves. A transfer
// that follows another on its connection at once (node.ordered_sends: the
// pair's next frame) has its predecessor's bytes in flight, recovers a
// drop from their acknowledgements, and does not stall.
//
// Under a buffer larger than (nodes-2)·Window nothing stalls: an
// all-to-all exchange puts at most nodes-1 transfers on a port, and the
// last finds at most nodes-2 windows pushed.
type PortSpec struct {
	// Buffer is what the port holds before it drops: its queue and what
	// is on the wire (cluster bench-sim: the tbf limit and one 64 KiB
	// segment).
	Buffer costmodel.Bytes `yaml:"buffer"`
	// Window is what one connection pushes into the port at once (its
	// congestion window, as the fabric's bursts bound it).
	Window costmodel.Bytes `yaml:"window"`
	// Stall is how long a transfer that finds the port full waits before
	// it moves (TCP's retransmission timer: at least 200 ms on Linux).
	Stall costmodel.Duration `yaml:"stall"`
}

func (s *PortSpec) validate() error {
	switch {
	case s == nil:
		return nil
	case s.Buffer <= 0 || s.Window <= 0:
		return fmt.Errorf("buffer %d and window %d must be positive", s.Buffer, s.Window)
	case s.Stall <= 0:
		return fmt.Errorf("stall must be positive")
	}
	return nil
}

// portSends are the transfers moving through one egress port (the rec of
// each send flow), for the stall rule of PortSpec.
type portSends struct {
	recs []int32
}

// stall is how long the send about to start on port through c's lossy
// port waits before it moves: PortSpec.Stall if the other transfers'
// pushed bytes fill the buffer, 0 otherwise (and with no NICPort).
func (c *Cluster) stall(port LinkID) int64 {
	s := c.prof.NICPort
	if s == nil {
		return 0
	}
	ps := c.ports[port]
	if ps == nil {
		return 0
	}
	now := c.net.Now()
	var pushed float64
	for _, r := range ps.recs {
		x := c.recs[r].x
		if x.moving > now {
			continue // itself waiting out a stall: nothing pushed yet
		}
		pushed += min(c.net.Remaining(x.flow), float64(s.Window))
	}
	if pushed >= float64(s.Buffer) {
		return s.Stall.Ns()
	}
	return 0
}

// joinPort records send flow r, which moves from moving on, as a
// transfer through port.
func (c *Cluster) joinPort(port LinkID, r int32, flow FlowID, moving int64) {
	if c.ports == nil {
		c.ports = map[LinkID]*portSends{}
	}
	ps := c.ports[port]
	if ps == nil {
		ps = &portSends{}
		c.ports[port] = ps
	}
	ps.recs = append(ps.recs, r)
	x := c.extra(r)
	x.flow, x.moving, x.port = flow, moving, port+1
}

// leavePort forgets the finished send flow r.
func (c *Cluster) leavePort(r int32) {
	x := c.recs[r].x
	if x == nil || x.port == 0 {
		return
	}
	port := x.port - 1
	ps := c.ports[port]
	if i := slices.Index(ps.recs, r); i >= 0 {
		ps.recs = slices.Delete(ps.recs, i, i+1)
	}
}
