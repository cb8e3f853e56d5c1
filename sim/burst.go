package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"gostachio/scheduler"
)

// BurstMakespan is the simulated time, in ns, of an all-to-all burst on
// nodes nodes of profile p: every node sends frames frames of frameBytes
// bytes to every other node, all of them started at time 0, and the
// burst ends when the last frame has arrived. The frames move as a
// query's sends do (NIC egress and ingress, the network stack's CPU on
// the hosts with node.net_cpu_cost, one frame at a time per pair of nodes
// with node.ordered_sends), so a measured burst on the real fabric can be
// set against the same profile's (engine/cluster.MeasureBurst). starts,
// when not nil, staggers the pairs: the frames from src to dst start
// starts[src][dst] ns after time 0 (nodes × nodes, non-negative; the
// burst still ends when the last frame arrives). Errors: fewer than 2
// nodes, no frames, starts of another shape or negative, or an invalid
// profile.
func BurstMakespan(ctx context.Context, p *Profile, nodes, frames int, frameBytes int64, starts [][]int64) (int64, error) {
	if nodes < 2 || frames < 1 || frameBytes < 1 {
		return 0, fmt.Errorf("sim: burst: need 2 or more nodes, 1 or more frames of 1 or more bytes (got %d, %d, %d)", nodes, frames, frameBytes)
	}
	if starts != nil {
		if len(starts) != nodes {
			return 0, fmt.Errorf("sim: burst: starts for %d nodes, want %d", len(starts), nodes)
		}
		for src, row := range starts {
			if len(row) != nodes || slices.Min(row) < 0 {
				return 0, fmt.Errorf("sim: burst: starts of node %d: %v, want %d offsets of 0 ns or more", src, row, nodes)
			}
		}
	}
	c, err := NewCluster(p, nodes)
	if err != nil {
		return 0, err
	}
	if starts != nil {
		c.sendDelay = map[uint64]int64{}
	}
	tasks := make([]scheduler.Task, 0, nodes*(nodes-1)*frames)
	for src := range int32(nodes) {
		// Each node starts with the next after itself, as a query's
		// exchange does (scheduler.issueSends): which of a node's
		// transfers start last, and may find a lossy port full, is spread
		// over the receivers.
		for i := int32(1); i < int32(nodes); i++ {
			dst := (src + i) % int32(nodes)
			for k := range frames {
				id := len(tasks)
				if starts != nil && starts[src][dst] > 0 && (k == 0 || !p.Node.OrderedSends) {
					// Ordered, the pair's later frames follow its first in
					// turn; otherwise each waits as long itself.
					c.sendDelay[uint64(id)+1] = starts[src][dst]
				}
				tasks = append(tasks, scheduler.Task{ID: scheduler.TaskID(id), Kind: scheduler.TaskSend,
					Res: scheduler.Resource{Kind: scheduler.ResNICOut, Node: src}, Peer: scheduler.Resource{Kind: scheduler.ResNICIn, Node: dst},
					Node: src, PeerDevice: 0, Pipeline: -1, Unit: -1, Table: -1, Bytes: frameBytes, Tag: uint64(id) + 1})
			}
		}
	}
	for i := range tasks {
		if err := c.Start(&tasks[i]); err != nil {
			return 0, err
		}
	}
	var end int64
	for done := 0; ; done++ {
		comp, err := c.Next(ctx)
		if errors.Is(err, scheduler.ErrIdle) {
			if done != len(tasks) {
				return 0, fmt.Errorf("sim: burst: %d of %d frames arrived", done, len(tasks))
			}
			return end, nil
		}
		if err != nil {
			return 0, err
		}
		end = max(end, int64(comp.End))
	}
}
