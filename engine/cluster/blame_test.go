package cluster

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"
)

// blameSession is a coordinator of three workers with queued events.
func blameSession(evs ...event) *session {
	s := &session{o: Options{World: 3}, timeout: 2 * time.Second, peers: []Peer{{Pid: 100}, {Pid: 101}, {Pid: 102}}, events: make(chan event, len(evs))}
	s.ctx, s.cancel = context.WithCancelCause(context.Background())
	for _, ev := range evs {
		s.events <- ev
	}
	return s
}

func report(rank, blame int, msg string) event {
	return event{rank: rank, m: &message{T: "error", Err: msg, Blame: &blame}}
}

// A killed worker never reports; the workers whose exchanges with it
// broke do, and may exit before its loss reaches the coordinator. The
// failure is still blamed on the killed worker: a worker that reported
// and then left is no evidence (this once named worker 0, whose data a
// worker found rejected because worker 0 had already given up the query).
func TestFailureBlamesTheKilledWorker(t *testing.T) {
	first := report(2, 0, "rejected data: worker 0 is not running query 3")
	s := blameSession(
		report(0, 1, "exchange with worker 1: connection reset"),
		event{rank: 2, err: io.EOF}, // worker 2 exits after its report
		event{rank: 1, err: io.EOF}, // the killed worker's connection
	)
	var we *WorkerError
	if err := s.failure(first); !errors.As(err, &we) || we.Rank != 1 || we.Pid != 101 {
		t.Fatalf("failure blamed %v, want worker 1 (pid 101)", err)
	}
}

// Without any lost connection the first report decides, after the grace.
func TestFailureWithoutLossBlamesTheReport(t *testing.T) {
	first := report(2, 0, "exchange with worker 0: timeout")
	s := blameSession(event{rank: 2, err: io.EOF})
	var we *WorkerError
	if err := s.failure(first); !errors.As(err, &we) || we.Rank != 0 {
		t.Fatalf("failure blamed %v, want worker 0 (named by worker 2's report)", err)
	}
}
