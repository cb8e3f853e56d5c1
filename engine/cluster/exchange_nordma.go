//go:build !rdma || !cgo

package cluster

import (
	"fmt"
	"net"
	"time"

	"gostachio/engine/rdma"
)

// newRDMAExchange fails: this build has no verbs (see exchange_rdma.go).
func newRDMAExchange(rank, world int, ln net.Listener, timeout time.Duration,
	store storeFunc, log func(string, ...any)) (Exchange, error) {
	return nil, fmt.Errorf("cluster: transport rdma: built without the rdma tag (make build-rdma): %w", rdma.ErrNoRDMA)
}
