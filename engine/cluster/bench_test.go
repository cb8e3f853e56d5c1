package cluster

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"gostachio/kernels/cpu"
)

// BenchmarkExchangeLoopback moves 1 MiB frames from one data plane to
// another over loopback TCP in this process, 4 sends in flight (the
// receiver drops what it stores). `gostachio cluster bench-exchange`
// compares the same path, in two processes, with iperf3.
func BenchmarkExchangeLoopback(b *testing.B) {
	planes := make([]*dataPlane, 2)
	addrs := make([]string, 2)
	for r := range planes {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		addrs[r] = ln.Addr().String()
		planes[r] = newDataPlane(r, 2, ln, 10*time.Second, func(q, pipe, dev int, batches []*cpu.Batch, l *recvLease) error { l.Release(); return nil },
			func(string, ...any) {})
	}
	defer func() {
		for _, dp := range planes {
			dp.close()
		}
	}()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	d := &net.Dialer{}
	for r, dp := range planes {
		wg.Go(func() {
			errs[r] = dp.connect(context.Background(), addrs, d.DialContext, time.Now().Add(10*time.Second))
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	frame := benchBatch(1 << 20)
	b.SetBytes(frame.Bytes())
	b.ResetTimer()
	var next sync.Mutex
	left := b.N
	var sendErr error
	var emu sync.Mutex
	for range 4 {
		wg.Go(func() {
			for {
				next.Lock()
				if left == 0 {
					next.Unlock()
					return
				}
				left--
				next.Unlock()
				if err := planes[0].send(context.Background(), 1, 1, 0, 0, []*cpu.Batch{frame}); err != nil {
					emu.Lock()
					sendErr = err
					emu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	if sendErr != nil {
		b.Fatal(sendErr)
	}
}
