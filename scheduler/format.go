package scheduler

import (
	"fmt"
	"strings"
)

// String describes t in one line, for scenario tests, logs and debugging:
// id, kind, worker, resource, pipeline/unit, what it moves or computes, and
// its dependencies.
func (t *Task) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d %s", t.ID, t.Kind)
	if t.Meta {
		b.WriteString("(meta)")
	}
	fmt.Fprintf(&b, " n%d", t.Node)
	if t.Device >= 0 {
		fmt.Fprintf(&b, " d%d", t.Device)
	}
	fmt.Fprintf(&b, " %s p%d", t.Res, t.Pipeline)
	if t.Unit >= 0 {
		fmt.Fprintf(&b, " u%d", t.Unit)
	}
	switch t.Kind {
	case TaskRead:
		if t.Chunk >= 0 {
			fmt.Fprintf(&b, " chunk=%d", t.Chunk)
		}
		if t.Column >= 0 {
			fmt.Fprintf(&b, " cols=%d+%d", t.Column, t.Columns)
		}
		fmt.Fprintf(&b, " off=%d %dB", t.Offset, t.Bytes)
	case TaskH2D, TaskD2H:
		fmt.Fprintf(&b, " %dB %dr", t.Bytes, t.Rows)
	case TaskKernel, TaskMerge:
		names := make([]string, len(t.Ops))
		for i := range t.Ops {
			names[i] = t.Ops[i].Kind.String()
		}
		fmt.Fprintf(&b, " [%s] in=%dr/%dB est=%dr/%dB", strings.Join(names, ">"), t.Rows, t.Bytes, t.EstRows, t.EstBytes)
		if t.Parts > 0 {
			fmt.Fprintf(&b, " parts=%d", t.Parts)
		}
	case TaskSend:
		fmt.Fprintf(&b, " ->n%d d%d %dB %dr", t.Peer.Node, t.PeerDevice, t.Bytes, t.Rows)
	}
	if len(t.Deps) > 0 {
		fmt.Fprintf(&b, " deps=%v", t.Deps)
	}
	return b.String()
}
