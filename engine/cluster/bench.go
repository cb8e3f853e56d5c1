package cluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gostachio/engine"
	"gostachio/internal/stats"
	"gostachio/kernels/cpu"
)

// Exchange throughput against iperf3 (`gostachio cluster bench-exchange`):
// two processes of this binary, one sending frames to the other through
// the data plane (one TCP connection, Streams sends in flight, each
// waiting for its acknowledgement as the engine's sends do), and iperf3
// (one TCP stream) on the same path, alternating, Rounds times each.

// ExchangePeerOptions are one side of an exchange benchmark (the hidden
// `gostachio cluster exchange-peer`).
type ExchangePeerOptions struct {
	// Rank 0 sends, rank 1 receives.
	Rank int
	// Listen is this side's data address, Peer the other's (host:port).
	Listen, Peer string
	// Duration of the throughput measurement (sender).
	Duration time.Duration
	// Streams is the number of sends in flight; FrameBytes the payload of
	// one (int64 columns).
	Streams    int
	FrameBytes int64
}

// ExchangePeerResult is the sender's measurement.
type ExchangePeerResult struct {
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"`
	// AckMicros is the median time of a one-row send until its
	// acknowledgement (one round trip plus the store), in microseconds.
	AckMicros float64 `json:"ack_us"`
}

// RunExchangePeer is one side of the benchmark. The sender writes one
// ExchangePeerResult as JSON on stdout; the receiver stores (and drops)
// frames until stdin ends.
func RunExchangePeer(ctx context.Context, o ExchangePeerOptions, stdin io.Reader, stdout io.Writer) error {
	if o.Rank != 0 && o.Rank != 1 {
		return fmt.Errorf("cluster: exchange-peer: rank %d (0 sends, 1 receives)", o.Rank)
	}
	if o.Streams < 1 || o.FrameBytes < 8 || o.Duration <= 0 {
		return fmt.Errorf("cluster: exchange-peer: need streams >= 1, frame >= 8 bytes, duration > 0")
	}
	// The garbage collector as a worker sets it (frames are allocated as
	// they arrive, as in a query).
	defer engine.TuneGC()()
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("cluster: exchange-peer: %w", err)
	}
	var stored atomic.Int64
	// The consumer is done with a frame once counted: its memory goes
	// back to the data plane's pool, as a worker's does at a query's end.
	store := func(q, pipe, dev int, batches []*cpu.Batch, lease *recvLease) error {
		for _, b := range batches {
			stored.Add(int64(b.Rows))
		}
		lease.Release()
		return nil
	}
	timeout := 30 * time.Second
	dp := newDataPlane(o.Rank, 2, ln, timeout, store, func(string, ...any) {})
	defer dp.close()
	addrs := []string{o.Listen, o.Peer}
	if o.Rank == 1 {
		addrs = []string{o.Peer, o.Listen}
	}
	d := &net.Dialer{}
	if err := dp.connect(ctx, addrs, d.DialContext, time.Now().Add(20*time.Second)); err != nil {
		return fmt.Errorf("cluster: exchange-peer %d: %w", o.Rank, err)
	}
	if o.Rank == 1 {
		io.Copy(io.Discard, stdin)
		return nil
	}
	// Round trips first, on an idle connection.
	tiny := benchBatch(8)
	var acks []time.Duration
	for range 200 {
		t := time.Now()
		if err := dp.send(ctx, 1, 1, 0, 0, []*cpu.Batch{tiny}); err != nil {
			return fmt.Errorf("cluster: exchange-peer: %w", err)
		}
		acks = append(acks, time.Since(t))
	}
	slices.Sort(acks)
	frame := benchBatch(o.FrameBytes)
	var sent atomic.Int64
	var firstErr error
	var errOnce sync.Once
	start := time.Now()
	end := start.Add(o.Duration)
	var wg sync.WaitGroup
	for range o.Streams {
		wg.Go(func() {
			for time.Now().Before(end) {
				if err := dp.send(ctx, 1, 1, 0, 0, []*cpu.Batch{frame}); err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
				sent.Add(frame.Bytes())
			}
		})
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	if firstErr != nil {
		return fmt.Errorf("cluster: exchange-peer: %w", firstErr)
	}
	return json.NewEncoder(stdout).Encode(ExchangePeerResult{Bytes: sent.Load(), Seconds: secs,
		AckMicros: float64(acks[len(acks)/2].Nanoseconds()) / 1e3})
}

// benchBatch is a batch of four int64 columns of about n bytes
// (BenchFrameBytes exactly).
func benchBatch(n int64) *cpu.Batch {
	rows := int(BenchFrameBytes(n) / 32)
	b := &cpu.Batch{Rows: rows}
	for c := range 4 {
		v := make([]int64, rows)
		for i := range v {
			v[i] = int64(i*7 + c)
		}
		b.Names = append(b.Names, "c"+strconv.Itoa(c))
		b.Cols = append(b.Cols, cpu.Vec{Type: cpu.TInt64, I64: v})
	}
	return b
}

// ExchangeBenchOptions configure BenchExchange.
type ExchangeBenchOptions struct {
	// Exe is this binary (the peers run `Exe cluster exchange-peer`).
	Exe string
	// Netns adds the path between two network namespaces over their
	// veths and a bridge (root and iproute2 needed), shaped as Link.
	Netns bool
	Link  Link
	// Duration of each measurement (default 3 s), Rounds of each tool
	// (default 3), Streams and FrameBytes as ExchangePeerOptions
	// (default 4, 1 MiB).
	Duration   time.Duration
	Rounds     int
	Streams    int
	FrameBytes int64
}

// ExchangeBenchRow is one path's result: per round, bits per second.
type ExchangeBenchRow struct {
	Path     string    `json:"path"`
	Iperf3   []float64 `json:"iperf3_bps"`
	Exchange []float64 `json:"exchange_bps"`
	// Ratio is stats.Median(Exchange) / stats.Median(Iperf3).
	Ratio     float64 `json:"ratio"`
	AckMicros float64 `json:"ack_us"`
}

// BenchExchange measures the exchange against iperf3 on loopback and,
// with Netns, between two namespaces, alternating the tools, and prints a
// table on w.
func BenchExchange(ctx context.Context, o ExchangeBenchOptions, w io.Writer) ([]ExchangeBenchRow, error) {
	streamDefaults(&o.Duration, &o.Rounds, &o.Streams, &o.FrameBytes, 1<<20)
	if _, err := exec.LookPath("iperf3"); err != nil {
		return nil, fmt.Errorf("cluster: bench-exchange needs iperf3 (apt-get install -y iperf3): %w", err)
	}
	type path struct {
		name  string
		addrs [2]string
		cmd   func(side int, name string, args ...string) *exec.Cmd
	}
	var paths []path
	lo := path{name: "loopback", cmd: func(_ int, name string, args ...string) *exec.Cmd { return exec.Command(name, args...) }}
	lo.addrs = [2]string{"127.0.0.1", "127.0.0.1"}
	paths = append(paths, lo)
	if o.Netns {
		nn, err := NewNetnsPair(o.Link)
		if err != nil {
			return nil, err
		}
		defer nn.Close()
		if nn.Warning != "" {
			fmt.Fprintf(w, "warning: %s\n", nn.Warning)
		}
		paths = append(paths, path{name: "netns veth+bridge " + o.Link.String(), addrs: [2]string{nn.Addrs[0], nn.Addrs[1]},
			cmd: func(side int, name string, args ...string) *exec.Cmd { return nn.Exec(side, name, args...) }})
	}
	var rows []ExchangeBenchRow
	for _, p := range paths {
		row := ExchangeBenchRow{Path: p.name}
		var acks []float64
		for round := range o.Rounds {
			port := 5201 + 2*round
			bps, err := runIperf3(ctx, p.addrs, port, o.Duration, p.cmd)
			if err != nil {
				return rows, fmt.Errorf("cluster: iperf3 on %s: %w", p.name, err)
			}
			row.Iperf3 = append(row.Iperf3, bps)
			res, err := RunExchangePair(ctx, o, p.addrs, port+1000, p.cmd)
			if err != nil {
				return rows, fmt.Errorf("cluster: exchange on %s: %w", p.name, err)
			}
			row.Exchange = append(row.Exchange, float64(res.Bytes)*8/res.Seconds)
			acks = append(acks, res.AckMicros)
		}
		row.Ratio = stats.Median(row.Exchange) / stats.Median(row.Iperf3)
		row.AckMicros = stats.Median(acks)
		rows = append(rows, row)
	}
	fmt.Fprintf(w, "exchange: 1 TCP connection, %d sends in flight, %d KiB frames; iperf3: 1 TCP stream; %v each, %d rounds alternating\n",
		o.Streams, o.FrameBytes>>10, o.Duration, o.Rounds)
	fmt.Fprintf(w, "%-34s %14s %14s %7s %10s\n", "path", "iperf3 Gbit/s", "ours Gbit/s", "ratio", "ack µs")
	for _, r := range rows {
		fmt.Fprintf(w, "%-34s %14.2f %14.2f %6.0f%% %10.0f\n", r.Path, stats.Median(r.Iperf3)/1e9, stats.Median(r.Exchange)/1e9, 100*r.Ratio, r.AckMicros)
	}
	return rows, nil
}

// streamDefaults fills in a stream measurement's zero options: 3 s, 3
// rounds, 4 sends in flight, frames of frameDefault bytes.
func streamDefaults(d *time.Duration, rounds, streams *int, frame *int64, frameDefault int64) {
	if *d <= 0 {
		*d = 3 * time.Second
	}
	if *rounds <= 0 {
		*rounds = 3
	}
	if *streams <= 0 {
		*streams = 4
	}
	if *frame <= 0 {
		*frame = frameDefault
	}
}

// NewNetnsPair makes two namespaces joined by a bridge, shaped as link,
// under a fresh run id (root and iproute2 needed); the caller closes it.
func NewNetnsPair(link Link) (*Netns, error) {
	id, err := NewNetnsID()
	if err != nil {
		return nil, err
	}
	return NewNetns(id, 2, link)
}

// runIperf3 runs an iperf3 server on side 1 and a client on side 0 and
// returns the received bits per second.
func runIperf3(ctx context.Context, addrs [2]string, port int, d time.Duration,
	mk func(side int, name string, args ...string) *exec.Cmd) (float64, error) {
	srv := mk(1, "iperf3", "-s", "-1", "-B", addrs[1], "-p", strconv.Itoa(port))
	var srvErr bytes.Buffer
	srv.Stdout, srv.Stderr = io.Discard, &srvErr
	if err := srv.Start(); err != nil {
		return 0, err
	}
	defer func() {
		srv.Process.Kill()
		srv.Wait()
	}()
	type report struct {
		Error string `json:"error"`
		End   struct {
			SumReceived struct {
				Bps float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		} `json:"end"`
	}
	for try := 0; ; try++ {
		cli := mk(0, "iperf3", "-c", addrs[1], "-p", strconv.Itoa(port), "-t", strconv.FormatFloat(d.Seconds(), 'f', 1, 64), "-J")
		out, err := cli.Output()
		var rep report
		jerr := json.Unmarshal(out, &rep)
		if err == nil && jerr == nil && rep.Error == "" && rep.End.SumReceived.Bps > 0 {
			return rep.End.SumReceived.Bps, nil
		}
		// iperf3 -J reports a refused connection (the server is not
		// listening yet) in "error", with or without a failed exit.
		if try == 50 || ctx.Err() != nil || (rep.Error != "" && !strings.Contains(rep.Error, "unable to connect")) {
			return 0, fmt.Errorf("iperf3 client: %v %s: %.300s; server: %s", err, rep.Error, bytes.TrimSpace(out), srvErr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// RunExchangePair runs the two sides of `Exe cluster exchange-peer` for
// o.Duration (o.Streams sends of o.FrameBytes in flight), the receiver at
// addrs[1] and the sender at addrs[0], on ports port and port+1, each
// started by mk (side 0 or 1: e.g. Netns.Exec), and returns the sender's
// measurement.
func RunExchangePair(ctx context.Context, o ExchangeBenchOptions, addrs [2]string, port int,
	mk func(side int, name string, args ...string) *exec.Cmd) (ExchangePeerResult, error) {
	var res ExchangePeerResult
	ep := [2]string{net.JoinHostPort(addrs[0], strconv.Itoa(port)), net.JoinHostPort(addrs[1], strconv.Itoa(port+1))}
	args := func(rank int) []string {
		return []string{"cluster", "exchange-peer", "--rank", strconv.Itoa(rank), "--listen", ep[rank], "--peer", ep[1-rank],
			"--duration", o.Duration.String(), "--streams", strconv.Itoa(o.Streams), "--frame", strconv.FormatInt(o.FrameBytes, 10)}
	}
	recv := mk(1, o.Exe, args(1)...)
	var recvErr bytes.Buffer
	recv.Stderr = &recvErr
	stdin, err := recv.StdinPipe()
	if err != nil {
		return res, err
	}
	if err := recv.Start(); err != nil {
		return res, err
	}
	defer func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { recv.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			recv.Process.Kill()
			<-done
		}
	}()
	send := mk(0, o.Exe, args(0)...)
	var sendErr bytes.Buffer
	send.Stderr = &sendErr
	out, err := send.Output()
	if err != nil {
		return res, fmt.Errorf("sender: %w: %s; receiver: %s", err, strings.TrimSpace(sendErr.String()), strings.TrimSpace(recvErr.String()))
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if json.Unmarshal(sc.Bytes(), &res) == nil && res.Seconds > 0 {
			return res, nil
		}
	}
	return res, errors.New("sender printed no result")
}

// BenchFrameBytes is the payload of a benchmark frame of about n bytes
// as the exchange and burst peers send it: whole rows of four int64
// columns, at least one.
func BenchFrameBytes(n int64) int64 { return max(n/32, 1) * 32 }
