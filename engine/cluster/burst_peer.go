package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gostachio/engine"
	"gostachio/kernels/cpu"
)

// One worker of an all-to-all burst through the data plane (the hidden
// `gostachio cluster burst-peer`): the coordinator that starts the peers
// in an emulated cluster's namespaces, sends them the rounds' start
// times and times the rounds lives with the simulator's calibration
// (calibrate/cluster); the peer itself is the engine's data plane alone.

// BurstPeerOptions are one worker of a burst (the hidden `gostachio
// cluster burst-peer`).
type BurstPeerOptions struct {
	// Rank indexes Peers, every worker's data address (host:port).
	Rank  int
	Peers []string
	// Frames of FrameBytes to each other worker per round, Streams in
	// flight per peer.
	Frames     int
	FrameBytes int64
	Streams    int
}

// parseBurstGo reads a round's "go UNIX_NS [OFF,OFF,...]": the start, and
// the offset in ns of the sends to each of world workers (all 0 when
// not given).
func parseBurstGo(line string, world int) (t0 int64, offs []int64, err error) {
	f := strings.Fields(line)
	bad := fmt.Errorf("%q: want \"go UNIX_NS [NS,NS,...]\" with %d offsets of 0 ns or more", line, world)
	if len(f) < 2 || len(f) > 3 || f[0] != "go" {
		return 0, nil, bad
	}
	if t0, err = strconv.ParseInt(f[1], 10, 64); err != nil {
		return 0, nil, bad
	}
	offs = make([]int64, world)
	if len(f) == 3 {
		parts := strings.Split(f[2], ",")
		if len(parts) != world {
			return 0, nil, bad
		}
		for i, s := range parts {
			if offs[i], err = strconv.ParseInt(s, 10, 64); err != nil || offs[i] < 0 {
				return 0, nil, bad
			}
		}
	}
	return t0, offs, nil
}

// BurstPeerRound is a burst peer's report of one round, a JSON line on
// its stdout: when its last frame was acknowledged and the last frame for
// it stored (unix ns, this machine's clock).
type BurstPeerRound struct {
	End int64 `json:"end_ns"`
}

// RunBurstPeer is one worker of a burst: it connects to every other,
// prints "ready", then for each line "go T" on stdin waits until T (unix
// ns), sends Frames frames to every other worker and waits until as many
// from each have been stored, and prints a BurstPeerRound; it returns
// when stdin ends.
func RunBurstPeer(ctx context.Context, o BurstPeerOptions, stdin io.Reader, stdout io.Writer) error {
	world := len(o.Peers)
	if world < 2 || o.Rank < 0 || o.Rank >= world {
		return fmt.Errorf("cluster: burst-peer: rank %d of %d peers", o.Rank, world)
	}
	if o.Frames < 1 || o.FrameBytes < 8 || o.Streams < 1 {
		return fmt.Errorf("cluster: burst-peer: need frames >= 1, frame >= 8 bytes, streams >= 1")
	}
	defer engine.TuneGC()()
	ln, err := net.Listen("tcp", o.Peers[o.Rank])
	if err != nil {
		return fmt.Errorf("cluster: burst-peer: %w", err)
	}
	var stored atomic.Int64
	arrived := make(chan struct{}, 1)
	store := func(q, pipe, dev int, batches []*cpu.Batch, lease *recvLease) error {
		lease.Release()
		stored.Add(1)
		select {
		case arrived <- struct{}{}:
		default:
		}
		return nil
	}
	dp := newDataPlane(o.Rank, world, ln, 30*time.Second, store, func(string, ...any) {})
	defer dp.close()
	d := &net.Dialer{}
	if err := dp.connect(ctx, o.Peers, d.DialContext, time.Now().Add(20*time.Second)); err != nil {
		return fmt.Errorf("cluster: burst-peer %d: %w", o.Rank, err)
	}
	fmt.Fprintln(stdout, "ready")
	frame := benchBatch(o.FrameBytes)
	sc := bufio.NewScanner(stdin)
	for round := int64(1); sc.Scan(); round++ {
		t0, offs, err := parseBurstGo(sc.Text(), world)
		if err != nil {
			return fmt.Errorf("cluster: burst-peer: %w", err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, world*o.Streams)
		for peer := range world {
			if peer == o.Rank {
				continue
			}
			var left atomic.Int64
			left.Store(int64(o.Frames))
			start := time.Unix(0, t0+offs[peer])
			for range o.Streams {
				wg.Go(func() {
					time.Sleep(time.Until(start))
					for left.Add(-1) >= 0 {
						if err := dp.send(ctx, 1, peer, 0, 0, []*cpu.Batch{frame}); err != nil {
							errs <- err
							return
						}
					}
				})
			}
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			return fmt.Errorf("cluster: burst-peer %d: %w", o.Rank, err)
		}
		want := round * int64(o.Frames) * int64(world-1)
		deadline := time.After(30 * time.Second)
		for stored.Load() < want {
			select {
			case <-arrived:
			case <-deadline:
				return fmt.Errorf("cluster: burst-peer %d: %d of %d frames arrived in 30 s", o.Rank, stored.Load()-want+int64(o.Frames)*int64(world-1), int64(o.Frames)*int64(world-1))
			}
		}
		if err := json.NewEncoder(stdout).Encode(BurstPeerRound{End: time.Now().UnixNano()}); err != nil {
			return err
		}
	}
	return sc.Err()
}
