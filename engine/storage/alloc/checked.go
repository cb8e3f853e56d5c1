package alloc

import (
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
)

// Checked wraps an Allocator and remembers every live buffer with the call site that allocated
// it, so a test can assert that everything was released (Check) and see where a leak came from.
type Checked struct {
	inner Allocator

	mu    sync.Mutex
	live  map[*Buffer]string // buffer → allocation site
	bytes int64
	total int
}

var _ Allocator = (*Checked)(nil)

// NewChecked wraps inner.
func NewChecked(inner Allocator) *Checked {
	return &Checked{inner: inner, live: make(map[*Buffer]string)}
}

// Alloc implements Allocator, recording the caller.
func (c *Checked) Alloc(size int) (*Buffer, error) {
	b, err := c.inner.Alloc(size)
	if err != nil {
		return nil, err
	}
	site := callers()
	c.mu.Lock()
	c.live[b] = site
	c.bytes += int64(b.Len())
	c.total++
	c.mu.Unlock()
	b.onFree = c.forget
	return b, nil
}

func (c *Checked) forget(b *Buffer) {
	c.mu.Lock()
	if _, ok := c.live[b]; ok {
		delete(c.live, b)
		c.bytes -= int64(b.Len())
	}
	c.mu.Unlock()
}

// Arena implements Allocator.
func (c *Checked) Arena() []byte { return c.inner.Arena() }

// Stats implements Allocator (the inner allocator's figures).
func (c *Checked) Stats() Stats { return c.inner.Stats() }

// Outstanding returns the number of live buffers and their requested bytes.
func (c *Checked) Outstanding() (buffers int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.live), c.bytes
}

// Allocated returns how many buffers were ever allocated through c.
func (c *Checked) Allocated() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// Check returns nil when every buffer was released, else an error listing the leaks with their
// allocation sites.
func (c *Checked) Check() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.live) == 0 {
		return nil
	}
	lines := make([]string, 0, len(c.live))
	for b, site := range c.live {
		lines = append(lines, fmt.Sprintf("  %d bytes (%d refs) allocated at %s", b.Len(), b.Refs(), site))
	}
	sort.Strings(lines)
	return fmt.Errorf("engine/storage/alloc: %d buffers (%d bytes) not released:\n%s", len(c.live), c.bytes, strings.Join(lines, "\n"))
}

// callers names the three frames above Alloc.
func callers() string {
	pcs := make([]uintptr, 8)
	n := runtime.Callers(3, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	var parts []string
	for {
		f, more := frames.Next()
		parts = append(parts, fmt.Sprintf("%s:%d", f.Function, f.Line))
		if !more || len(parts) == 3 {
			break
		}
	}
	return strings.Join(parts, " < ")
}
