package cpu

import (
	"bytes"
	"sync"
)

// Matcher is a compiled SQL LIKE pattern: '%' matches any run of bytes
// (empty included), '_' exactly one byte, every other byte itself; there is
// no escape character, so a pattern cannot match a literal '%' or '_'
// specially. Matching is byte-based (no UTF-8 decoding, no case folding).
//
// A Matcher is immutable after CompileLike and safe for concurrent use;
// Match does not allocate.
type Matcher struct {
	pattern string
	// exact: the pattern has no '%'; the value must have exactly head's
	// length and match it.
	exact bool
	head  lkSeg   // bytes before the first '%' (anchored at the start)
	tail  lkSeg   // bytes after the last '%' (anchored at the end)
	mids  []lkSeg // non-empty runs between '%'s, found left to right
	// minLen is the shortest value that can match: every segment's length.
	minLen int
}

// lkSeg is a run of pattern bytes without '%'. When wild is set it holds
// '_' wildcards and is compared byte by byte; otherwise it is compared with
// the bytes package (SIMD in the standard library).
type lkSeg struct {
	lit  []byte
	wild bool
}

// CompileLike compiles a LIKE pattern. Every string is a valid pattern.
func CompileLike(pattern string) *Matcher {
	m := &Matcher{pattern: pattern}
	parts := bytes.Split([]byte(pattern), []byte("%"))
	seg := func(p []byte) lkSeg {
		m.minLen += len(p)
		return lkSeg{lit: p, wild: bytes.IndexByte(p, '_') >= 0}
	}
	if len(parts) == 1 {
		m.exact = true
		m.head = seg(parts[0])
		return m
	}
	m.head = seg(parts[0])
	m.tail = seg(parts[len(parts)-1])
	for _, p := range parts[1 : len(parts)-1] {
		// "%%" is one '%': empty runs between them constrain nothing.
		if len(p) > 0 {
			m.mids = append(m.mids, seg(p))
		}
	}
	return m
}

// String returns the pattern.
func (m *Matcher) String() string { return m.pattern }

// Match reports whether s matches the whole pattern.
func (m *Matcher) Match(s []byte) bool {
	if m.exact {
		return len(s) == len(m.head.lit) && m.head.eq(s)
	}
	if len(s) < m.minLen {
		return false
	}
	h, t := len(m.head.lit), len(m.tail.lit)
	if !m.head.eq(s[:h]) || !m.tail.eq(s[len(s)-t:]) {
		return false
	}
	// The middle runs have fixed lengths, so placing each at its leftmost
	// occurrence after the previous one is never worse than any later
	// placement: a greedy left-to-right scan decides the match.
	rest := s[h : len(s)-t]
	for i := range m.mids {
		seg := &m.mids[i]
		j := seg.index(rest)
		if j < 0 {
			return false
		}
		rest = rest[j+len(seg.lit):]
	}
	return true
}

// eq reports whether s (of the segment's length) matches the segment.
func (g *lkSeg) eq(s []byte) bool {
	if !g.wild {
		return bytes.Equal(s, g.lit)
	}
	for i, c := range g.lit {
		if c != '_' && s[i] != c {
			return false
		}
	}
	return true
}

// index returns the first position where the segment matches in s, or -1.
func (g *lkSeg) index(s []byte) int {
	if !g.wild {
		return bytes.Index(s, g.lit)
	}
	for j := 0; j+len(g.lit) <= len(s); j++ {
		if g.eq(s[j : j+len(g.lit)]) {
			return j
		}
	}
	return -1
}

// lkCache maps a pattern string to its *Matcher, so that evaluating a LIKE
// predicate batch after batch compiles the pattern once per process.
var lkCache sync.Map

// lkMatcher returns the cached compiled matcher of pattern.
func lkMatcher(pattern string) *Matcher {
	if m, ok := lkCache.Load(pattern); ok {
		return m.(*Matcher)
	}
	m, _ := lkCache.LoadOrStore(pattern, CompileLike(pattern))
	return m.(*Matcher)
}
