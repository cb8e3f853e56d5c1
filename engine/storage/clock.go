package storage

import "time"

// Clock gives the reader's timestamps: the time elapsed since some fixed origin (the reader's
// start). It is injected so tests get deterministic timings and traces can share one origin.
type Clock interface {
	Now() time.Duration
}

// MonotonicClock measures time since its creation with Go's monotonic clock.
type MonotonicClock struct{ origin time.Time }

var _ Clock = (*MonotonicClock)(nil)

// NewMonotonicClock starts a clock at zero now.
func NewMonotonicClock() *MonotonicClock { return &MonotonicClock{origin: time.Now()} }

// Now implements Clock.
func (c *MonotonicClock) Now() time.Duration { return time.Since(c.origin) }
