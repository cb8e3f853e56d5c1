package cluster

import (
	"fmt"
	"time"

	"gostachio/costmodel"
	ecluster "gostachio/engine/cluster"
	"gostachio/sim"
)

// The emulated link's ports as the simulator sees them (sim.Profile's
// nic_line_rate and nic_port), derived from the shaping alone.
//
// Every veth end is a tbf: a token bucket of burst bytes in front of a
// drop-tail queue of limit bytes (ecluster.Link.QueueBytes). The workers' TCP
// connections push into their own end's queue; a connection that starts
// a transfer while the others' windows fill that queue has its first
// segments dropped by the qdisc with nothing in flight, and waits for its
// probe timer (Linux: the retransmission timeout, at least 200 ms) before
// it moves. Measured on the 2-core development VM (2026-11-27): `ss` in the
// workers' namespaces showed such connections in the persist timer with
// 144–244 ms left at their first sighting, 3–10 times per query at
// 100 Mbit/s under the default queue; all-to-all bursts of 208 KiB per pair
// moved at 0.91 of the payload rate and of 224 KiB at 0.20.

// portWindow is what one connection pushes into its port at once in the
// simulator's stall rule (sim.PortSpec.Window). The bursts bound it from
// below: at 224 KiB per pair the third transfer of a worker found the
// port full, so two windows of min(224 KiB, window) filled it (window ≥
// 218 KiB under the default queue); q9's last exchange of 525 KiB per
// pair stalled one transfer per worker, not two, so one window does not
// fill it (window < 436 KiB).
const portWindow = 256 << 10

// gsoSegment is the most a veth passes in one segment: the port holds its
// queue and the segment on the wire.
const gsoSegment = 64 << 10

// tcpRTOMin is Linux's floor on the retransmission (and probe) timer.
const tcpRTOMin = 200 * time.Millisecond

// lossyPort returns the nic_port of a cluster of nodes workers on link l,
// with a note saying where it comes from, and false where its ports cannot
// stall a transfer: an all-to-all exchange puts at most nodes-1 transfers
// on a worker's port, and the last finds nodes-2 windows pushed.
//
//	buffer = tbf limit + one 64 KiB segment
//	stall  = 200 ms + limit / rate  (the probe timer: Linux's floor plus
//	         the round trip of a connection whose packets wait in its full queue)
func lossyPort(l ecluster.Link, nodes int) (*sim.PortSpec, string, bool) {
	if l.Rate <= 0 || nodes < 3 {
		return nil, "", false
	}
	limit := l.QueueBytes()
	buffer := limit + gsoSegment
	if int64(nodes-2)*portWindow < buffer {
		return nil, "", false
	}
	queueDelay := time.Duration(float64(limit) / (float64(l.Rate) / 8) * float64(time.Second))
	stall := (tcpRTOMin + queueDelay).Round(time.Millisecond)
	port := &sim.PortSpec{Buffer: costmodel.Bytes(buffer), Window: portWindow, Stall: costmodel.Duration(stall.Nanoseconds())}
	why := fmt.Sprintf("nic_port: the link's shaper drops what its queue cannot hold, and TCP waits (sim.PortSpec): "+
		"buffer the tbf queue's limit on --link %s, %d B, and one 64 KiB segment on the wire; "+
		"window a connection's push, which bursts and the queries' exchanges bound to [218, 436) KiB on the 2-core development VM; "+
		"stall Linux's 200 ms floor on the probe timer and the %v a full queue adds to the round trip",
		l, limit, queueDelay.Round(100*time.Microsecond))
	return port, why, true
}
