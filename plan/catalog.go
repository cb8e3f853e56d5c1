package plan

import (
	"fmt"
	"slices"
	"strings"
)

// Catalog is a named family of plans (a benchmark's queries) that callers
// build over the tables of their own data: commands and backends that take
// query names are handed one instead of knowing the benchmark.
type Catalog struct {
	// Names lists the plans the catalog builds, in order.
	Names []string
	// Build builds plan name over tables at scale factor sf (which scales
	// its estimates only). An unknown name is an error.
	Build func(name string, sf float64, tables []TableStats) (*Plan, error)
	// ScaleFactor infers the scale factor of tables whose source does not
	// state it (from their row counts).
	ScaleFactor func(tables []TableStats) (float64, error)
}

// Has reports whether the catalog builds a plan named name.
func (c Catalog) Has(name string) bool { return slices.Contains(c.Names, name) }

// Known lists the catalog's names for messages: all of them, or the first
// and the last where there are more than four ("q1..q22").
func (c Catalog) Known() string {
	if len(c.Names) > 4 {
		return c.Names[0] + ".." + c.Names[len(c.Names)-1]
	}
	return strings.Join(c.Names, ", ")
}

// Plan builds plan name over tables at scale factor sf, or, where sf is
// not positive, at the scale factor the catalog infers from the tables.
// An unknown name is an error naming the known ones.
func (c Catalog) Plan(name string, sf float64, tables []TableStats) (*Plan, error) {
	if c.Build == nil {
		return nil, fmt.Errorf("plan: no catalog to build %q from", name)
	}
	if !c.Has(name) {
		return nil, fmt.Errorf("plan: no plan %q (known: %s)", name, c.Known())
	}
	if !(sf > 0) {
		if c.ScaleFactor == nil {
			return nil, fmt.Errorf("plan: %s: no scale factor", name)
		}
		var err error
		if sf, err = c.ScaleFactor(tables); err != nil {
			return nil, fmt.Errorf("plan: %s: %w", name, err)
		}
	}
	return c.Build(name, sf, tables)
}

// MergeCatalogs is one catalog building the plans of all of cats (e.g.
// TPC-H's queries and a user's SQL queries): its names are theirs in
// order, each built by the catalog that has it, and its scale factor is
// the first that one of cats infers (in order), or the first one's error.
// A name in two of them is an error.
func MergeCatalogs(cats ...Catalog) (Catalog, error) {
	owner := map[string]int{}
	var names []string
	for i, c := range cats {
		for _, n := range c.Names {
			if _, dup := owner[n]; dup {
				return Catalog{}, fmt.Errorf("plan: two catalogs build a plan named %q", n)
			}
			owner[n] = i
			names = append(names, n)
		}
	}
	return Catalog{
		Names: names,
		Build: func(name string, sf float64, tables []TableStats) (*Plan, error) {
			i, ok := owner[name]
			if !ok || cats[i].Build == nil {
				return nil, fmt.Errorf("plan: no plan %q", name)
			}
			return cats[i].Build(name, sf, tables)
		},
		ScaleFactor: func(tables []TableStats) (float64, error) {
			var first error
			for _, c := range cats {
				if c.ScaleFactor == nil {
					continue
				}
				sf, err := c.ScaleFactor(tables)
				if err == nil {
					return sf, nil
				}
				if first == nil {
					first = err
				}
			}
			if first == nil {
				first = fmt.Errorf("plan: no catalog infers a scale factor")
			}
			return 0, first
		},
	}, nil
}
