package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestBurstPeers runs the burst protocol between two in-process peers on
// loopback: each round reports when the peer's frames were acknowledged
// and the other's stored, and a line that is not "go UNIX_NS" ends the
// peer with an error naming it.
func TestBurstPeers(t *testing.T) {
	// The peers tune this process's collector as a worker's; advising 4
	// GiB of a heap that earlier tests used would zero it all (seconds).
	t.Setenv("GOSTACHIO_THP", "0")
	var addrs []string
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, ln.Addr().String())
		ln.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type peer struct {
		in   *io.PipeWriter
		out  *bufio.Scanner
		errc chan error
	}
	var peers []peer
	for r := range 2 {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		p := peer{in: inW, out: bufio.NewScanner(outR), errc: make(chan error, 1)}
		go func() {
			err := RunBurstPeer(ctx, BurstPeerOptions{Rank: r, Peers: addrs, Frames: 3, FrameBytes: 64 << 10, Streams: 2}, inR, outW)
			outW.Close()
			p.errc <- err
		}()
		peers = append(peers, p)
	}
	for r, p := range peers {
		if !p.out.Scan() || p.out.Text() != "ready" {
			t.Fatalf("peer %d: %q, want ready (%v)", r, p.out.Text(), p.out.Err())
		}
	}
	for round := range 2 {
		t0 := time.Now().Add(10 * time.Millisecond).UnixNano()
		for _, p := range peers {
			fmt.Fprintf(p.in, "go %d\n", t0)
		}
		for r, p := range peers {
			var rep BurstPeerRound
			if !p.out.Scan() || json.Unmarshal(p.out.Bytes(), &rep) != nil {
				t.Fatalf("peer %d, round %d: %q", r, round, p.out.Text())
			}
			if rep.End < t0 || rep.End > time.Now().UnixNano() {
				t.Errorf("peer %d, round %d: end %d outside [%d, now]", r, round, rep.End, t0)
			}
		}
	}
	// Staggered: worker 0's frames to worker 1 start 30 ms late, so it
	// ends no sooner.
	t0 := time.Now().Add(10 * time.Millisecond).UnixNano()
	fmt.Fprintf(peers[0].in, "go %d 0,30000000\n", t0)
	fmt.Fprintf(peers[1].in, "go %d 0,0\n", t0)
	for r, p := range peers {
		var rep BurstPeerRound
		if !p.out.Scan() || json.Unmarshal(p.out.Bytes(), &rep) != nil {
			t.Fatalf("peer %d, staggered round: %q", r, p.out.Text())
		}
		if rep.End < t0+30_000_000 {
			t.Errorf("peer %d ended %v after the start, before worker 0's frames to worker 1 started", r, time.Duration(rep.End-t0))
		}
	}
	fmt.Fprintln(peers[0].in, "start now")
	if err := <-peers[0].errc; err == nil || !strings.Contains(err.Error(), `"start now"`) {
		t.Errorf("bad line: err %v, want one quoting it", err)
	}
	peers[1].in.Close()
	if err := <-peers[1].errc; err != nil {
		t.Errorf("peer 1 at the end of its input: %v", err)
	}
	for _, o := range []BurstPeerOptions{{Rank: 2, Peers: addrs, Frames: 1, FrameBytes: 64, Streams: 1}, {Rank: 0, Peers: addrs[:1], Frames: 1, FrameBytes: 64, Streams: 1},
		{Rank: 0, Peers: addrs, Frames: 0, FrameBytes: 64, Streams: 1}} {
		if err := RunBurstPeer(ctx, o, strings.NewReader(""), io.Discard); err == nil {
			t.Errorf("%+v: accepted", o)
		}
	}
}

// TestParseBurstGo reads the round lines a burst peer takes and refuses
// others, naming the line.
func TestParseBurstGo(t *testing.T) {
	t0, offs, err := parseBurstGo("go 123 0,5,7", 3)
	if err != nil || t0 != 123 || !slices.Equal(offs, []int64{0, 5, 7}) {
		t.Errorf("go 123 0,5,7: %d %v %v", t0, offs, err)
	}
	if t0, offs, err := parseBurstGo("go 9", 2); err != nil || t0 != 9 || !slices.Equal(offs, []int64{0, 0}) {
		t.Errorf("go 9: %d %v %v", t0, offs, err)
	}
	for _, bad := range []string{"", "go", "start 5", "go x", "go 1 0,1", "go 1 0,1,-2", "go 1 0,a,2", "go 1 0,1,2 extra"} {
		if _, _, err := parseBurstGo(bad, 3); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", bad)) {
			t.Errorf("%q: err %v", bad, err)
		}
	}
}
