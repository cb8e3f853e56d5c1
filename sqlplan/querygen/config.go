package querygen

import (
	"fmt"
	"math"
	"strings"

	"gostachio/plan"
)

// FK is a foreign key: every row of Child matches exactly one row of
// Parent on ChildCols = ParentCols (pairwise). Joins along it never
// multiply the child's rows, which keeps generated results small.
type FK struct {
	Child      string
	ChildCols  []string
	Parent     string
	ParentCols []string
}

// Config is what a Generator draws queries from.
type Config struct {
	// Tables are the tables queries may read, each with its Schema (types
	// and statistics: Range bounds arithmetic and division, Distinct sizes
	// groups). A table without a Schema is an error.
	Tables []plan.TableStats
	// FKs are the foreign keys joins follow; every name must exist.
	FKs []FK
	// Samples maps "table.column" to real values of that column, as text
	// (integers plain, decimals with their scale's digits, dates
	// YYYY-MM-DD, strings verbatim): the literal pools of predicates. A
	// text column without samples is never filtered on; values holding a
	// backslash, a NUL or a non-ASCII byte are dropped (the two dialects
	// read them differently, and substring counts bytes in one and
	// characters in the other).
	Samples map[string][]string
}

// TPCHForeignKeys are TPC-H's foreign keys (specification clause 1.4.2).
func TPCHForeignKeys() []FK {
	fk := func(child, cc, parent, pc string) FK {
		return FK{Child: child, ChildCols: strings.Split(cc, ","), Parent: parent, ParentCols: strings.Split(pc, ",")}
	}
	return []FK{
		fk("lineitem", "l_orderkey", "orders", "o_orderkey"),
		fk("lineitem", "l_partkey,l_suppkey", "partsupp", "ps_partkey,ps_suppkey"),
		fk("lineitem", "l_partkey", "part", "p_partkey"),
		fk("lineitem", "l_suppkey", "supplier", "s_suppkey"),
		fk("orders", "o_custkey", "customer", "c_custkey"),
		fk("partsupp", "ps_partkey", "part", "p_partkey"),
		fk("partsupp", "ps_suppkey", "supplier", "s_suppkey"),
		fk("customer", "c_nationkey", "nation", "n_nationkey"),
		fk("supplier", "s_nationkey", "nation", "n_nationkey"),
		fk("nation", "n_regionkey", "region", "r_regionkey"),
	}
}

// kind is a value's type as the generator reasons about it.
type kind uint8

const (
	kInt kind = iota + 1
	kDec
	kFloat
	kDate
	kStr
)

type table struct {
	name string
	cols []*column
	rows int64
	// up are the foreign keys from this table; down those into it.
	up, down []*FK
}

type column struct {
	t        *table
	name     string
	k        kind
	scale    int
	distinct int64
	// lo, hi bound the column's values (decimals unscaled, dates in days)
	// when ranged.
	lo, hi  float64
	ranged  bool
	samples []string
	// key marks columns of a foreign key: joined and compared, never
	// computed with.
	key bool
}

// Generator draws random queries from a Config. It is immutable once
// built, so one Generator may serve several goroutines.
type Generator struct {
	tables []*table
	byName map[string]*table
	fks    []*FK
}

// New checks cfg and builds a Generator.
func New(cfg Config) (*Generator, error) {
	g := &Generator{byName: map[string]*table{}}
	for i := range cfg.Tables {
		ts := &cfg.Tables[i]
		if len(ts.Schema) != len(ts.Columns) {
			return nil, fmt.Errorf("querygen: table %s has %d column statistics for %d columns", ts.Name, len(ts.Schema), len(ts.Columns))
		}
		if _, dup := g.byName[ts.Name]; dup {
			return nil, fmt.Errorf("querygen: table %s given twice", ts.Name)
		}
		t := &table{name: ts.Name, rows: ts.Rows()}
		for ci, name := range ts.Columns {
			cs := ts.Schema[ci]
			c := &column{t: t, name: name, scale: cs.Scale, distinct: cs.Distinct}
			switch cs.Type {
			case plan.TypeInt64, plan.TypeInt32:
				c.k = kInt
			case plan.TypeDecimal:
				c.k = kDec
			case plan.TypeDate:
				c.k = kDate
			case plan.TypeString:
				c.k = kStr
			default:
				// Floats and unknown types are left out: equality on them
				// is not portable and their range is unknown.
				continue
			}
			if cs.Range.Valid && cs.Type.IntegerCoded() {
				c.lo, c.hi, c.ranged = float64(cs.Range.Min), float64(cs.Range.Max), true
				if c.k == kDec {
					p := math.Pow10(c.scale)
					c.lo, c.hi = c.lo/p, c.hi/p
				}
			}
			for _, s := range cfg.Samples[ts.Name+"."+name] {
				if portable(s) {
					c.samples = append(c.samples, s)
				}
			}
			t.cols = append(t.cols, c)
		}
		g.tables = append(g.tables, t)
		g.byName[t.name] = t
	}
	if len(g.tables) == 0 {
		return nil, fmt.Errorf("querygen: no tables")
	}
	for i := range cfg.FKs {
		fk := cfg.FKs[i]
		child, parent := g.byName[fk.Child], g.byName[fk.Parent]
		if child == nil || parent == nil {
			return nil, fmt.Errorf("querygen: foreign key %s -> %s names a table not given", fk.Child, fk.Parent)
		}
		if len(fk.ChildCols) == 0 || len(fk.ChildCols) != len(fk.ParentCols) {
			return nil, fmt.Errorf("querygen: foreign key %s -> %s has %d and %d columns", fk.Child, fk.Parent, len(fk.ChildCols), len(fk.ParentCols))
		}
		for j := range fk.ChildCols {
			cc, pc := child.col(fk.ChildCols[j]), parent.col(fk.ParentCols[j])
			if cc == nil || pc == nil {
				return nil, fmt.Errorf("querygen: foreign key %s(%s) -> %s(%s) names a column not given", fk.Child, fk.ChildCols[j], fk.Parent, fk.ParentCols[j])
			}
			if cc.k != pc.k {
				return nil, fmt.Errorf("querygen: foreign key %s.%s -> %s.%s joins different types", fk.Child, cc.name, fk.Parent, pc.name)
			}
			cc.key, pc.key = true, true
		}
		p := &fk
		g.fks = append(g.fks, p)
		child.up = append(child.up, p)
		parent.down = append(parent.down, p)
	}
	return g, nil
}

func (t *table) col(name string) *column {
	for _, c := range t.cols {
		if c.name == name {
			return c
		}
	}
	return nil
}

// portable reports whether a sampled value reads the same in both
// dialects: ASCII without backslashes or NULs.
func portable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' || s[i] == 0 || s[i] >= 0x80 {
			return false
		}
	}
	return true
}
