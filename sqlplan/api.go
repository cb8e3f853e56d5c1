package sqlplan

import (
	"fmt"

	"gostachio/plan"
)

// DefaultWorkers is the number of workers (nodes x devices) a plan is
// sized for when Options.Workers is 0.
const DefaultWorkers = 8

// Options tune planning.
type Options struct {
	// Workers is the number of workers (nodes x devices) the plan is
	// expected to run on: it weighs broadcasting a join's build side
	// against shuffling both sides. 0: DefaultWorkers. Every node of a
	// cluster must plan with the same value (plans are deterministic).
	Workers int
}

// Error is a planning error located in the SQL text.
type Error struct {
	// Pos is the byte offset in the text the error is about (0-based), -1
	// where it has no single place.
	Pos int
	// Line and Col are Pos as 1-based line and column (0 when Pos is -1).
	Line, Col int
	Msg       string
}

func (e *Error) Error() string {
	if e.Pos < 0 {
		return "sql: " + e.Msg
	}
	return fmt.Sprintf("sql:%d:%d: %s", e.Line, e.Col, e.Msg)
}

// Query is a named SQL query.
type Query struct {
	Name, SQL string
}

// Plan plans one SELECT statement, text, named name, over tables (each
// with its Schema: types and statistics; a table without one is refused
// when the query reads it). The plan's result pipeline outputs the
// statement's select list under its SQL names (alias, or column name;
// a repeated name gets a suffix "_2", "_3", ... so batch names stay
// unique). Deterministic: the same text, tables and options give the same
// plan.
func Plan(name, text string, tables []plan.TableStats, opts Options) (*plan.Plan, error) {
	return planSQL(name, text, tables, opts)
}

// Catalog is qs as a plan.Catalog: Build plans the named query's SQL over
// the tables it is given (the scale factor is not needed: estimates come
// from the tables' statistics). Names must be unique.
func Catalog(qs []Query, opts Options) plan.Catalog {
	names := make([]string, len(qs))
	byName := make(map[string]string, len(qs))
	for i, q := range qs {
		names[i] = q.Name
		byName[q.Name] = q.SQL
	}
	return plan.Catalog{
		Names: names,
		Build: func(name string, _ float64, tables []plan.TableStats) (*plan.Plan, error) {
			text, ok := byName[name]
			if !ok {
				return nil, fmt.Errorf("sqlplan: no query %q", name)
			}
			return Plan(name, text, tables, opts)
		},
		ScaleFactor: func([]plan.TableStats) (float64, error) { return 1, nil },
	}
}
