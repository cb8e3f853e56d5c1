package dbgen

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"gostachio/tpch/schema"
)

// The truth these tests check against is the TPC-H specification and
// official answer sets, never our own output:
//   - ../answers/<sf>/qNN.csv: the answer set shared with the project (from
//     DuckDB's TPC-H extension; it agrees with TPC's answers on every query
//     whose result does not depend on generated text);
//   - testdata/official_sf1_*.out: TPC's own answers (TPC-H Tools
//     answers/), for the queries where DuckDB's text columns differ (Q2, Q10,
//     Q13, Q15, Q20).

func day(y int, m time.Month, d int) int32 {
	return int32(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400)
}

// answer reads a shared answer file: header, then rows split on '|'.
func answer(t *testing.T, sf, q string) [][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "answers", sf, q+".csv"))
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]string
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if i > 0 {
			rows = append(rows, strings.Split(line, "|"))
		}
	}
	return rows
}

// official reads a TPC answer file (testdata/official_sf1_<q>.out): padded
// fields separated by '|'. Trailing padding is removed; leading spaces are
// kept (they can be data, e.g. an address starting with a blank), so
// numeric fields must be TrimSpace'd by the caller.
func official(t *testing.T, q string) [][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "official_sf1_"+q+".out"))
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]string
	for i, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if i == 0 {
			continue
		}
		f := strings.Split(line, "|")
		for j := range f {
			f[j] = strings.TrimRight(f[j], " ")
		}
		rows = append(rows, f)
	}
	return rows
}

// fixed formats an integer count of 10^-scale units like the answer sets.
func fixed(v int64, scale int) string {
	neg := v < 0
	if neg {
		v = -v
	}
	p := int64(1)
	for range scale {
		p *= 10
	}
	s := fmt.Sprintf("%d.%0*d", v/p, scale, v%p)
	if neg {
		s = "-" + s
	}
	return s
}

type tables struct {
	rows map[string]int
	b    map[string]*schema.Batch
}

// generateAll generates every table whole, in ranges of chunk units spread
// over GOMAXPROCS goroutines (exercising the skip-ahead), concatenated in
// order.
func generateAll(t *testing.T, g *Generator, chunk int64) *tables {
	t.Helper()
	out := &tables{rows: map[string]int{}, b: map[string]*schema.Batch{}}
	for _, tab := range []*schema.Table{&schema.Part, &schema.Supplier, &schema.Customer, &schema.Orders, &schema.Nation, &schema.Region} {
		units := g.Units(tab)
		nr := int((units + chunk - 1) / chunk)
		mains, children := make([]*schema.Batch, nr), make([]*schema.Batch, nr)
		errs := make([]error, nr)
		var wg sync.WaitGroup
		next := make(chan int, nr)
		for i := range nr {
			next <- i
		}
		close(next)
		for range runtime.GOMAXPROCS(0) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					first := int64(i) * chunk
					m, c, err := g.GenerateWithChild(tab, first, min(chunk, units-first))
					if err == nil {
						err = m.Validate()
					}
					if err == nil && c != nil {
						err = c.Validate()
					}
					mains[i], children[i], errs[i] = m, c, err
				}
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		out.b[tab.Name] = schema.Concat(mains)
		if children[0] != nil {
			cb := schema.Concat(children)
			out.b[cb.Table.Name] = cb
		}
	}
	for k, b := range out.b {
		out.rows[k] = b.Rows
	}
	return out
}

func col(b *schema.Batch, name string) *schema.Vector {
	i := b.Table.Column(name)
	if i < 0 {
		panic("no column " + name) // a typo in a test
	}
	return &b.Cols[i]
}
