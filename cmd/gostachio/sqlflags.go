package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"gostachio/internal/sqlquery"
	"gostachio/plan"
	"gostachio/sqlplan"
	"gostachio/tpch/queries"
)

// sqlFlags are the flags that give a command one SQL query instead of a
// TPC-H query name.
type sqlFlags struct {
	text, file, name string
	// plans picks how TPC-H query names are planned (tpchCatalog).
	plans string
}

func addSQLFlags(f *pflag.FlagSet) *sqlFlags {
	s := &sqlFlags{}
	f.StringVar(&s.text, "sql", "", "run this SQL query (one SELECT statement; see docs/sql.md) instead of --query")
	f.StringVar(&s.file, "sql-file", "", "run the SQL query in this file instead of --query")
	f.StringVar(&s.name, "name", sqlquery.DefaultName, "with --sql or --sql-file: the query's name in results and traces")
	return s
}

// addPlansFlag adds --plans, which picks how a command plans TPC-H query
// names, to a command that runs them.
func (s *sqlFlags) addPlansFlag(f *pflag.FlagSet) {
	f.StringVar(&s.plans, "plans", "hand-built", "how TPC-H queries (--query) are planned: hand-built (tpch/queries), or sql (by the SQL planner, from their texts in tpch/queries/sql)")
}

// tpchCatalog is the catalog of TPC-H query names --plans asks for, SQL
// plans sized for workers (0: the planner's default).
func (s *sqlFlags) tpchCatalog(workers int) (plan.Catalog, error) {
	switch s.plans {
	case "", "hand-built":
		return queries.Catalog(), nil
	case "sql":
		return queries.SQLCatalog(sqlplan.Options{Workers: workers}), nil
	}
	return plan.Catalog{}, fmt.Errorf("--plans %q: want hand-built or sql", s.plans)
}

// given reports whether the command was given an SQL query (an empty
// one too: query refuses it).
func (s *sqlFlags) given(c *cobra.Command) bool {
	return c.Flags().Changed("sql") || c.Flags().Changed("sql-file")
}

// query reads the SQL query; it refuses one given with --query (queryFlag,
// the command's flag naming a catalog query) changed too.
func (s *sqlFlags) query(c *cobra.Command, queryFlag string) (sqlplan.Query, error) {
	if c.Flags().Changed(queryFlag) {
		return sqlplan.Query{}, fmt.Errorf("give --%s or an SQL query (--sql, --sql-file), not both", queryFlag)
	}
	return sqlquery.Read(s.name, s.text, s.file)
}
