package traces

import (
	"fmt"
	"path/filepath"
	"strings"
)

// QueryPaths names the trace files of one command that runs a list of
// queries (`gostachio query --query q3,q9 --trace t.json`, and its cluster
// form): with one query the trace goes to the path given; with several,
// each to the path with "-NAME" before its extension (t-q3.json), and a
// query listed more than once gets one file per run, "-NAME-K" for its
// K-th run (t-q3-1.json, t-q3-2.json), so that no run's trace overwrites
// another's. Not safe for concurrent use.
type QueryPaths struct {
	path  string
	many  bool
	count map[string]int // runs of each name in the list
	seen  map[string]int // runs named so far
}

// NewQueryPaths returns the namer of the trace files of a run of names, in
// that order, with path the --trace given.
func NewQueryPaths(path string, names []string) *QueryPaths {
	p := &QueryPaths{path: path, many: len(names) > 1, count: map[string]int{}, seen: map[string]int{}}
	for _, n := range names {
		p.count[n]++
	}
	return p
}

// Next returns the trace path of the next run of query name. A name not in
// the list, or run more often than listed, is numbered on past its count.
func (p *QueryPaths) Next(name string) string {
	p.seen[name]++
	if !p.many {
		return p.path
	}
	ext := filepath.Ext(p.path)
	base := strings.TrimSuffix(p.path, ext) + "-" + name
	if k := p.seen[name]; k > 1 || p.count[name] > 1 {
		base += fmt.Sprintf("-%d", k)
	}
	return base + ext
}
