//go:build !rdma || !cgo

package rdma

// Available reports whether this build has verbs: it has not (no rdma
// tag, or no cgo), so the main build stays cgo-free.
func Available() bool { return false }

// Context is an open device port; without verbs none can be opened.
type Context struct{}

// Open fails with ErrNoRDMA: this build has no verbs.
func Open(name string, port, gidIndex int) (*Context, error) { return nil, ErrNoRDMA }

// Close does nothing (no Context is ever open without verbs).
func (c *Context) Close() error { return nil }
