package cluster

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"gostachio/engine/rdma"
	"gostachio/kernels/cpu"
)

// TestNewExchange: tcp (and "") give the TCP data plane; an unknown
// transport, and rdma where it cannot open (no rdma tag here, or no
// device), fail with a clear error, closing the listener, and return a
// nil Exchange.
func TestNewExchange(t *testing.T) {
	store := func(q, pipe, dev int, b []*cpu.Batch, l *recvLease) error { l.Release(); return nil }
	logf := func(string, ...any) {}
	listen := func() net.Listener {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return ln
	}
	for _, tr := range []string{"", TransportTCP} {
		ex, err := newExchange(tr, 0, 1, listen(), time.Second, store, logf)
		if err != nil {
			t.Fatalf("transport %q: %v", tr, err)
		}
		if _, ok := ex.(*dataPlane); !ok {
			t.Fatalf("transport %q gave %T", tr, ex)
		}
		ex.close()
	}
	fails := []string{"udp"}
	if _, err := rdma.Devices(); !rdma.Available() || err != nil {
		fails = append(fails, TransportRDMA)
	}
	for _, tr := range fails {
		ln := listen()
		ex, err := newExchange(tr, 0, 1, ln, time.Second, store, logf)
		if err == nil || ex != nil {
			t.Fatalf("transport %q: %v, %v; want an error", tr, ex, err)
		}
		if !strings.Contains(err.Error(), tr) {
			t.Errorf("transport %q: error %q does not name it", tr, err)
		}
		if tr == TransportRDMA && !rdma.Available() && !errors.Is(err, rdma.ErrNoRDMA) {
			t.Errorf("rdma without the tag: %v, want ErrNoRDMA", err)
		}
		if _, err := ln.Accept(); err == nil {
			t.Errorf("transport %q: listener left open", tr)
		}
	}
}
